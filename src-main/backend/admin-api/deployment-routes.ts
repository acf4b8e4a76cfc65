import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import type { PolicyService } from '../policies/service.ts';
import type { Services } from '../services.ts';

/**
 * Deployments (admin API): the deployment kinds of the policy assignments, under the paths the
 * console and CLI have always used. Each route is an alias onto the same code as
 * /api/policy-assignments (POST { kind: 'package', item_id } is { policy: 'deployApp', value: item_id }).
 */
export const deploymentRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'fleets'> & { deployments: PolicyService }> = async (
  app,
  { fleets, deployments },
) => {
  adminRoute(app, 'deployments.list', async (request) => ({
    items: await deployments.list({ ...request.query, kind: 'deployment' }),
  }));

  adminRoute(app, 'deployments.create', async (request, reply) => {
    const body = request.body;
    const fleetId = body.fleet !== undefined ? (await fleets.resolve(1, body.fleet)).id : body.fleet_id;
    const created = await deployments.assign({
      policy: body.kind === 'package' ? 'deployApp' : 'deployFile',
      value: body.item_id,
      fleetId,
      agentId: body.agent_id,
      // A package's destination was ignored here before the alias: it still is (POST /api/policy-assignments refuses it).
      destination: body.kind === 'file' ? body.destination : undefined,
      removeOnDelete: body.remove_on_delete,
    });
    return reply.code(201).send(await deployments.detail(created.id));
  });

  adminRoute(app, 'deployments.get', async (request) => deployments.detail(request.params.id));

  adminRoute(app, 'deployments.remove', async (request) => deployments.unassign(request.params.id));

  adminRoute(app, 'agents.tasks', async (request) => ({
    items: await deployments.tasksOfAgent(request.params.id),
  }));
};
