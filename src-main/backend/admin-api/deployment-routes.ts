import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { DeploymentService } from '../deployments/deployments.ts';
import type { Services } from '../services.ts';

const Id = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) });
const DeployBody = Type.Object(
  {
    kind: Type.Union([Type.Literal('file'), Type.Literal('package')]),
    item_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    fleet_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
    /** A fleet by name, as the CLI gives it. */
    fleet: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    agent_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
    destination: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    remove_on_delete: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const ListQuery = Type.Object({
  fleet_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  agent_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  state: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('removed')])),
});

/** Deployments (admin API): publish a file or package to a fleet or a device, follow and remove it. */
export const deploymentRoutes: FastifyPluginAsyncTypebox<{ services: Services; deployments: DeploymentService }> = async (app, { services, deployments }) => {
  app.get('/deployments', { schema: { querystring: ListQuery } }, async (request) => ({
    items: deployments.list(request.query),
  }));

  app.post('/deployments', { schema: { body: DeployBody } }, async (request, reply) => {
    const body = request.body;
    const fleetId = body.fleet !== undefined ? services.fleets.resolve(1, body.fleet).id : body.fleet_id;
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

  app.get('/deployments/:id', { schema: { params: Id } }, async (request) => deployments.detail(request.params.id));

  app.delete('/deployments/:id', { schema: { params: Id } }, async (request) => deployments.undeploy(request.params.id));

  app.get('/agents/:id/tasks', { schema: { params: Id } }, async (request) => ({ items: deployments.tasksOfAgent(request.params.id) }));
};
