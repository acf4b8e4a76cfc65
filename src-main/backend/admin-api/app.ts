import { writeResponsesAsJson } from '../http/response-writer.ts';
import Fastify, { type FastifyInstance, type FastifyReply, type RouteOptions } from 'fastify';
import { lanAddresses } from '../config.ts';
import { isLoopback } from '../../../src-shared/contract/rules.ts';
import { adminFileRoutes } from '../files/routes.ts';
import type { FileStore } from '../files/store.ts';
import type { MqttBroker } from '../broker/broker.ts';
import type { Listener } from '../http/listener.ts';
import type { Services } from '../services.ts';
import type { ClusterNode, ServerInfo } from '../../../src-shared/contract/index.ts';
import { actsAs, adminRoute } from '../http/route-table.ts';
import { jsonBodyParser } from '../http/agent-errors.ts';
import { ApiError } from '../errors.ts';
import { refuseUnusableNumbers } from '../http/number-guard.ts';
import { AdminAuth, isSameOrigin, requestActor, type AdminClient } from './auth.ts';
import { requestContext, type RequestContext } from '../audit/context.ts';
import { currentFleetScope, fleetScopeParam } from '../fleets/scope.ts';
import { auditVisible, eventVisible, rememberingFleetOf, type FleetOf } from './event-scope.ts';
import { accountManagementRoutes, accountRoutes } from './account-routes.ts';
import { accountView, fleetScopeOf, roleOf, type Actor } from '../accounts/accounts.ts';
import { qrDataUrl } from '../deeplink/qr.ts';
import { signInRoutes } from './sign-in-routes.ts';
import { codeRoutes } from './code-routes.ts';
import { allowOnlyHosts } from './host-guard.ts';
import { closeWhenBodyUnread, enforceRequestDeadline } from '../http/request-deadline.ts';
import { capConnections, type DescriptorShare } from '../http/socket-limits.ts';
import { commandRoutes } from './command-routes.ts';
import { deploymentRoutes } from './deployment-routes.ts';
import { policyRoutes } from './policy-routes.ts';
import { reportRoutes } from './report-routes.ts';
import { jobRoutes } from './job-routes.ts';
import type { JobService } from '../jobs/jobs.ts';
import type { PolicyService } from '../policies/service.ts';
import { installAdminErrorHandling } from './errors.ts';
import { EventStreams, streamEvents, type StreamCaps } from './events-stream.ts';
import { invitationRoutes } from './invitation-routes.ts';
import { auditFilter, exportRoutes } from './export-routes.ts';
import { mailRoutes } from './mail-routes.ts';
import { alertRoutes } from './alert-routes.ts';
import type { Alerts } from '../alerts/index.ts';
import { agentRoutes, fleetRoutes, settingsRoutes } from './resource-routes.ts';
import { viewRoutes } from './view-routes.ts';
import { serveConsole } from './console-static.ts';
import { simulateRoutes, type DeviceSimulator } from './simulate-routes.ts';

export interface AdminAppOptions {
  /** Where it answers: a listener bound before the app is built (http/listener.ts). */
  listener: Listener;
  services: Services;
  files: FileStore;
  deployments?: PolicyService;
  /** Alert rules and webhooks (absent: their routes answer 404 as unknown). */
  alerts?: Alerts;
  /** Bulk jobs (with a broker only: they send its commands). */
  jobs?: JobService;
  auth: AdminAuth;
  info: () => Promise<ServerInfo>;
  /** The nodes registered on the database (cluster/nodes.ts); absent: none listed. */
  nodes?: () => Promise<ClusterNode[]>;
  /** The MQTT broker: its status and the commands to agents. */
  broker?: MqttBroker;
  /** The device simulator, injected by the caller (the backend never imports it). */
  simulate?: DeviceSimulator;
  /** Makes a LAN address the public host now (the one-click fix of the loopback warning). */
  choosePublicHost?: (host: string) => Promise<void>;
  /** The address the listener binds to: its name is served besides the loopback ones. */
  bindHost?: string;
  /** Host names served besides those (a load balancer's name, from `--admin-origin`). */
  extraHosts?: string[];
  /** Balancers whose X-Forwarded-For gives `request.ip` (trust-proxy.ts); none: the socket's address. */
  trustProxy?: string[];
  /** Connections the listener accepts at once (http/socket-limits.ts). */
  maxConnections?: number;
  /** The listener's share of the process's descriptors (http/socket-limits.ts). */
  descriptors?: DescriptorShare | undefined;
  /** How long a request may take to arrive (uploads: to stall); the agent listener's value. */
  requestTimeoutMs?: number;
  /** Open event streams per signed-in client and in all (events-stream.ts). */
  streamCaps?: Partial<StreamCaps>;
  /** Told of every route as it is registered (test/api/admin-api/route-table.test.ts). */
  onRoute?: (route: RouteOptions) => void;
}

