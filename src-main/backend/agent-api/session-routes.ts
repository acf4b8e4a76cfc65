import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { loginFailed } from '../errors.ts';
import type { SessionService } from '../sessions/sessions.ts';
import { TokenQuery } from './schemas.ts';
import { userTokenOf } from './tokens.ts';

export interface SessionRoutesOptions {
  sessions: Pick<SessionService, 'open' | 'close' | 'fullSession' | 'changeProfile'>;
}

const ProfileId = Type.Integer({ minimum: 1, maximum: 2 ** 31 });

/** The spec's session endpoints, mounted under {base_url}. */
export const agentSessionRoutes: FastifyPluginAsyncTypebox<SessionRoutesOptions> = async (app, { sessions }) => {
  app.get('/initSession', { config: { session: 'none' }, schema: { querystring: TokenQuery } }, async (request) => {
    const token = userTokenOf(request);
    if (!token) throw loginFailed('parameter user_token is missing or empty');
    return { session_token: (await sessions.open(token, request.ip ?? null)).session_token };
  });

  app.get('/killSession', { config: { whileHeld: true }, schema: { querystring: TokenQuery } }, async (request) => {
    await sessions.close(request.session.token);
    return true;
  });

  app.get('/getFullSession', { config: { whileHeld: true }, schema: { querystring: TokenQuery } }, async (request) =>
    sessions.fullSession(request.session),
  );

  // profiles_id in the query (spec) or, as GLPI clients do, in a JSON body.
  app.post(
    '/changeActiveProfile',
    {
      config: { whileHeld: true },
      schema: {
        querystring: Type.Object({
          session_token: Type.Optional(Type.String({ maxLength: 256 })),
          profiles_id: Type.Optional(ProfileId),
        }),
        body: Type.Optional(Type.Union([Type.Object({ profiles_id: Type.Optional(ProfileId) }), Type.Null()])),
      },
    },
    async (request, reply) => {
      const profileId = request.query.profiles_id ?? request.body?.profiles_id;
      if (profileId === undefined) return reply.code(400).send(['ERROR_BAD_REQUEST', 'Bad Request']);
      await sessions.changeProfile(request.session, profileId);
      return { message: 'Profile changed', profiles_id: profileId };
    },
  );
};
