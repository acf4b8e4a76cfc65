import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { accountView, fleetScopeOf, roleOf, type AccountService, type Actor } from '../accounts/accounts.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { adminRoute } from '../http/route-table.ts';

/** Who is calling and their API tokens: /me, /tokens. */
export const accountRoutes: FastifyPluginAsyncTypebox<{
  accounts: AccountService;
  fleets: Pick<FleetService, 'byId'>;
  actorOf: (request: FastifyRequest) => Actor;
}> = async (app, { accounts, fleets, actorOf }) => {
  adminRoute(app, 'me', async (request) => {
    const actor = actorOf(request);
    const { token } = actor;
    return {
      account: accountView(actor.account),
      via: token ? ('token' as const) : ('session' as const),
      token: token ? { id: token.id, name: token.name, role: token.role } : null,
      role: roleOf(actor),
      fleets: fleetScopeOf(actor)?.map((id) => ({ id, name: fleets.byId(id)?.name ?? `#${id}` })) ?? null,
    };
  });

  adminRoute(app, 'accounts.setScope', async (request) =>
    accountView(accounts.setAccountScope(actorOf(request), request.params.id, request.body.fleet_ids)),
  );

  adminRoute(app, 'tokens.list', async (request) => ({ items: accounts.tokens(actorOf(request)) }));

  adminRoute(app, 'tokens.create', async (request, reply) => {
    const { token, row } = accounts.createToken(actorOf(request), request.body);
    return reply.code(201).send({ ...row, token });
  });

  adminRoute(app, 'tokens.revoke', async (request) => accounts.revokeToken(actorOf(request), request.params.id));
};