/** The admin side: the admin API under /api and the console at /, on loopback by default; ready to serve. */
export async function adminApp({
  listener,
  services,
  files,
  deployments,
  alerts,
  jobs,
  auth,
  info,
  nodes,
  simulate,
  broker,
  choosePublicHost,
  bindHost = '127.0.0.1',
  extraHosts = [],
  trustProxy,
  maxConnections = 128,
  descriptors,
  requestTimeoutMs,
  streamCaps,
  onRoute,
}: AdminAppOptions): Promise<FastifyInstance> {
  // Unknown keys are refused rather than silently dropped, so an admin's typo never goes unnoticed.
  const app = Fastify({
    serverFactory: listener.serverFactory,
    logger: false,
    // Only the listed balancers are believed (never `true`: a client would choose its own address).
    ...(trustProxy?.length && { trustProxy }),
    bodyLimit: 1024 * 1024,
    forceCloseConnections: true,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true } },
    frameworkErrors: (_error, _request, reply) =>
      void (reply as FastifyReply).code(400).send({ error: 'ERROR_BAD_REQUEST', message: 'The URL cannot be decoded' }),
  });
  if (onRoute) app.addHook('onRoute', onRoute);
  installAdminErrorHandling(app);
  await writeResponsesAsJson(app);
  // Guards before anything else: the Host allow-list, then the same time-outs as the agent side.
  const wildcard = bindHost === '0.0.0.0' || bindHost === '::';
  allowOnlyHosts(app, [...(wildcard ? lanAddresses() : [bindHost]), ...extraHosts]);
  // One address (loopback) for every client: a full listener closes its oldest connection that is
  // not being answered, unauthenticated ones first, so idle or dripping sockets cannot lock the console out.
  const connections = capConnections(app.server, {
    max: maxConnections,
    perAddress: Infinity,
    refusal: '',
    share: descriptors,
  });
  const streams = new EventStreams(streamCaps);
  const clients = new WeakMap<object, AdminClient>();
  // Who each authenticated request acts for (set by the /api hook before any handler runs).
  const actors = new WeakMap<object, Actor>();
  const actorOf = (request: object): Actor => {
    const actor = actors.get(request);
    if (!actor) throw new ApiError(401, 'ERROR_UNAUTHORIZED', 'Not signed in');
    return actor;
  };
  enforceRequestDeadline(
    app,
    (request) => request.method === 'POST' && /^\/api\/(files|packages)(\?|$)/.test(request.url),
    requestTimeoutMs,
  );
  closeWhenBodyUnread(app);
  refuseUnusableNumbers(app, () => new ApiError(400, 'ERROR_BAD_REQUEST', 'A number is out of range'));
  // A bodiless POST that still says `Content-Type: application/json` is fine (revoke, resend …).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser('The body is not valid JSON'));

  // One-time console sign-in: /auth?ticket=… sets the cookie and lands on the console.
  // No schema: a repeated or missing ticket lands on the sign-in page, not on a 400.
  adminRoute(app, 'openSignInLink', async (request, reply) => {
    const ticket = ticketOf(request.query);
    if (ticket !== null && (await auth.redeemTicket(ticket, request, reply))) {
      connections.authenticated(request.raw.socket);
      return reply.redirect('/');
    }
    // The console's sign-in page says what happened and what to do.
    return reply.redirect(ticket !== null ? '/sign-in?link=used' : '/sign-in');
  });

  // The sign-in page posts the admin token or a sign-in link here; only from the console's own page.
  adminRoute(app, 'signIn', async (request, reply) => {
    if (!isSameOrigin(request)) throw new ApiError(403, 'ERROR_FORBIDDEN', 'Sign in from the console page itself');
    const outcome = await auth.signIn(request.body.credential, request, reply);
    if (!outcome.ok && outcome.status === 429) {
      reply.header('retry-after', String(outcome.retryAfterSeconds));
      throw new ApiError(
        429,
        'ERROR_TOO_MANY_SIGN_INS',
        `Too many failed sign-ins from this computer: try again in ${outcome.retryAfterSeconds} s, or open a new sign-in link (npm run cli -- console).`,
      );
    }
    if (!outcome.ok) {
      throw new ApiError(
        401,
        'ERROR_SIGN_IN',
        'That is neither the admin token nor a valid sign-in link. A link works once, within 15 minutes: get a new one with npm run cli -- console.',
      );
    }
    connections.authenticated(request.raw.socket);
    return { signed_in: true as const, with: outcome.with };
  });

  // The sign-in page's email and password: a new session for that account (the cookie), or the
  // second step first (a two-factor code, or enrolment when the owner requires it).
  adminRoute(app, 'signInWithPassword', async (request, reply) => {
    if (!isSameOrigin(request)) throw new ApiError(403, 'ERROR_FORBIDDEN', 'Sign in from the console page itself');
    const outcome = await auth.signInWithPassword(request.body.email, request.body.password, request, reply);
    if (!outcome.ok) refuseSignIn(reply, outcome, 'Wrong email or password.');
    if ('secondStep' in outcome)
      return { signed_in: false as const, second_step: outcome.secondStep, challenge: outcome.challenge };
    connections.authenticated(request.raw.socket);
    return { signed_in: true as const, account: accountView(outcome.account) };
  });

  // The second step: a code of the authenticator app, or a recovery code.
  adminRoute(app, 'signInWithCode', async (request, reply) => {
    if (!isSameOrigin(request)) throw new ApiError(403, 'ERROR_FORBIDDEN', 'Sign in from the console page itself');
    const outcome = await auth.signInWithCode(request.body.challenge, request.body.code, request, reply);
    if (!outcome.ok)
      refuseSignIn(reply, outcome, 'That code is not right: type the six digits the app shows now, or a recovery code.');
    connections.authenticated(request.raw.socket);
    return { signed_in: true as const, account: accountView(outcome.account) };
  });

  // Enrolment at sign-in, when the owner requires two-factor and this admin has none yet.
  adminRoute(app, 'beginTwoFactorEnrolment', async (request) => {
    if (!isSameOrigin(request)) throw new ApiError(403, 'ERROR_FORBIDDEN', 'Sign in from the console page itself');
    const setup = await auth.beginEnrolment(request.body.challenge, request.ip);
    if (!setup) refuseSignIn(undefined, { ok: false, status: 410 }, '');
    return { ...setup, qr_data_url: await qrDataUrl(setup.otpauth_url, 280) };
  });
  adminRoute(app, 'confirmTwoFactorEnrolment', async (request, reply) => {
    if (!isSameOrigin(request)) throw new ApiError(403, 'ERROR_FORBIDDEN', 'Sign in from the console page itself');
    const outcome = await auth.confirmEnrolment(request.body.challenge, request.body.code, request, reply);
    if (!outcome.ok) refuseSignIn(reply, outcome, 'That code is not right.');
    connections.authenticated(request.raw.socket);
    return { signed_in: true as const, account: accountView(outcome.account), recovery_codes: outcome.recoveryCodes };
  });

  // The one-time set-up link's form: the first person chooses the owner's email and password, and is signed in.
  adminRoute(app, 'setUpOwner', async (request, reply) => {
    if (!isSameOrigin(request)) throw new ApiError(403, 'ERROR_FORBIDDEN', 'Set up from the console page itself');
    const owner = await services.accounts.completeSetup(request.body, request.ip);
    const outcome = await auth.signInAfterSetup(owner, request, reply);
    if ('secondStep' in outcome)
      return { signed_in: false as const, second_step: outcome.secondStep, challenge: outcome.challenge };
    connections.authenticated(request.raw.socket);
    return { signed_in: true as const, account: accountView(outcome.account) };
  });

  // An invited admin's set-up link: whom it is for (or why it no longer works), then their password, and signed in.
  adminRoute(app, 'accountInvitation', async (request) => services.admins.setupInfo(request.query.token));
  adminRoute(app, 'acceptAccountInvitation', async (request, reply) => {
    if (!isSameOrigin(request)) throw new ApiError(403, 'ERROR_FORBIDDEN', 'Set your password from the console page itself');
    const account = await services.admins.acceptInvite(request.body, request.ip);
    // With two-factor required, the answer's challenge leads to enrolment first (as at sign-in).
    const outcome = await auth.signInAfterSetup(account, request, reply);
    if ('secondStep' in outcome)
      return { signed_in: false as const, second_step: outcome.secondStep, challenge: outcome.challenge };
    connections.authenticated(request.raw.socket);
    return { signed_in: true as const, account: accountView(outcome.account) };
  });

  // Signing out ends the session on the server (the cookie is worthless afterwards, wherever it was copied).
  adminRoute(app, 'signOut', async (request, reply) => {
    if (!isSameOrigin(request)) throw new ApiError(403, 'ERROR_FORBIDDEN', 'Sign out from the console page itself');
    await auth.signOut(request, reply);
    return { signed_out: true as const };
  });

  await app.register(
    async (api) => {
      api.setNotFoundHandler(() => {
        throw new ApiError(404, 'ERROR_NOT_FOUND', 'No such admin endpoint');
      });
      api.addHook('onRequest', async (request, reply) => {
        const outcome = await auth.authenticate(request);
        if (outcome.ok) {
          connections.authenticated(request.raw.socket);
          clients.set(request, outcome.client);
          actors.set(request, outcome.actor);
          // What the route's declared permission is checked against (http/route-table.ts).
          actsAs(request, roleOf(outcome.actor));
          return;
        }
        if (outcome.status === 429) {
          return reply
            .code(429)
            .header('retry-after', String(outcome.retryAfterSeconds))
            .send({
              error: 'ERROR_TOO_MANY_SIGN_INS',
              message: `Too many wrong admin tokens from this address: try again in ${outcome.retryAfterSeconds} s`,
            });
        }
        return reply.code(401).send({
          error: 'ERROR_UNAUTHORIZED',
          message: request.headers.authorization
            ? 'This token is not the admin token nor a live API token (unknown, revoked or expired)'
            : 'Admin token or API token required (Authorization: Bearer <token>)',
        });
      });

      // Each authenticated request runs in its request context (who, from where): what it records
      // is written to the audit trail with its actor, in the transaction of the change. Every
      // state-changing route records (test/api/admin-api/audit-coverage.test.ts walks them all).
      api.addHook('preHandler', (request, _reply, done) => {
        const actor = actors.get(request);
        if (!actor) return done();
        const context: RequestContext = {
          actor: requestActor(actor),
          address: request.ip,
          audited: false,
          // What it may see: services read it (fleets/scope.ts) and pass it into their queries.
          fleets: fleetScopeOf(actor),
        };
        requestContext.run(context, done);
      });
      // Where an event's device, invitation or code is now, whatever the request's scope.
      const fleetOf: FleetOf = {
        agent: async (id) => (await services.agentRepository.byId(id))?.fleet_id,
        invitation: async (id) => (await services.repositories.invitations.get(id))?.fleet_id,
        code: async (id) => (await services.repositories.codes.get(id))?.fleet_id,
      };
      adminRoute(api, 'audit.list', async (request) => {
        const filter = { ...auditFilter(request.query), limit: request.query.limit ?? 200 };
        const scope = currentFleetScope();
        if (scope === null) return { items: await services.audit.list(filter) };
        // A scoped client's trail: its fleets' objects (and what concerns no fleet) among the 1,000 matching last.
        const where = rememberingFleetOf(fleetOf);
        const visible = await filterAsync(await services.audit.list({ ...filter, limit: 1000 }), (entry) =>
          auditVisible(entry, scope, where),
        );
        return { items: visible.slice(0, filter.limit) };
      });
      // A fresh one-time sign-in link, for `mdm-console console` (the admin token never leaves the CLI):
      // as the caller's own account, or (the owner only) as the admin named by `?as=EMAIL`.
      adminRoute(api, 'consoleTicket', async (request, reply) => {
        const actor = actorOf(request);
        let account = actor.account;
        const email = request.query.as?.trim();
        if (email !== undefined && email.toLowerCase() !== (account.email ?? '').toLowerCase()) {
          const named = await services.accounts.byEmail(email);
          if (!named) throw new ApiError(404, 'ERROR_NOT_FOUND', `No admin has the email ${email}`);
          if (roleOf(actor) !== 'owner') {
            throw new ApiError(403, 'ERROR_FORBIDDEN', 'Only the owner makes sign-in links for another admin');
          }
          if (named.disabled === 1) throw new ApiError(409, 'ERROR_CONFLICT', `${email} is disabled: enable the account first`);
          account = named;
        }
        const url = `${(await info()).admin_url}/auth?ticket=${await auth.issueTicket(account.id)}`;
        await services.events.record(
          'admin.sign_in_link_issued',
          `One-time console sign-in link issued for ${account.email ?? account.display_name}`,
          {},
          { account_id: account.id, name: account.display_name },
        );
        return reply.code(201).send({ console_url: url });
      });

      // The released Flyve agents (2.0.0-rc.6, rc.7) trust only the flyve.org certificate bundled in the app
      // (res/raw/flyve_org.crt), not the broker's: with TLS in their record they never connect.
      const FLYVE_TLS_WARNING =
        'MQTT TLS is on while codes are made for the Flyve MDM agent: its releases (2.0.0-rc.6, rc.7) trust only the flyve.org certificate built into them, so they cannot connect to this broker over TLS. Turn MQTT TLS off in Settings for Flyve agents.';
      const flyveAgentsLockedOut = (settings: { agent_app: string; mqtt_tls: boolean }) =>
        settings.agent_app === 'flyve' && settings.mqtt_tls;
      adminRoute(api, 'status', async () => {
        const current = await info();
        const publicHost = current.public_host;
        const counts = await services.statusCounts.counts(fleetScopeParam());
        const { admin_token: _hidden, setup_url: _once, ...visible } = current;
        return {
          ...visible,
          counts,
          mqtt: broker ? { ...broker.status(), agent_endpoint: broker.agentEndpoint(services.settings.get().mqtt_tls) } : null,
          lan_addresses: lanAddresses(),
          nodes: nodes ? await nodes() : [],
          warnings: [
            ...(isLoopback(publicHost)
              ? [
                  `The public host ${publicHost} is a loopback address: phones cannot reach it. Choose a LAN address in Settings or start with --public-host.`,
                ]
              : []),
            ...(flyveAgentsLockedOut(services.settings.get()) ? [FLYVE_TLS_WARNING] : []),
          ],
        };
      });

      // One click from "phones cannot reach this server": use this LAN address from now on.
      adminRoute(api, 'choosePublicHost', async (request) => {
        const { host } = request.body;
        const lan = lanAddresses();
        if (!lan.includes(host)) {
          throw new ApiError(
            400,
            'ERROR_BAD_REQUEST',
            `${host} is not a network address of this machine (${lan.length ? `these are: ${lan.join(', ')}` : 'it has none besides loopback'})`,
          );
        }
        await services.settings.update({ public_host: host }, (change) =>
          services.events.record('settings.updated', `Public host set to ${host}: phones reach the server there`, {}, change),
        );
        await choosePublicHost?.(host);
        const current = await info();
        return { public_host: current.public_host, api_url: current.api_url, deeplink_url: current.deeplink_url };
      });

      adminRoute(api, 'events', async (request) => {
        const scope = currentFleetScope();
        if (scope === null) return { items: await services.events.latest(request.query.limit) };
        // A scoped client's history: its fleets' events (and those about no fleet) among the last 1,000.
        const where = rememberingFleetOf(fleetOf);
        const visible = await filterAsync(await services.events.latest(1000), (event) => eventVisible(event, scope, where));
        return { items: visible.slice(0, request.query.limit ?? 100) };
      });
      adminRoute(api, 'eventStream', async (request, reply) =>
        streamEvents(
          services.events,
          services.feed,
          // The row sent beside an event is shared by every stream: read whatever the scope.
          (id) => services.agents.findSummary(id, null),
          request,
          reply,
          streams,
          clients.get(request)?.key ?? 'token',
          { fleets: currentFleetScope(), fleetOf },
        ),
      );

      // Each capability's routes get the services they use, nothing more (no database handle).
      const { invitations, events, mail, codes, approval, agents, reports, fleets, settings, links } = services;
      await api.register(accountRoutes, { accounts: services.accounts, fleets: services.fleets, actorOf });
      await api.register(signInRoutes, { accounts: services.accounts, signIn: services.signInSettings, auth, actorOf });
      await api.register(accountManagementRoutes, { admins: services.admins, actorOf });
      await api.register(invitationRoutes, { invitations, events });
      await api.register(codeRoutes, { codes, approval, agents });
      await api.register(mailRoutes, { mail, invitations });
      await api.register(simulateRoutes, { invitations, codes, settings, events, simulate });
      await api.register(agentRoutes, { agents, events, reports, views: services.views });
      await api.register(viewRoutes, { views: services.views, policies: deployments });
      if (broker) await api.register(commandRoutes, { agents, commands: broker.commands });
      await api.register(fleetRoutes, { fleets });
      await api.register(settingsRoutes, { settings, events, links });
      await api.register(adminFileRoutes, { store: files });
      if (deployments) await api.register(deploymentRoutes, { fleets, deployments });
      if (deployments) await api.register(policyRoutes, { fleets, policies: deployments });
      if (alerts) await api.register(alertRoutes, { alerts });
      await api.register(reportRoutes, { figures: services.figures });
      if (jobs) await api.register(jobRoutes, { jobs, files });
      await api.register(exportRoutes, { exports: services.exports, audit: services.audit, views: services.views, fleetOf });
    },
    { prefix: '/api' },
  );

  await app.register(serveConsole);
  await app.ready();
  return app;
}

