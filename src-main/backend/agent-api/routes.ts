import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { EnrollmentService } from '../agents/enrollment.ts';
import type { DeploymentService } from '../deployments/deployments.ts';
import { loginFailed, sessionTokenMissing } from '../errors.ts';
import type { SessionService } from '../sessions/sessions.ts';
import type { SessionContext } from '../sessions/types.ts';
import { taskStatusRoutes } from './task-routes.ts';
import { sessionTokenOf, userTokenOf } from './tokens.ts';
import { INVENTORY_BODY_LIMIT, INVENTORY_BASE64_MAX } from './report-routes.ts';

export interface AgentApiOptions {
  sessions: SessionService;
  enrollment: EnrollmentService;
  deployments?: DeploymentService;
}

const TokenQuery = Type.Object({
  session_token: Type.Optional(Type.String({ maxLength: 256 })),
  user_token: Type.Optional(Type.String({ maxLength: 256 })),
});

const IdParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 }) });

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

/** The endpoints of the spec, mounted under {base_url}. */
export const agentApiRoutes: FastifyPluginAsync<AgentApiOptions> = async (app, { sessions, enrollment, deployments }) => {
  const authenticate = sessionAuthenticator(sessions);
  if (deployments) await app.register(taskStatusRoutes, { authenticate, deployments });

  app.get('/initSession', { schema: { querystring: TokenQuery } }, async (request) => {
    const token = userTokenOf(request);
    if (!token) throw loginFailed('parameter user_token is missing or empty');
    return { session_token: sessions.open(token, request.ip ?? null).session_token };
  });

  app.get('/killSession', { schema: { querystring: TokenQuery } }, async (request) => {
    const session = authenticate(request);
    sessions.close(session.token);
    return true;
  });

  app.get('/getFullSession', { schema: { querystring: TokenQuery } }, async (request) =>
    sessions.fullSession(authenticate(request)),
  );

  // profiles_id in the query (spec) or, as GLPI clients do, in a JSON body.
  app.post(
    '/changeActiveProfile',
    {
      schema: {
        querystring: Type.Object({
          session_token: Type.Optional(Type.String({ maxLength: 256 })),
          profiles_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 })),
        }),
        body: Type.Optional(Type.Union([Type.Object({ profiles_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 })) }), Type.Null()])),
      },
    },
    async (request, reply) => {
      const session = authenticate(request);
      const query = request.query as { profiles_id?: number };
      const body = request.body as { profiles_id?: number } | null | undefined;
      const profileId = query.profiles_id ?? body?.profiles_id;
      if (profileId === undefined) return reply.code(400).send(['ERROR_BAD_REQUEST', 'Bad Request']);
      sessions.changeProfile(session, profileId);
      return { message: 'Profile changed', profiles_id: profileId };
    },
  );

  // The create input may carry the device's inventory: a bigger body than the API's default.
  app.post('/PluginMdmAgent', { bodyLimit: INVENTORY_BODY_LIMIT, schema: { querystring: TokenQuery, body: AgentBody } }, async (request, reply) => {
    const session = authenticate(request);
    const { input } = request.body as { input: Record<string, string | null | undefined> };
    const result = enrollment.enroll(session, input, request.ip ?? null);
    return reply.code(201).send(result);
  });

  app.get('/PluginMdmAgent/:id', { schema: { params: IdParams, querystring: TokenQuery } }, async (request) =>
    enrollment.record(authenticate(request), (request.params as { id: number }).id),
  );

  app.get('/Computer/:id', { schema: { params: IdParams, querystring: TokenQuery } }, async (request) =>
    enrollment.computer(authenticate(request), (request.params as { id: number }).id),
  );

  app.get('/Entity/:id', { schema: { params: IdParams, querystring: TokenQuery } }, async (request) =>
    enrollment.entity(authenticate(request), (request.params as { id: number }).id),
  );

  app.get('/PluginMdmFleet/:id', { schema: { params: IdParams, querystring: TokenQuery } }, async (request) =>
    enrollment.fleet(authenticate(request), (request.params as { id: number }).id),
  );
};

export type Authenticate = (request: FastifyRequest) => SessionContext;

/** Resolves the request's session token, or throws the spec's token errors. */
export function sessionAuthenticator(sessions: SessionService): Authenticate {
  return (request) => {
    const token = sessionTokenOf(request);
    if (!token) throw sessionTokenMissing();
    return sessions.resolve(token);
  };
}
