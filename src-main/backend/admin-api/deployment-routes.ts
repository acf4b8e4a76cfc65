import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  DeployBody,
  DeploymentDetail,
  DeploymentFilter,
  DeploymentList,
  DeviceTaskList,
  SafeIdParams,
  Undeployed,
} from '../../../src-shared/contract/index.ts';
import type { PolicyService } from '../policies/service.ts';
import type { Services } from '../services.ts';

/** Deployments (admin API): publish a file or package to a fleet or a device, follow and remove it. */
export const deploymentRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'fleets'> & { deployments: PolicyService }> = async (
  app,
  { fleets, deployments },
) => {
  app.get('/deployments', { schema: { querystring: DeploymentFilter, response: { 200: DeploymentList } } }, async (request) => ({
    items: deployments.list({ ...request.query, kind: 'deployment' }),
  }));

  app.post('/deployments', { schema: { body: DeployBody, response: { 201: DeploymentDetail } } }, async (request, reply) => {
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

  app.get('/deployments/:id', { schema: { params: SafeIdParams, response: { 200: DeploymentDetail } } }, async (request) =>
    deployments.detail(request.params.id),
  );

  app.delete('/deployments/:id', { schema: { params: SafeIdParams, response: { 200: Undeployed } } }, async (request) =>
    deployments.undeploy(request.params.id),
  );

  app.get('/agents/:id/tasks', { schema: { params: SafeIdParams, response: { 200: DeviceTaskList } } }, async (request) => ({
    items: deployments.tasksOfAgent(request.params.id),
  }));
};
