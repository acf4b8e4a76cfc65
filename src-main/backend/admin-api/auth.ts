import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { roleOf, type AccountService, type Actor } from '../accounts/accounts.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { requestContext, type RequestActor } from '../audit/context.ts';
import type { StoredAccount } from '../accounts/repository.ts';
import type { AdminSessionService } from '../admin-sessions/admin-sessions.ts';
import type { EventLog } from '../events/event-log.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import { Backoff, type BackoffOptions } from '../admin-sessions/backoff.ts';
import type { SignInRepository } from '../admin-sessions/sign-in-repository.ts';
import type { SecondFactor } from '../accounts/two-factor.ts';
import { randomHex } from '../util/tokens.ts';

const COOKIE = 'mdm_console';
/** A sign-in link printed by `serve` or `mdm-console console` is good for this long, and once. */
const TICKET_LIFETIME_MS = 15 * 60 * 1000;
/** The second step of a sign-in (a code, or enrolment) must follow the password within this time. */
const CHALLENGE_LIFETIME_MS = 5 * 60 * 1000;
/** Wrong codes one challenge takes before the password must be given again. */
const CHALLENGE_ATTEMPTS = 5;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isSameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = request.headers.origin;
  // Behind a load balancer that terminates TLS the origin is https:// under the same Host name.
  return origin !== undefined && (origin === `http://${request.headers.host}` || origin === `https://${request.headers.host}`);
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

type Refused = { ok: false; status: 401 } | { ok: false; status: 429; retryAfterSeconds: number };

/** A password sign-in: signed in, or a second step asked for with its challenge. */
export type PasswordOutcome =
  { ok: true; account: StoredAccount } | { ok: true; secondStep: 'code' | 'enrol'; challenge: string } | Refused;

/** How a console session was opened. */
type SignInWay = 'token' | 'link' | 'password' | SecondFactor;

export interface AdminAuthOptions {
  sessions: AdminSessionService;
  /**
   * Failed sign-ins, one-time tickets and second steps waiting: in the database, so that they hold
   * across every node of a cluster (a ticket made on one node signs in once, on any node).
   */
  signIns: SignInRepository;
  /** The admin accounts: whom a session, a password or a token stands for. */
  accounts: AccountService;
  /** Where sign-ins, failed ones and sign-outs are recorded with who and from where. */
  audit?: Pick<AuditLog, 'record'>;
  /** Where refused sign-ins are recorded (the console's activity). */
  events?: Pick<EventLog, 'record'>;
  /** The transaction that records a change with it (ending sessions). */
  work?: UnitOfWork;
  /** Failed sign-ins allowed per address and per account before the growing delays (admin-sessions/backoff.ts). */
  failures?: Partial<BackoffOptions>;
  /** Whether the owner requires two-factor sign-in for everyone (read at each sign-in). */
  requireTwoFactor?: () => boolean;
  /** The clock of the throttles and challenges (tests drive it). */
  now?: () => number;
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
  private readonly work: UnitOfWork | undefined;
  /**
   * Failed sign-ins per address (`address:…`), of every kind, and per account (`account:<email>`)
   * for password and second-step sign-ins.
   */
  private readonly failures: Backoff;
  private readonly signIns: SignInRepository;
  private readonly accounts: AccountService;
  private readonly requireTwoFactor: () => boolean;
  private readonly now: () => number;
  private readonly audit: Pick<AuditLog, 'record'> | undefined;
  /**
   * Addresses whose throttling this node recorded, so one event says so rather than one per
   * refusal (per node: a cluster says it at most once per node, which the activity can bear).
   */
  private readonly throttled = new Set<string>();

  constructor(adminToken: string, options: AdminAuthOptions) {
    this.adminToken = adminToken;
    this.credential = createHmac('sha256', adminToken).update('console-session').digest('hex').slice(0, 32);
    this.sessions = options.sessions;
    this.events = options.events;
    this.work = options.work;
    this.now = options.now ?? Date.now;
    this.signIns = options.signIns;
    this.failures = new Backoff(options.signIns, options.failures, this.now);
    this.accounts = options.accounts;
    this.audit = options.audit;
    this.requireTwoFactor = options.requireTwoFactor ?? (() => false);
  }

  /** A ticket that signs a browser in once (on any node): as the owner, or as the admin `accountId`. */
  async issueTicket(accountId?: number): Promise<string> {
    const now = Date.now();
    await this.signIns.sweepTickets(new Date(now).toISOString());
    const ticket = randomHex(24);
    await this.signIns.insertTicket(hashOf(ticket), accountId ?? null, new Date(now + TICKET_LIFETIME_MS).toISOString());
    return ticket;
  }

