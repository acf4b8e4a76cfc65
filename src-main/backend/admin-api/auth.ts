import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { roleOf, type AccountService, type Actor } from '../accounts/accounts.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { RequestActor } from '../audit/context.ts';
import type { StoredAccount } from '../accounts/repository.ts';
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
export type AdminClient = { via: 'token'; key: string } | { via: 'cookie'; key: string };

export type Authentication =
  | { ok: true; client: AdminClient; actor: Actor }
  | { ok: false; status: 401 }
  | { ok: false; status: 429; retryAfterSeconds: number };

export type SignInOutcome =
  { ok: true; with: 'token' | 'link' } | { ok: false; status: 401 } | { ok: false; status: 429; retryAfterSeconds: number };

export interface AdminAuthOptions {
  sessions: AdminSessionService;
  /** The admin accounts: whom a session, a password or a token stands for. */
  accounts: AccountService;
  /** Where sign-ins, failed ones and sign-outs are recorded with who and from where. */
  audit?: Pick<AuditLog, 'record'>;
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
  /** Failed password sign-ins per account (by email), besides those per address. */
  private readonly accountFailures: RateLimiter;
  private readonly accounts: AccountService;
  private readonly audit: Pick<AuditLog, 'record'> | undefined;
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
    this.accountFailures = new RateLimiter({ ...SIGN_IN_FAILURES, ...options.failures });
    this.accounts = options.accounts;
    this.audit = options.audit;
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
      this.startSession(request, reply, this.accounts.owner(), this.credential, 'link');
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
    this.startSession(request, reply, this.accounts.owner(), this.credential, how);
    return { ok: true, with: how };
  }

  /**
   * The sign-in page's email and password. Throttled per address and per account (the same
   * allowance each): past it, 429 without the password being checked. Every attempt is recorded.
   */
  async signInWithPassword(
    email: string,
    password: string,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<
    { ok: true; account: StoredAccount } | { ok: false; status: 401 } | { ok: false; status: 429; retryAfterSeconds: number }
  > {
    const key = email.trim().toLowerCase();
    const wait = Math.max(this.failures.wait(request.ip), this.accountFailures.wait(key));
    if (wait > 0) return this.throttle(request.ip, wait, key);
    const account = await this.accounts.checkPassword(key, password);
    if (!account) {
      this.accountFailures.take(key);
      return this.failed(request, 'password', key);
    }
    this.accounts.signedIn(account);
    this.startSession(request, reply, account, passwordCredential(account), 'password');
    return { ok: true, account: this.accounts.byId(account.id)! };
  }

  /** The set-up link's end: the owner, just given a password, is signed in with it. */
  signInAfterSetup(account: StoredAccount, request: FastifyRequest, reply: FastifyReply): void {
    this.accounts.signedIn(account);
    this.startSession(request, reply, account, passwordCredential(account), 'password');
  }

  /** Sign-out: the session ends on the server and the browser drops the cookie. */
  signOut(request: FastifyRequest, reply: FastifyReply): void {
    const id = cookieOf(request);
    if (id !== undefined) {
      const actor = this.sessionActor(id);
      this.sessions.end(id);
      if (actor) {
        const who = actor.account.email ?? actor.account.display_name;
        this.events?.record(
          'admin.signed_out',
          `${who} signed out, from ${request.ip}`,
          {},
          {
            account_id: actor.account.id,
            address: request.ip,
          },
        );
        this.audit?.record(requestActor(actor), request.ip, 'admin.signed_out', `${who} signed out`, {
          kind: 'account',
          id: actor.account.id,
          name: who,
        });
      }
    }
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
      const actor = this.accounts.actorOfToken(bearer);
      if (actor) return { ok: true, client: { via: 'token', key: `token:${actor.token!.id}` }, actor };
      const wait = this.failures.wait(request.ip);
      if (wait > 0) return this.throttle(request.ip, wait);
      return this.failed(request, 'bearer');
    }
    const id = cookieOf(request);
    const actor = id === undefined ? null : this.sessionActor(id);
    if (id === undefined || actor === null) return { ok: false, status: 401 };
    // SameSite treats every port of 127.0.0.1 as one site: a page served by another local program
    // could still send the cookie along. Changes must come from the console's own origin.
    if (!SAFE_METHODS.has(request.method) && !isSameOrigin(request)) return { ok: false, status: 401 };
    return { ok: true, client: { via: 'cookie', key: `session:${id}` }, actor };
  }

  private takeTicket(ticket: string): boolean {
    const expires = this.tickets.get(ticket);
    this.tickets.delete(ticket);
    return expires !== undefined && expires > Date.now();
  }

  /**
   * The account a console session is signed in as: still enabled, and still holding what it signed
   * in with (the admin token for a link or the token; the password, which a change ends). A session
   * from before accounts existed (no account) was the admin token's: the owner's.
   */
  private sessionActor(id: string): Actor | null {
    let account: StoredAccount | undefined;
    const session = this.sessions.resolve(id, (accountId, credential) => {
      account = accountId === null ? this.accounts.owner() : this.accounts.byId(accountId);
      if (!account || account.disabled === 1) return false;
      return credential === this.credential || credential === passwordCredential(account);
    });
    return session && account ? { account, token: null } : null;
  }

  private startSession(
    request: FastifyRequest,
    reply: FastifyReply,
    account: StoredAccount,
    credential: string,
    how: 'token' | 'link' | 'password',
  ): void {
    // Every way in counts as a sign-in (the Accounts page shows the last one).
    if (how !== 'password') this.accounts.signedIn(account);
    const { id } = this.sessions.open(credential, {
      accountId: account.id,
      address: request.ip,
      userAgent: request.headers['user-agent'] ?? null,
    });
    const who = account.email ?? account.display_name;
    const by = { token: 'the admin token', link: 'a sign-in link', password: 'email and password' }[how];
    this.events?.record(
      'admin.signed_in',
      `${who} signed in with ${by}, from ${request.ip}`,
      {},
      {
        account_id: account.id,
        address: request.ip,
        with: how,
      },
    );
    this.audit?.record(requestActor({ account, token: null }), request.ip, 'admin.signed_in', `${who} signed in with ${by}`, {
      kind: 'account',
      id: account.id,
      name: who,
    });
    const maxAge = Math.floor(this.sessions.limits.maxAgeMs / 1000);
    reply.header('set-cookie', `${COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAge}`);
  }

  private failed(
    request: FastifyRequest,
    how: 'form' | 'link' | 'bearer' | 'password',
    email?: string,
  ): { ok: false; status: 401 } {
    const address = request.ip;
    this.failures.take(address);
    this.throttled.delete(address);
    if (email !== undefined) this.throttled.delete(`account:${email}`);
    const what = {
      form: 'Console sign-in refused',
      link: 'Sign-in link refused (used, expired or unknown)',
      bearer: 'Admin API call with a wrong or revoked token',
      password: `Wrong email or password for ${email ?? ''}`,
    }[how];
    this.events?.record(
      'admin.sign_in_failed',
      `${what}, from ${address}`,
      {},
      {
        address,
        with: how,
        ...(email === undefined ? {} : { email }),
      },
    );
    this.audit?.record(null, address, 'admin.sign_in_failed', what, {
      kind: email === undefined ? null : 'account',
      id: null,
      name: email ?? null,
    });
    return { ok: false, status: 401 };
  }

  private throttle(address: string, wait: number, email?: string): { ok: false; status: 429; retryAfterSeconds: number } {
    const key = email === undefined ? address : `account:${email}`;
    if (!this.throttled.has(key)) {
      if (this.throttled.size >= 10_000) this.throttled.clear();
      this.throttled.add(key);
      this.events?.record(
        'admin.sign_in_throttled',
        email === undefined
          ? `Too many failed sign-ins from ${address}: further attempts are refused for a while`
          : `Too many failed sign-ins for ${email} or from ${address}: further attempts are refused for a while`,
        {},
        { address, retry_after_s: wait, ...(email === undefined ? {} : { email }) },
      );
    }
    return { ok: false, status: 429, retryAfterSeconds: wait };
  }
}

/** An actor as the audit trail names it. */
export function requestActor(actor: Actor): RequestActor {
  return {
    accountId: actor.account.id,
    name: actor.account.display_name || actor.account.email || `account ${actor.account.id}`,
    tokenId: actor.token?.id ?? null,
    tokenName: actor.token?.name ?? null,
    role: roleOf(actor),
  };
}

/** What a password sign-in's session holds: a new password (a new hash, a new salt) ends it. */
function passwordCredential(account: StoredAccount): string {
  return account.password_hash === null
    ? ''
    : `pw:${createHash('sha256').update(account.password_hash).digest('hex').slice(0, 32)}`;
}

function cookieOf(request: FastifyRequest): string | undefined {
  return (request.headers.cookie ?? '')
    .split(';')
    .map((part) => part.trim().split('='))
    .find(([name]) => name === COOKIE)?.[1];
}
