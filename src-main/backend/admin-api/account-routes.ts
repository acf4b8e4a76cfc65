import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { ApiToken, ApiTokenCreate, ApiTokenCreated, ApiTokenList, IdParams, Me } from '../../../src-shared/contract/index.ts';
import { accountView, roleOf, type AccountService, type Actor } from '../accounts/accounts.ts';

/** Who is calling and their API tokens: /me, /tokens. */
export const accountRoutes: FastifyPluginAsyncTypebox<{
  accounts: AccountService;
  actorOf: (request: FastifyRequest) => Actor;
}> = async (app, { accounts, actorOf }) => {
  app.get('/me', { schema: { response: { 200: Me } } }, async (request) => {
    const actor = actorOf(request);
    const { token } = actor;
    return {
      account: accountView(actor.account),
      via: token ? ('token' as const) : ('session' as const),
      token: token ? { id: token.id, name: token.name, role: token.role } : null,
      role: roleOf(actor),
    };
  });

  app.get('/tokens', { schema: { response: { 200: ApiTokenList } } }, async (request) => ({
    items: accounts.tokens(actorOf(request)),
  }));

  app.post('/tokens', { schema: { body: ApiTokenCreate, response: { 201: ApiTokenCreated } } }, async (request, reply) => {
    const { token, row } = accounts.createToken(actorOf(request), request.body);
    return reply.code(201).send({ ...row, token });
  });

  app.post('/tokens/:id/revoke', { schema: { params: IdParams, response: { 200: ApiToken } } }, async (request) =>
    accounts.revokeToken(actorOf(request), request.params.id),
  );
};
