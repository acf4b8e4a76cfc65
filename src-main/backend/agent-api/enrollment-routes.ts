import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { EnrollmentService } from '../agents/enrollment.ts';
import { INVENTORY_BASE64_MAX, INVENTORY_BODY_LIMIT } from './report-routes.ts';
import { IdParams, TokenQuery } from './schemas.ts';

export interface EnrollmentRoutesOptions {
  enrollment: Pick<EnrollmentService, 'enroll' | 'record' | 'computer' | 'entity' | 'fleet'>;
}

// Strings only (numbers are coerced); an object or array where a string belongs is a 400.
const Text = (maxLength: number) => Type.Optional(Type.Union([Type.String({ maxLength }), Type.Null()]));
const AgentBody = Type.Object({
  input: Type.Object({
    _email: Text(254),
    _invitation_token: Text(256),
    _serial: Text(255),
    _uuid: Text(255),
    csr: Text(32768),
    firstname: Text(255),
    lastname: Text(255),
    version: Text(64),
    type: Text(32),
    // Flyve dialect extras (the reference agents send them; stored).
    phone: Text(100),
    has_system_permission: Text(8),
    inventory: Text(INVENTORY_BASE64_MAX),
    notification_type: Text(32),
    notification_token: Text(4096),
  }),
});

/** The spec's enrollment and the records an enrolled agent reads, mounted under {base_url}. */
export const agentEnrollmentRoutes: FastifyPluginAsyncTypebox<EnrollmentRoutesOptions> = async (app, { enrollment }) => {
  // The create input may carry the device's inventory: a bigger body than the API's default.
  app.post(
    '/PluginMdmAgent',
    { config: { whileHeld: true }, bodyLimit: INVENTORY_BODY_LIMIT, schema: { querystring: TokenQuery, body: AgentBody } },
    async (request, reply) => {
      const result = await enrollment.enroll(request.session, request.body.input, request.ip ?? null);
      return reply.code(201).send(result);
    },
  );

  app.get(
    '/PluginMdmAgent/:id',
    { config: { whileHeld: true }, schema: { params: IdParams, querystring: TokenQuery } },
    async (request) => enrollment.record(request.session, request.params.id),
  );

  app.get(
    '/Computer/:id',
    { config: { whileHeld: true }, schema: { params: IdParams, querystring: TokenQuery } },
    async (request) => enrollment.computer(request.session, request.params.id),
  );

  app.get(
    '/Entity/:id',
    { config: { whileHeld: true }, schema: { params: IdParams, querystring: TokenQuery } },
    async (request) => enrollment.entity(request.session, request.params.id),
  );

  app.get(
    '/PluginMdmFleet/:id',
    { config: { whileHeld: true }, schema: { params: IdParams, querystring: TokenQuery } },
    async (request) => enrollment.fleet(request.session, request.params.id),
  );
};
