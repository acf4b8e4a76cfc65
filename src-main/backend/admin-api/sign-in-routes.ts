import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { AccountService, Actor } from '../accounts/accounts.ts';
import { qrDataUrl } from '../deeplink/qr.ts';
import { ApiError } from '../errors.ts';
import { adminRoute } from '../http/route-table.ts';
import type { SignInSettingsStore } from '../settings/sign-in-settings.ts';
import type { AdminAuth } from './auth.ts';

/**
 * One's own sign-in: two-factor (enrol with a QR code, confirm, turn off), password, console
 * sessions (listed, ended one by one or all others); and the owner's sign-in settings.
 */
export const signInRoutes: FastifyPluginAsyncTypebox<{
  accounts: AccountService;
  signIn: SignInSettingsStore;
  auth: AdminAuth;
  actorOf: (request: FastifyRequest) => Actor;
}> = async (app, { accounts, signIn, auth, actorOf }) => {
  const twoFactorOf = async (actor: Actor) => {
    const account = (await accounts.byId(actor.account.id)) ?? actor.account;
    return { ...(await accounts.twoFactor.status(account)), required: signIn.get().require_two_factor };
  };

  adminRoute(app, 'twoFactor.status', async (request) => twoFactorOf(actorOf(request)));

  adminRoute(app, 'twoFactor.setup', async (request) => {
    const setup = await accounts.twoFactor.begin(actorOf(request).account);
    return { ...setup, qr_data_url: await qrDataUrl(setup.otpauth_url, 280) };
  });

  adminRoute(app, 'twoFactor.confirm', async (request) =>
    accounts.twoFactor.confirm(actorOf(request).account, request.body.code),
  );

  adminRoute(app, 'twoFactor.disable', async (request) => {
    const actor = actorOf(request);
    await accounts.twoFactor.disable(actor.account, request.body.code, signIn.get().require_two_factor);
    return twoFactorOf(actor);
  });

  adminRoute(app, 'password.change', async (request) => {
    const actor = actorOf(request);
    const account = await accounts.changePassword(actor.account.id, request.body.current_password, request.body.new_password);
    return { changed: true as const, ended_sessions: await auth.passwordChanged(account, request) };
  });

  adminRoute(app, 'sessions.list', async (request) => ({ items: await auth.sessionsOf(actorOf(request), request) }));

  adminRoute(app, 'sessions.end', async (request) => {
    if (!(await auth.endSession(actorOf(request), request.params.id))) {
      throw new ApiError(404, 'ERROR_NOT_FOUND', `You have no session ${request.params.id} (ended already, or another admin’s)`);
    }
    return { ended: 1 };
  });

  adminRoute(app, 'sessions.endOthers', async (request) => ({ ended: await auth.endOtherSessions(actorOf(request), request) }));

  adminRoute(app, 'signInSettings.get', async () => signIn.get());

  adminRoute(app, 'signInSettings.update', async (request) => {
    const patch = request.body;
    const next = { ...signIn.get(), ...patch };
    if (next.session_idle_minutes > next.session_max_age_hours * 60) {
      throw new ApiError(400, 'ERROR_BAD_REQUEST', 'The idle time cannot be longer than the maximum age of a session');
    }
    return signIn.update(patch);
  });
};
