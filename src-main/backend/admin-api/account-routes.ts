import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { accountView, fleetScopeOf, roleOf, type AccountService, type Actor } from '../accounts/accounts.ts';
import type { AccountManagement } from '../accounts/management.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { adminRoute } from '../http/route-table.ts';
import { ROLE_PERMISSIONS } from '../../../src-shared/contract/permissions.ts';

/** Who is calling and their API tokens: /me, /tokens. */
export const accountRoutes: FastifyPluginAsyncTypebox<{
  accounts: AccountService;
  fleets: Pick<FleetService, 'byId'>;
  actorOf: (request: FastifyRequest) => Actor;
}> = async (app, { accounts, fleets, actorOf }) => {
  adminRoute(app, 'me', async (request) => {
    const actor = actorOf(request);
    const { token } = actor;
    const fleetNames = async (ids: number[] | null) =>
      ids === null ? null : Promise.all(ids.map(async (id) => ({ id, name: (await fleets.byId(id))?.name ?? `#${id}` })));
    return {
      account: accountView(actor.account),
      via: token ? ('token' as const) : ('session' as const),
      token: token ? { id: token.id, name: token.name, role: token.role } : null,
      role: roleOf(actor),
      fleets: await fleetNames(fleetScopeOf(actor)),
      permissions: [...ROLE_PERMISSIONS[roleOf(actor)]],
    };
  });

  adminRoute(app, 'accounts.setScope', async (request) =>
    accountView(await accounts.setAccountScope(actorOf(request), request.params.id, request.body.fleet_ids)),
  );

  adminRoute(app, 'tokens.list', async (request) => ({ items: await accounts.tokens(actorOf(request)) }));

  adminRoute(app, 'tokens.create', async (request, reply) => {
    const { token, row } = await accounts.createToken(actorOf(request), request.body);
    return reply.code(201).send({ ...row, token });
  });

  adminRoute(app, 'tokens.revoke', async (request) => accounts.revokeToken(actorOf(request), request.params.id));
};

/** Admins managing admins: /accounts (list, invite, a new link, role, disable, enable, delete). */
export const accountManagementRoutes: FastifyPluginAsyncTypebox<{
  admins: AccountManagement;
  actorOf: (request: FastifyRequest) => Actor;
}> = async (app, { admins, actorOf }) => {
  adminRoute(app, 'accounts.list', async () => ({ items: await admins.list() }));
  adminRoute(app, 'accounts.invite', async (request, reply) =>
    reply.code(201).send(await admins.invite(actorOf(request), request.body)),
  );
  adminRoute(app, 'accounts.reinvite', async (request, reply) =>
    reply.code(201).send(await admins.reinvite(actorOf(request), request.params.id, request.body ?? {})),
  );
  adminRoute(app, 'accounts.update', async (request) => admins.setRole(actorOf(request), request.params.id, request.body.role));
  adminRoute(app, 'accounts.disable', async (request) => admins.disable(actorOf(request), request.params.id));
  adminRoute(app, 'accounts.enable', async (request) => admins.enable(actorOf(request), request.params.id));
  adminRoute(app, 'accounts.resetTwoFactor', async (request) => admins.resetTwoFactor(actorOf(request), request.params.id));
  adminRoute(app, 'accounts.remove', async (request, reply) => {
    await admins.remove(actorOf(request), request.params.id);
    return reply.code(204).send();
  });
};
