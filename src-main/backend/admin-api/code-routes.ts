import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  AgentSummary,
  ApproveManyBody,
  ApproveManyResult,
  CodeCreate,
  CodeDetail,
  CodeList,
  EnrollmentCode,
  IdParams,
} from '../../../src-shared/contract/index.ts';
import type { Services } from '../services.ts';
import { qrRoutes } from './qr-routes.ts';

/** Enrollment codes, and the approval of the devices that used a code needing it. */
export const codeRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'codes' | 'approval' | 'agents'>> = async (
  app,
  { codes, approval, agents },
) => {
  app.get('/codes', { schema: { response: { 200: CodeList } } }, async () => ({ items: codes.list() }));

  app.post('/codes', { schema: { body: CodeCreate, response: { 201: EnrollmentCode } } }, async (request, reply) =>
    reply.code(201).send(codes.view(codes.create(request.body))),
  );

  app.get('/codes/:id', { schema: { params: IdParams, response: { 200: CodeDetail } } }, async (request) => {
    const { id } = request.params;
    return { ...codes.view(codes.get(id)), log: codes.logOf(id) };
  });

  qrRoutes(app, '/codes', 'enrollment-code', (id) => codes.deeplinkOf(codes.get(id)).url);

  const one = { params: IdParams, response: { 200: EnrollmentCode } };
  app.post('/codes/:id/revoke', { schema: one }, async (request) => codes.view(codes.revoke(request.params.id)));
  app.post('/codes/:id/rotate', { schema: one }, async (request) => codes.view(codes.rotate(request.params.id)));

  const decided = { params: IdParams, response: { 200: AgentSummary } };
  app.post('/agents/:id/approve', { schema: decided }, async (request) => agents.summary(approval.approve(request.params.id).id));
  app.post('/agents/:id/reject', { schema: decided }, async (request) => agents.summary(approval.reject(request.params.id).id));
  // Bulk approve from the pending-approval queue: each id approved or listed with why not.
  app.post('/agents/approve', { schema: { body: ApproveManyBody, response: { 200: ApproveManyResult } } }, async (request) =>
    approval.approveMany(request.body.ids),
  );
};
