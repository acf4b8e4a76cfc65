import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AdminSessionService } from '../admin-sessions/admin-sessions.ts';
import type { EventLog } from '../events/event-log.ts';
import { RateLimiter, type RateOptions } from '../sessions/rate-limit.ts';
import { randomHex } from '../util/tokens.ts';

const COOKIE = 'mdm_console';
/** A sign-in link printed by `serve` or `mdm-console console` is good for this long, and once. */
const TICKET_LIFETIME_MS = 15 * 60 * 1000;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/**
 * Failed sign-ins (a wrong token pasted, a used link, a wrong bearer token) per client address:
 * 10 at once, then one every 10 s. Each is recorded; past the allowance the address gets 429.
 */
export const SIGN_IN_FAILURES: RateOptions = { burst: 10, perMinute: 6, maxKeys: 10_000 };

export function isSameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = request.headers.origin;
  return origin !== undefined && origin === `http://${request.headers.host}`;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Who made an authenticated admin request: the event streams are capped per client. */
export type AdminClient = { via: 'token'; key: 'token' } | { via: 'cookie'; key: string };

export type Authentication =
  { ok: true; client: AdminClient } | { ok: false; status: 401 } | { ok: false; status: 429; retryAfterSeconds: number };

export type SignInOutcome =
  { ok: true; with: 'token' | 'link' } | { ok: false; status: 401 } | { ok: false; status: 429; retryAfterSeconds: number };

export interface AdminAuthOptions {
  sessions: AdminSessionService;
  /** Where refused sign-ins are recorded (the console's activity). */
  events?: Pick<EventLog, 'record'>;
  failures?: Partial<RateOptions>;
}

/**
 * Admin authentication: `Authorization: Bearer <admin token>` for scripts and the CLI; for the
 * console, the admin token (or a one-time ticket from the URL) is exchanged for a session on the
 * server whose random id the HttpOnly, SameSite=Strict cookie carries: new on every sign-in, ended
 * on sign-out and on expiry, so the admin token itself never sits in a URL, a log or the browser.
 */
export class AdminAuth {
  private readonly adminToken: string;
  /** What sessions signed in with this admin token hold: a new token ends every console session. */
  private readonly credential: string;
  private readonly sessions: AdminSessionService;
  private readonly events: Pick<EventLog, 'record'> | undefined;
  private readonly failures: RateLimiter;
  /** Addresses whose throttling was recorded, so one event says so rather than one per refusal. */
  private readonly throttled = new Set<string>();
  /** One-time sign-in tickets and when each stops being valid. */
  private readonly tickets = new Map<string, number>();

  constructor(adminToken: string, options: AdminAuthOptions) {
    this.adminToken = adminToken;
    this.credential = createHmac('sha256', adminToken).update('console-session').digest('hex').slice(0, 32);
    this.sessions = options.sessions;
    this.events = options.events;
    this.failures = new RateLimiter({ ...SIGN_IN_FAILURES, ...options.failures });
  }

  /** A URL path that signs a browser in once. */
  issueTicket(): string {
    const now = Date.now();
    for (const [old, expires] of this.tickets) if (expires <= now) this.tickets.delete(old);
    const ticket = randomHex(24);
    this.tickets.set(ticket, now + TICKET_LIFETIME_MS);
    return ticket;
  }

  /**
   * `/auth?ticket=…`: a good ticket signs in (a link comes from the token's holder, so it passes
   * even while the address is throttled); a used, expired or unknown one counts as a failure.
   */
  redeemTicket(ticket: string, request: FastifyRequest, reply: FastifyReply): boolean {
    if (this.takeTicket(ticket)) {
      this.startSession(request, reply);
      return true;
    }
    const wait = this.failures.wait(request.ip);
    if (wait > 0) this.throttle(request.ip, wait);
    else this.failed(request, 'link');
    return false;
  }

