import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import type { PolicyService } from '../policies/service.ts';
import type { Services } from '../services.ts';

/** Deployments (admin API): publish a file or package to a fleet or a device, follow and remove it. */
export const deploymentRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'fleets'> & { deployments: PolicyService }> = async (
  app,
  { fleets, deployments },
) => {
  adminRoute(app, 'deployments.list', async (request) => ({
    items: deployments.list({ ...request.query, kind: 'deployment' }),
  }));

  adminRoute(app, 'deployments.create', async (request, reply) => {
    const body = request.body;
    const fleetId = body.fleet !== undefined ? fleets.resolve(1, body.fleet).id : body.fleet_id;
    const created = deployments.deploy({
      kind: body.kind,
      itemId: body.item_id,
      fleetId,
      agentId: body.agent_id,
      destination: body.destination,
      removeOnDelete: body.remove_on_delete,
    });
    return reply.code(201).send(deployments.detail(created.id));
  });

  adminRoute(app, 'deployments.get', async (request) => deployments.detail(request.params.id));

  adminRoute(app, 'deployments.remove', async (request) => deployments.undeploy(request.params.id));

  adminRoute(app, 'agents.tasks', async (request) => ({
    items: deployments.tasksOfAgent(request.params.id),
  }));
};