  /**
   * Forgets what no longer counts: failures forgotten anyway, tickets and challenges expired (a
   * sweeper's work; run by any node, it deletes rows nothing can use any more).
   */
  async sweep(): Promise<void> {
    const now = new Date(this.now()).toISOString();
    await this.failures.sweep();
    await this.signIns.sweepTickets(new Date().toISOString());
    await this.signIns.sweepChallenges(now);
  }

  /**
   * `/auth?ticket=…`: a good ticket signs in (a link comes from the token's holder, so it passes
   * even while the address is throttled); a used, expired or unknown one counts as a failure.
   */
  async redeemTicket(ticket: string, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const account = await this.takeTicket(ticket);
    if (account) {
      await this.startSession(request, reply, account, this.credential, 'link');
      return true;
    }
    const wait = await this.failures.wait(addressKey(request.ip));
    if (wait > 0) await this.throttle(request, wait);
    else await this.failed(request, 'link');
    return false;
  }

  /**
   * The console's sign-in page: what the admin pasted is the admin token, a sign-in link
   * (`…/auth?ticket=…`) or the ticket alone. An address past its allowance of failures gets 429
   * without its credential being looked at; a good credential opens a new session (the cookie).
   */
  async signIn(credential: string, request: FastifyRequest, reply: FastifyReply): Promise<SignInOutcome> {
    const wait = await this.failures.wait(addressKey(request.ip));
    if (wait > 0) return this.throttle(request, wait);
    const text = credential.trim();
    let how: 'token' | 'link' | null = null;
    let account: StoredAccount | null;
    if (same(text, this.adminToken)) {
      how = 'token';
      account = await this.accounts.owner();
    } else {
      const ticket = /[?&]ticket=([0-9a-f]+)/i.exec(text)?.[1] ?? (/^[0-9a-f]{48}$/i.test(text) ? text : null);
      account = ticket === null ? null : await this.takeTicket(ticket.toLowerCase());
      if (account) how = 'link';
    }
    if (how === null || account === null) return this.failed(request, 'form');
    await this.startSession(request, reply, account, this.credential, how);
    return { ok: true, with: how };
  }

