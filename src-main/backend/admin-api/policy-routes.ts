import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { POLICY_CATALOGUE } from '../../../src-shared/contract/index.ts';
import { adminRoute } from '../http/route-table.ts';
import type { PolicyService } from '../policies/service.ts';
import type { Services } from '../services.ts';

/** Policies (admin API): the catalogue, any policy (values and the deployment kinds) set on fleets or devices, each device's effective policies and compliance. */
export const policyRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'fleets'> & { policies: PolicyService }> = async (
  app,
  { fleets, policies },
) => {
  adminRoute(app, 'policies.catalogue', async () => ({ items: [...POLICY_CATALOGUE] }));

  adminRoute(app, 'policies.list', async (request) => ({ items: await policies.list(request.query) }));

  adminRoute(app, 'policies.set', async (request, reply) => {
    const body = request.body;
    const fleetId = body.fleet !== undefined ? (await fleets.resolve(1, body.fleet)).id : body.fleet_id;
    const created = await policies.assign({
      policy: body.policy,
      value: body.value,
      fleetId,
      agentId: body.agent_id,
      destination: body.destination,
      removeOnDelete: body.remove_on_delete,
    });
    return reply.code(201).send(await policies.detail(created.id));
  });

  adminRoute(app, 'policies.get', async (request) => policies.detail(request.params.id));

  adminRoute(app, 'policies.unset', async (request) => policies.unassign(request.params.id));

  adminRoute(app, 'policies.ofAgent', async (request) => ({ items: await policies.effectiveOf(request.params.id) }));

  adminRoute(app, 'policies.compliance', async (request) => {
    const { fleet_id, state } = request.query;
    const items = await policies.compliance(fleet_id ?? null);
    return { items: state === undefined ? items : items.filter((device) => device.state === state) };
  });
};