  /**
   * The console's sign-in page: what the admin pasted is the admin token, a sign-in link
   * (`…/auth?ticket=…`) or the ticket alone. An address past its allowance of failures gets 429
   * without its credential being looked at; a good credential opens a new session (the cookie).
   */
  signIn(credential: string, request: FastifyRequest, reply: FastifyReply): SignInOutcome {
    const wait = this.failures.wait(request.ip);
    if (wait > 0) return this.throttle(request.ip, wait);
    const text = credential.trim();
    let how: 'token' | 'link' | null = null;
    if (same(text, this.adminToken)) how = 'token';
    else {
      const ticket = /[?&]ticket=([0-9a-f]+)/i.exec(text)?.[1] ?? (/^[0-9a-f]{48}$/i.test(text) ? text : null);
      if (ticket !== null && this.takeTicket(ticket.toLowerCase())) how = 'link';
    }
    if (how === null) return this.failed(request, 'form');
    this.startSession(request, reply);
    return { ok: true, with: how };
  }

  /** Sign-out: the session ends on the server and the browser drops the cookie. */
  signOut(request: FastifyRequest, reply: FastifyReply): void {
    const id = cookieOf(request);
    if (id !== undefined) this.sessions.end(id);
    reply.header('set-cookie', `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`);
  }

  /**
   * An admin API request: the bearer token, or a live console session. A wrong bearer token counts
   * as a failed sign-in of its address (recorded; past the allowance, 429); the right one always
   * passes (the CLI and scripts keep working while a flood from the same machine is slowed).
   */
  authenticate(request: FastifyRequest): Authentication {
    const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (bearer) {
      if (same(bearer, this.adminToken)) return { ok: true, client: { via: 'token', key: 'token' } };
      const wait = this.failures.wait(request.ip);
      if (wait > 0) return this.throttle(request.ip, wait);
      return this.failed(request, 'bearer');
    }
    const id = cookieOf(request);
    if (id === undefined || this.sessions.resolve(id, this.credential) === null) return { ok: false, status: 401 };
    // SameSite treats every port of 127.0.0.1 as one site: a page served by another local program
    // could still send the cookie along. Changes must come from the console's own origin.
    if (!SAFE_METHODS.has(request.method) && !isSameOrigin(request)) return { ok: false, status: 401 };
    return { ok: true, client: { via: 'cookie', key: `session:${id}` } };
  }

  private takeTicket(ticket: string): boolean {
    const expires = this.tickets.get(ticket);
    this.tickets.delete(ticket);
    return expires !== undefined && expires > Date.now();
  }

  private startSession(request: FastifyRequest, reply: FastifyReply): void {
    const { id } = this.sessions.open(this.credential, { address: request.ip, userAgent: request.headers['user-agent'] ?? null });
    const maxAge = Math.floor(this.sessions.limits.maxAgeMs / 1000);
    reply.header('set-cookie', `${COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAge}`);
  }

  private failed(request: FastifyRequest, how: 'form' | 'link' | 'bearer'): { ok: false; status: 401 } {
    const address = request.ip;
    this.failures.take(address);
    this.throttled.delete(address);
    const what = {
      form: 'Console sign-in refused',
      link: 'Sign-in link refused (used, expired or unknown)',
      bearer: 'Admin API call with a wrong token',
    }[how];
    this.events?.record('admin.sign_in_failed', `${what}, from ${address}`, {}, { address, with: how });
    return { ok: false, status: 401 };
  }

  private throttle(address: string, wait: number): { ok: false; status: 429; retryAfterSeconds: number } {
    if (!this.throttled.has(address)) {
      if (this.throttled.size >= 10_000) this.throttled.clear();
      this.throttled.add(address);
      this.events?.record(
        'admin.sign_in_throttled',
        `Too many failed sign-ins from ${address}: further attempts are refused for a while`,
        {},
        { address, retry_after_s: wait },
      );
    }
    return { ok: false, status: 429, retryAfterSeconds: wait };
  }
}

function cookieOf(request: FastifyRequest): string | undefined {
  return (request.headers.cookie ?? '')
    .split(';')
    .map((part) => part.trim().split('='))
    .find(([name]) => name === COOKIE)?.[1];
}
