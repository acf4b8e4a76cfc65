import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifySchemaCompiler,
  type FastifyServerOptions,
  type RouteOptions,
} from 'fastify';
import type { TSchema } from 'typebox';
import type { ApprovalService } from '../agents/approval.ts';
import type { EnrollmentService } from '../agents/enrollment.ts';
import { deeplinkPageRoutes, type DeeplinkPageOptions } from '../deeplink/page.ts';
import { badRequest, sessionTokenMissing } from '../errors.ts';
import { agentDownloadRoutes, type AgentDownloadRoutesOptions } from '../files/routes.ts';
import { installAgentErrorHandling, installLenientJsonParser } from '../http/agent-errors.ts';
import type { SessionPhase } from '../http/agent-session.ts';
import { refuseUnusableNumbers } from '../http/number-guard.ts';
import { closeWhenBodyUnread, HEADERS_TIMEOUT_MS } from '../http/request-deadline.ts';
import { trustedProxyMatcher } from '../trust-proxy.ts';
import { capConnections, type ConnectionCap, type DescriptorShare } from '../http/socket-limits.ts';
import type { SessionService } from '../sessions/sessions.ts';
import { agentEnrollmentRoutes } from './enrollment-routes.ts';
import { agentApiUrl } from './flyve-aliases.ts';
import { agentReportRoutes, type ReportRoutesOptions } from './report-routes.ts';
import { agentSessionRoutes } from './session-routes.ts';
import { taskStatusRoutes, type TaskRoutesOptions } from './task-routes.ts';
import { sessionTokenOf } from './tokens.ts';

/** Agent-API bodies are small JSON; anything bigger is refused before it is read. */
const AGENT_BODY_LIMIT = 64 * 1024;

export interface AgentAppOptions {
  sessions: SessionService;
  /**
   * Refuses the sessions of devices not approved (yet) on every route but those marked `whileHeld`
   * (the session endpoints and the record reads): they may wait, nothing they send is taken.
   */
  approval?: Pick<ApprovalService, 'checkApproved'>;
  /** Enrollment and the records an agent reads (PluginMdmAgent, Computer, Entity, PluginMdmFleet). */
  enrollment?: EnrollmentService;
  /** The reference agent's task-status calls. */
  tasks?: TaskRoutesOptions['deployments'];
  /** Reports over HTTP (pong, online, inventory, position). */
  reports?: ReportRoutesOptions;
  downloads?: AgentDownloadRoutesOptions;
  /** The page a deeplink opens in a phone's browser (outside /api). */
  deeplinkPage?: DeeplinkPageOptions;
  /** The listener's bounds; none without it. */
  listener?: {
    requestTimeoutMs: number;
    maxConnections: number;
    maxConnectionsPerAddress: number;
    /** The listener's share of the process's descriptors (http/socket-limits.ts). */
    descriptors?: DescriptorShare | undefined;
  };
  /** Balancers whose X-Forwarded-For gives `request.ip` (trust-proxy.ts); none: the socket's address. */
  trustProxy?: string[];
  /** Where the app answers (a listener bound before it is built); without it, Fastify's own server. */
  serverFactory?: FastifyServerOptions['serverFactory'];
  /** Told of every route as it is registered (the OpenAPI document, scripts/openapi.ts). */
  onRoute?: (route: RouteOptions) => void;
  /** Another validator compiler than Ajv (tests check the routes under TypeBox's own). */
  validatorCompiler?: FastifySchemaCompiler<TSchema>;
}

/**
 * The agent API (the spec's endpoints under /api, and the deeplink page), as the server runs it
 * and as tests build it: GLPI-style error bodies, a lenient JSON body parser, and one session hook
 * that resolves `request.session` on every /api route, at the phase its `config.session` names.
 */