  /**
   * The sign-in page's email and password. Throttled per address and per account (growing delays
   * past the free failures): while waiting, 429 without the password being checked. Every attempt is
   * recorded. With two-factor on (or required and not enrolled yet), a second step is asked for
   * with a challenge instead of a session.
   */
  async signInWithPassword(
    email: string,
    password: string,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<PasswordOutcome> {
    const key = email.trim().toLowerCase();
    const wait = await this.waitOf(request.ip, key);
    if (wait > 0) return this.throttle(request, wait, key);
    const account = await this.accounts.checkPassword(key, password);
    if (!account) return this.failed(request, 'password', key);
    if (account.totp_secret !== null || this.requireTwoFactor()) {
      const step = account.totp_secret !== null ? ('code' as const) : ('enrol' as const);
      const challenge = await this.openChallenge(account.id, step);
      const who = account.email ?? account.display_name;
      await this.audit?.record(
        requestActor({ account, token: null }),
        request.ip,
        'admin.sign_in_password_accepted',
        step === 'code'
          ? `${who}: password accepted, two-factor code asked`
          : `${who}: password accepted, two-factor enrolment asked (required for everyone)`,
        { kind: 'account', id: account.id, name: who },
      );
      return { ok: true, secondStep: step, challenge };
    }
    await this.failures.reset(accountKey(key));
    await this.accounts.signedIn(account);
    await this.startSession(request, reply, account, passwordCredential(account), 'password');
    return { ok: true, account: (await this.accounts.byId(account.id))! };
  }

  /**
   * The second step: a code of the authenticator app (each once) or an unused recovery code (then
   * used up). Wrong codes count as failed sign-ins of the address and the account; a challenge
   * takes five, then the password must be given again.
   */
  async signInWithCode(
    challenge: string,
    code: string,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<{ ok: true; account: StoredAccount } | Refused | { ok: false; status: 410 }> {
    const pending = await this.challengeOf(challenge, 'code');
    if (!pending) return { ok: false, status: 410 };
    const { account, key } = pending;
    const wait = await this.waitOf(request.ip, key);
    if (wait > 0) return this.throttle(request, wait, key);
    const how = await this.accounts.twoFactor.verify(account, code);
    if (how === null) {
      await this.missChallenge(challenge);
      return this.failed(request, 'two-factor', key);
    }
    // Used once: a second request with it (on this node or another) finds it gone.
    if (!(await this.signIns.removeChallenge(hashOf(challenge)))) return { ok: false, status: 410 };
    await this.failures.reset(accountKey(key));
    await this.accounts.signedIn(account);
    await this.startSession(request, reply, account, passwordCredential(account), how);
    return { ok: true, account: (await this.accounts.byId(account.id))! };
  }

  /** Enrolment at sign-in (two-factor required, none yet): the secret to add to the app. */
  async beginEnrolment(
    challenge: string,
    address: string | null = null,
  ): Promise<{ secret: string; otpauth_url: string } | null> {
    const pending = await this.challengeOf(challenge, 'enrol');
    if (!pending) return null;
    // Recorded as the admin's own doing (their password was right), from where they sign in.
    const actor = requestActor({ account: pending.account, token: null });
    return requestContext.run({ actor, address, audited: false }, () => this.accounts.twoFactor.begin(pending.account));
  }

  /** Enrolment at sign-in confirmed by a code: two-factor on, signed in, the recovery codes shown once. */
  async confirmEnrolment(
    challenge: string,
    code: string,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<{ ok: true; account: StoredAccount; recoveryCodes: string[] } | Refused | { ok: false; status: 410 }> {
    const pending = await this.challengeOf(challenge, 'enrol');
    if (!pending) return { ok: false, status: 410 };
    const { account, key } = pending;
    const wait = await this.waitOf(request.ip, key);
    if (wait > 0) return this.throttle(request, wait, key);
    let codes: string[];
    try {
      const actor = requestActor({ account, token: null });
      codes = (
        await requestContext.run({ actor, address: request.ip, audited: false }, () =>
          this.accounts.twoFactor.confirm(account, code),
        )
      ).recovery_codes;
    } catch (error) {
      await this.missChallenge(challenge);
      await this.failed(request, 'two-factor', key);
      throw error;
    }
    await this.signIns.removeChallenge(hashOf(challenge));
    await this.failures.reset(accountKey(key));
    await this.accounts.signedIn(account);
    const enrolled = (await this.accounts.byId(account.id))!;
    await this.startSession(request, reply, enrolled, passwordCredential(enrolled), 'totp');
    return { ok: true, account: enrolled, recoveryCodes: codes };
  }

  /**
   * A new password for the session `request` carries: its other sessions end, this one stays
   * signed in with the new password. How many ended.
   */
  async passwordChanged(account: StoredAccount, request: FastifyRequest): Promise<number> {
    const id = cookieOf(request) ?? null;
    const unowned = account.role === 'owner' && account.id === (await this.accounts.owner()).id;
    const ended = await this.sessions.endOthers(account.id, id, unowned);
    if (id !== null) await this.sessions.recredential(id, passwordCredential(account));
    return ended;
  }

  /** The console sessions of `actor`'s account, the request's own marked. */
  async sessionsOf(actor: Actor, request: FastifyRequest) {
    return this.sessions.list(actor.account.id, cookieOf(request) ?? null, await this.isFirstOwner(actor.account));
  }

  async endSession(actor: Actor, publicId: string): Promise<boolean> {
    return (
      (await this.recordingEnded(actor, async () =>
        (await this.sessions.endOne(actor.account.id, publicId, await this.isFirstOwner(actor.account))) ? 1 : 0,
      )) === 1
    );
  }

  /** Ends every session of `actor`'s account but the request's own; how many ended. */
  endOtherSessions(actor: Actor, request: FastifyRequest): Promise<number> {
    return this.recordingEnded(actor, async () =>
      this.sessions.endOthers(actor.account.id, cookieOf(request) ?? null, await this.isFirstOwner(actor.account)),
    );
  }

  /** Sessions ended by their admin, recorded (event and audit entry) in the same transaction. */
  private recordingEnded(actor: Actor, end: () => Promise<number>): Promise<number> {
    const work = this.work;
    const run = async (change: () => Promise<number>) => (work ? await work.run(change) : await change());
    return run(async () => {
      const ended = await end();
      if (ended > 0) {
        const who = actor.account.email ?? actor.account.display_name;
        await this.events?.record(
          'admin.sessions_ended',
          `${who} ended ${ended} of their console session(s)`,
          {},
          { account_id: actor.account.id, ended },
        );
      }
      return ended;
    });
  }

  /**
   * A set-up link's end (the owner's, an invited admin's): just given a password, signed in with it;
   * or, when the owner requires two-factor, sent to enrol first (the challenge).
   */
  async signInAfterSetup(
    account: StoredAccount,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<{ ok: true; account: StoredAccount } | { ok: true; secondStep: 'enrol'; challenge: string }> {
    if (account.totp_secret === null && this.requireTwoFactor()) {
      return { ok: true, secondStep: 'enrol', challenge: await this.openChallenge(account.id, 'enrol') };
    }
    await this.accounts.signedIn(account);
    await this.startSession(request, reply, account, passwordCredential(account), 'password');
    return { ok: true, account: (await this.accounts.byId(account.id))! };
  }

  /** Sign-out: the session ends on the server and the browser drops the cookie. */
  async signOut(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const id = cookieOf(request);
    if (id !== undefined) {
      const actor = await this.sessionActor(id);
      await this.sessions.end(id);
      if (actor) {
        const who = actor.account.email ?? actor.account.display_name;
        await this.events?.record(
          'admin.signed_out',
          `${who} signed out, from ${request.ip}`,
          {},
          {
            account_id: actor.account.id,
            address: request.ip,
          },
        );
        await this.audit?.record(requestActor(actor), request.ip, 'admin.signed_out', `${who} signed out`, {
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
  async authenticate(request: FastifyRequest): Promise<Authentication> {
    const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (bearer) {
      const actor = await this.accounts.actorOfToken(bearer);
      if (actor) return { ok: true, client: { via: 'token', key: `token:${actor.token!.id}` }, actor };
      const wait = await this.failures.wait(addressKey(request.ip));
      // A flood of wrong tokens is not written to the audit trail call by call (the activity says it once).
      if (wait > 0) return this.throttle(request, wait, undefined, false);
      return this.failed(request, 'bearer');
    }
    const id = cookieOf(request);
    const actor = id === undefined ? null : await this.sessionActor(id);
    if (id === undefined || actor === null) return { ok: false, status: 401 };
    // SameSite treats every port of 127.0.0.1 as one site: a page served by another local program
    // could still send the cookie along. Changes must come from the console's own origin.
    if (!SAFE_METHODS.has(request.method) && !isSameOrigin(request)) return { ok: false, status: 401 };
    return { ok: true, client: { via: 'cookie', key: `session:${id}` }, actor };
  }

  /** The account a ticket signs in (once): the owner's, or the one named when it was issued; null when used, expired or unknown. */
  private async takeTicket(ticket: string): Promise<StoredAccount | null> {
    const found = await this.signIns.takeTicket(hashOf(ticket));
    if (found === undefined || Date.parse(found.expires_at) <= Date.now()) return null;
    const account = found.account_id === null ? await this.accounts.owner() : await this.accounts.byId(found.account_id);
    return account && account.disabled === 0 ? account : null;
  }

  /** Sessions from before accounts (no account) were the admin token's: the first owner's. */
  private async isFirstOwner(account: StoredAccount): Promise<boolean> {
    return account.id === (await this.accounts.owner()).id;
  }

  /** How long the address or the account must still wait (one read). */
  private waitOf(address: string, key: string): Promise<number> {
    return this.failures.waitOfEither(addressKey(address), accountKey(key));
  }

  /** A password accepted: the challenge its second step must come with (on any node), within its lifetime. */
  private async openChallenge(accountId: number, step: 'code' | 'enrol'): Promise<string> {
    const now = this.now();
    await this.signIns.sweepChallenges(new Date(now).toISOString());
    const challenge = randomHex(24);
    await this.signIns.insertChallenge(hashOf(challenge), accountId, step, new Date(now + CHALLENGE_LIFETIME_MS).toISOString());
    return challenge;
  }

  /** A wrong code for the challenge: after CHALLENGE_ATTEMPTS of them it ends (the password again). */
  private async missChallenge(challenge: string): Promise<void> {
    if ((await this.signIns.missChallenge(hashOf(challenge))) >= CHALLENGE_ATTEMPTS) {
      await this.signIns.removeChallenge(hashOf(challenge));
    }
  }

  /** The live challenge of this step and its account (still enabled); null when unknown, expired or used. */
  private async challengeOf(challenge: string, step: 'code' | 'enrol'): Promise<{ account: StoredAccount; key: string } | null> {
    const entry = await this.signIns.challenge(hashOf(challenge));
    if (!entry || entry.step !== step) return null;
    if (Date.parse(entry.expires_at) <= this.now()) {
      await this.signIns.removeChallenge(hashOf(challenge));
      return null;
    }
    const account = await this.accounts.byId(entry.account_id);
    if (!account || account.disabled === 1 || account.email === null) {
      await this.signIns.removeChallenge(hashOf(challenge));
      return null;
    }
    return { account, key: account.email.toLowerCase() };
  }

  /**
   * The account a console session is signed in as: still enabled, and still holding what it signed
   * in with (the admin token for a link or the token; the password, which a change ends). A session
   * from before accounts existed (no account) was the admin token's: the owner's.
   */
  private async sessionActor(id: string): Promise<Actor | null> {
    let account: StoredAccount | undefined;
    const session = await this.sessions.resolve(id, async (accountId, credential) => {
      account = accountId === null ? await this.accounts.owner() : await this.accounts.byId(accountId);
      if (!account || account.disabled === 1) return false;
      return credential === this.credential || credential === passwordCredential(account);
    });
    return session && account ? { account, token: null } : null;
  }

  private async startSession(
    request: FastifyRequest,
    reply: FastifyReply,
    account: StoredAccount,
    credential: string,
    how: SignInWay,
  ): Promise<void> {
    // Every way in counts as a sign-in (the Accounts page shows the last one).
    if (how !== 'password') await this.accounts.signedIn(account);
    const { id } = await this.sessions.open(credential, {
      accountId: account.id,
      address: request.ip,
      userAgent: request.headers['user-agent'] ?? null,
    });
    const who = account.email ?? account.display_name;
    const by = {
      token: 'the admin token',
      link: 'a sign-in link',
      password: 'email and password',
      totp: 'email, password and a two-factor code',
      recovery: 'email, password and a recovery code',
    }[how];
    await this.events?.record(
      'admin.signed_in',
      `${who} signed in with ${by}, from ${request.ip}`,
      {},
      {
        account_id: account.id,
        address: request.ip,
        with: how,
      },
    );
    await this.audit?.record(
      requestActor({ account, token: null }),
      request.ip,
      'admin.signed_in',
      `${who} signed in with ${by}`,
      {
        kind: 'account',
        id: account.id,
        name: who,
      },
    );
    const maxAge = Math.floor(this.sessions.limits.maxAgeMs / 1000);
    // Behind a balancer that terminates TLS (and says so in X-Forwarded-Proto), the cookie travels over HTTPS only.
    const secure = request.headers['x-forwarded-proto'] === 'https' ? '; Secure' : '';
    reply.header('set-cookie', `${COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAge}${secure}`);
  }

  private async failed(
    request: FastifyRequest,
    how: 'form' | 'link' | 'bearer' | 'password' | 'two-factor',
    email?: string,
  ): Promise<{ ok: false; status: 401 }> {
    const address = request.ip;
    await this.failures.fail(addressKey(address));
    this.throttled.delete(address);
    if (email !== undefined) {
      await this.failures.fail(accountKey(email));
      this.throttled.delete(`account:${email}`);
    }
    const what = {
      form: 'Console sign-in refused',
      link: 'Sign-in link refused (used, expired or unknown)',
      bearer: 'Admin API call with a wrong or revoked token',
      password: `Wrong email or password for ${email ?? ''}`,
      'two-factor': `Wrong two-factor code for ${email ?? ''}`,
    }[how];
    await this.events?.record(
      'admin.sign_in_failed',
      `${what}, from ${address}`,
      {},
      {
        address,
        with: how,
        ...(email === undefined ? {} : { email }),
      },
    );
    await this.audit?.record(null, address, 'admin.sign_in_failed', what, {
      kind: email === undefined ? null : 'account',
      id: null,
      name: email ?? null,
    });
    return { ok: false, status: 401 };
  }

  /**
   * A sign-in attempt refused unchecked while its address or account waits: in the audit trail
   * each time (every attempt is), in the activity once per wait.
   */
  private async throttle(
    request: FastifyRequest,
    wait: number,
    email?: string,
    audited = true,
  ): Promise<{ ok: false; status: 429; retryAfterSeconds: number }> {
    const address = request.ip;
    if (audited) {
      await this.audit?.record(
        null,
        address,
        'admin.sign_in_throttled',
        `Sign-in refused unchecked${email === undefined ? '' : ` for ${email}`}: too many failures, ${wait} s to wait`,
        { kind: email === undefined ? null : 'account', id: null, name: email ?? null },
      );
    }
    const key = email === undefined ? address : `account:${email}`;
    if (!this.throttled.has(key)) {
      if (this.throttled.size >= 10_000) this.throttled.clear();
      this.throttled.add(key);
      await this.events?.record(
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

/** What the database keeps of a ticket or a challenge: its SHA-256, never what the browser holds. */
function hashOf(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

const addressKey = (address: string) => `address:${address}`;
const accountKey = (email: string) => `account:${email}`;

function cookieOf(request: FastifyRequest): string | undefined {
  return (request.headers.cookie ?? '')
    .split(';')
    .map((part) => part.trim().split('='))
    .find(([name]) => name === COOKIE)?.[1];
}
