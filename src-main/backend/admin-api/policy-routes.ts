import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  AssignBody,
  AssignmentFilter,
  AssignmentList,
  ComplianceFilter,
  ComplianceList,
  DeploymentDetail,
  EffectivePolicyList,
  POLICY_CATALOGUE,
  PolicyCatalogue,
  SafeIdParams,
  Unassigned,
} from '../../../src-shared/contract/index.ts';
import type { PolicyService } from '../policies/service.ts';
import type { Services } from '../services.ts';

/** Policies (admin API): the catalogue, values set on fleets or devices, each device's effective policies and compliance. */
export const policyRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'fleets'> & { policies: PolicyService }> = async (
  app,
  { fleets, policies },
) => {
  app.get('/policies', { schema: { response: { 200: PolicyCatalogue } } }, async () => ({ items: [...POLICY_CATALOGUE] }));

  app.get(
    '/policy-assignments',
    { schema: { querystring: AssignmentFilter, response: { 200: AssignmentList } } },
    async (request) => ({
      items: policies.list(request.query),
    }),
  );

  app.post(
    '/policy-assignments',
    { schema: { body: AssignBody, response: { 201: DeploymentDetail } } },
    async (request, reply) => {
      const body = request.body;
      const fleetId = body.fleet !== undefined ? fleets.resolve(1, body.fleet).id : body.fleet_id;
      const created = policies.assign({ policy: body.policy, value: body.value, fleetId, agentId: body.agent_id });
      return reply.code(201).send(policies.detail(created.id));
    },
  );

  app.get('/policy-assignments/:id', { schema: { params: SafeIdParams, response: { 200: DeploymentDetail } } }, async (request) =>
    policies.detail(request.params.id),
  );

  app.delete('/policy-assignments/:id', { schema: { params: SafeIdParams, response: { 200: Unassigned } } }, async (request) =>
    policies.unassign(request.params.id),
  );

  app.get(
    '/agents/:id/policies',
    { schema: { params: SafeIdParams, response: { 200: EffectivePolicyList } } },
    async (request) => ({
      items: policies.effectiveOf(request.params.id),
    }),
  );

  app.get('/compliance', { schema: { querystring: ComplianceFilter, response: { 200: ComplianceList } } }, async (request) => ({
    items: policies.compliance(request.query.fleet_id ?? null),
  }));
};