/** A refused sign-in step as its answer: 429 (with Retry-After), 410 (the step's challenge is gone), or 401. */
function refuseSignIn(
  reply: FastifyReply | undefined,
  outcome: { ok: false; status: 401 } | { ok: false; status: 410 } | { ok: false; status: 429; retryAfterSeconds: number },
  wrong: string,
): never {
  if (outcome.status === 429) {
    reply?.header('retry-after', String(outcome.retryAfterSeconds));
    throw new ApiError(
      429,
      'ERROR_TOO_MANY_SIGN_INS',
      `Too many failed sign-ins for this account or from this computer: try again in ${outcome.retryAfterSeconds} s.`,
    );
  }
  if (outcome.status === 410) {
    throw new ApiError(
      410,
      'ERROR_SIGN_IN_EXPIRED',
      'This sign-in has expired or had too many wrong codes: sign in again with your email and password.',
    );
  }
  throw new ApiError(401, 'ERROR_SIGN_IN', wrong);
}

/** `?ticket=` of a sign-in link: one non-empty value, else null (missing, empty or repeated). */
function ticketOf(query: unknown): string | null {
  if (typeof query !== 'object' || query === null || !('ticket' in query)) return null;
  return typeof query.ticket === 'string' && query.ticket !== '' ? query.ticket : null;
}

/** The items `keep` accepts, in their order. */
async function filterAsync<T>(items: T[], keep: (item: T) => Promise<boolean>): Promise<T[]> {
  const kept = await Promise.all(items.map(keep));
  return items.filter((_item, index) => kept[index]);
}