export async function buildAgentApp(options: AgentAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.serverFactory && { serverFactory: options.serverFactory }),
    bodyLimit: AGENT_BODY_LIMIT,
    logger: false,
    // Only the listed balancers are believed (never `true`: a device would choose its own address).
    ...(options.trustProxy?.length && { trustProxy: options.trustProxy }),
    forceCloseConnections: true,
    // A HEAD would run the GET handler: reading an agent record draws a new MQTT password.
    exposeHeadRoutes: false,
    // The LAN side never waits forever for a slow or stalled request (Fastify's default is 0).
    ...(options.listener && { requestTimeout: options.listener.requestTimeoutMs }),
    // Scalars are coerced (a numeric version is fine) but an array never passes for a string.
    ajv: { customOptions: { coerceTypes: true } },
    // A URL Fastify cannot decode (`/%C0%AF`) gets the spec's error shape too, not Fastify's own.
    frameworkErrors: (_error, _request, reply) =>
      void (reply as FastifyReply).code(400).send(['ERROR_BAD_REQUEST', 'Bad Request']),
    // Flyve resource names and trailing slashes reach the same routes (agent-api/flyve-aliases.ts).
    rewriteUrl: (request) => agentApiUrl(request.url ?? '/'),
  });
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  if (options.validatorCompiler) app.setValidatorCompiler(options.validatorCompiler);
  let connections: ConnectionCap | null = null;
  if (options.listener) {
    const { requestTimeoutMs, maxConnections, maxConnectionsPerAddress, descriptors } = options.listener;
    app.server.headersTimeout = Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs);
    connections = capConnections(app.server, {
      max: maxConnections,
      perAddress: maxConnectionsPerAddress,
      uncapped: trustedProxyMatcher(options.trustProxy ?? []),
      refusal: JSON.stringify([
        'ERROR_TOO_MANY_CONNECTIONS',
        `This address already has ${maxConnectionsPerAddress} requests being answered: try again in a moment`,
      ]),
      share: descriptors,
    });
  }
  closeWhenBodyUnread(app);
  installLenientJsonParser(app);
  installAgentErrorHandling(app);
  refuseUnusableNumbers(app, () => badRequest());
  app.decorateRequest('session'); // set by the session hook: one shape for every request

  const api: FastifyPluginAsyncTypebox = async (scope) => {
    const resolveSession = sessionHook(options.sessions, options.approval);
    const resolveHeldSession = sessionHook(options.sessions);
    scope.addHook('onRoute', (route) => attachSessionHook(route, route.config?.whileHeld ? resolveHeldSession : resolveSession));
    await scope.register(agentSessionRoutes, { sessions: options.sessions });
    if (options.enrollment) await scope.register(agentEnrollmentRoutes, { enrollment: options.enrollment });
    if (options.tasks) await scope.register(taskStatusRoutes, { deployments: options.tasks });
    if (options.reports) await scope.register(agentReportRoutes, options.reports);
    // An authenticated download leaves its address's connection cap (socket-limits.ts: phones behind one NAT).
    if (options.downloads)
      await scope.register(agentDownloadRoutes, {
        ...options.downloads,
        onAllowed: (request) => connections?.trust(request.raw.socket),
      });
  };
  await app.register(api, { prefix: '/api' });
  if (options.deeplinkPage) await app.register(deeplinkPageRoutes, options.deeplinkPage);
  return app;
}

type SessionHook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * Resolves the request's session token (query or header) into `request.session`, or fails with the
 * spec's token errors; with `approval`, a device not approved is refused too.
 */
function sessionHook(sessions: Pick<SessionService, 'resolve'>, approval?: AgentAppOptions['approval']): SessionHook {
  // Fastify turns a rejection into the error reply.
  return async (request) => {
    const token = sessionTokenOf(request);
    if (!token) throw sessionTokenMissing();
    request.session = await sessions.resolve(token);
    await approval?.checkApproved(request.session);
  };
}

/** Puts the session hook first among the route's own hooks of the phase it asks for. */
function attachSessionHook(route: RouteOptions, hook: SessionHook): void {
  const phase: SessionPhase = route.config?.session ?? 'after-validation';
  if (phase === 'none') return;
  const key = phase === 'on-request' ? 'onRequest' : 'preHandler';
  const own = route[key];
  route[key] = [hook, ...(own === undefined ? [] : Array.isArray(own) ? own : [own])];
}
