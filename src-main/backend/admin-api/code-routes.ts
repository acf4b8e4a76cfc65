import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { CODE_LIFETIME_DAYS, CODE_MAX_USES, type CodeInput } from '../codes/codes.ts';
import type { Services } from '../services.ts';
import { qrRoutes } from './qr-routes.ts';

const Id = Type.Object({ id: Type.Integer({ minimum: 1 }) });
const CodeCreateSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    fleet: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
    domains: Type.Optional(Type.Array(Type.String({ maxLength: 253 }), { maxItems: 50 })),
    // Absent: unlimited uses / never expires. No null branch: type coercion would turn a 0 into null.
    max_uses: Type.Optional(Type.Integer({ minimum: 1, maximum: CODE_MAX_USES })),
    days: Type.Optional(Type.Integer({ minimum: CODE_LIFETIME_DAYS.min, maximum: CODE_LIFETIME_DAYS.max })),
    approval: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('manual')])),
  },
  { additionalProperties: false },
);
const Ids = Type.Object({ ids: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1, maxItems: 10000 }) }, { additionalProperties: false });

/** Enrollment codes, and the approval of the devices that used a code needing it. */
export const codeRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { codes, approval, agents } = services;

  app.get('/codes', async () => ({ items: codes.list() }));

  app.post('/codes', { schema: { body: CodeCreateSchema } }, async (request, reply) =>
    reply.code(201).send(codes.view(codes.create(request.body as CodeInput))),
  );

  app.get('/codes/:id', { schema: { params: Id } }, async (request) => {
    const { id } = request.params;
    return { ...codes.view(codes.get(id)), log: codes.logOf(id) };
  });

  qrRoutes(app, '/codes', 'enrollment-code', (id) => codes.deeplinkOf(codes.get(id)).url);

  app.post('/codes/:id/revoke', { schema: { params: Id } }, async (request) => codes.view(codes.revoke(request.params.id)));
  app.post('/codes/:id/rotate', { schema: { params: Id } }, async (request) => codes.view(codes.rotate(request.params.id)));

  app.post('/agents/:id/approve', { schema: { params: Id } }, async (request) => agents.summary(approval.approve(request.params.id).id));
  app.post('/agents/:id/reject', { schema: { params: Id } }, async (request) => agents.summary(approval.reject(request.params.id).id));
  // Bulk approve from the pending-approval queue: each id approved or listed with why not.
  app.post('/agents/approve', { schema: { body: Ids } }, async (request) => approval.approveMany(request.body.ids));
};
