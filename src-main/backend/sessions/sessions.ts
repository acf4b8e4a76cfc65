import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import { ApiError, badRequest, itemNotFound, loginFailed, sessionTokenInvalid } from '../errors.ts';
import { randomHex } from '../util/tokens.ts';
import { RateLimiter, type RateBuckets } from './rate-limit.ts';
import type { SessionRepository } from './session-repository.ts';
import type { SessionContext } from './types.ts';
import { isSharedAccount, type UserRepository, type UserRow } from './user-repository.ts';

/** last_used_at is written at most this often per session, to keep reads cheap. */
const TOUCH_EVERY_MS = 60 * 1000;

/**
 * Bounds on sessions (the spec leaves them open). A device needs one session per enrollment and
 * one per batch of downloads; an old QR code or a script must not fill the database.
 */
export interface SessionLimits {
  /** Sessions unused for this long are gone. */
  idleMs: number;
  /** Live sessions per user token; opening one more ends the least recently used. */
  livePerUser: number;
  /**
   * Live sessions of one enrollment code's account opened from one client address (a school hall
   * behind one NAT enrolls this many devices at once). Past it, a session no longer in use from that
   * address ends for the newcomer; when all are in use, the newcomer gets 429.
   */
  livePerCodeAddress: number;
  /** Live sessions of one enrollment code's account in all, on the same terms. */
  livePerCode: number;
  /**
   * How long a code session's enrollment may take: until then, and for ENROLLED_GRACE_MS after its
   * device enrolled, no other session ends it.
   */
  enrollmentWindowMs: number;
  /** initSession per (personal) user token: `burst` at once, then `perMinute`. */
  perToken: { burst: number; perMinute: number };
  /**
   * initSession with an unknown user token, per client address; 0 = none. A valid token never
   * counts here: 1,000 phones behind one NAT enroll at once, a flood of bad tokens is slowed.
   */
  perAddress: { burst: number; perMinute: number };
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  idleMs: 60 * 60 * 1000,
  livePerUser: 10,
  livePerCodeAddress: 2000,
  livePerCode: 10_000,
  enrollmentWindowMs: 15 * 60 * 1000,
  perToken: { burst: 10, perMinute: 10 },
  perAddress: { burst: 30, perMinute: 30 },
};

/** After its device enrolled, a code session stays in use this long: the device reads its record with it. */
export const ENROLLED_GRACE_MS = 2 * 60 * 1000;

/** 429 in the spec's shape, with the seconds to wait (also sent as Retry-After). */
export class TooManyRequests extends ApiError {
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number) {
    super(429, 'ERROR_TOO_MANY_REQUESTS', `${message}; retry in ${retryAfterSeconds} s`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export interface SessionDeps {
  store: SessionRepository;
  users: UserRepository;
  work: UnitOfWork;
  /** The rate limits' buckets: in the database with several nodes, in memory with one (rate-limit.ts). */
  rates: RateBuckets;
}

export class SessionService {
  private readonly store: SessionRepository;
  private readonly users: UserRepository;
  private readonly work: UnitOfWork;
  private readonly limits: SessionLimits;
  private readonly perToken: RateLimiter;
  private readonly perAddress: RateLimiter;
  private readonly rates: RateBuckets;

  constructor(deps: SessionDeps, limits: Partial<SessionLimits> = {}) {
    this.store = deps.store;
    this.users = deps.users;
    this.work = deps.work;
    this.limits = { ...DEFAULT_SESSION_LIMITS, ...limits };
    this.rates = deps.rates;
    this.perToken = new RateLimiter('init-token', this.limits.perToken, deps.rates);
    this.perAddress = new RateLimiter('init-address', this.limits.perAddress, deps.rates);
  }

  /**
   * initSession: the user token alone yields a session under the user's default profile. An unknown
   * token counts against its address (past the allowance: 429); a person's token is rate limited
   * and holds at most `livePerUser` sessions, the least recently used one ending when another opens.
   * An enrollment code's token is on every printed copy: its sessions never end one another while
   * in use, and are bounded per address and in all instead (sessionsOfCode).
   */
  async open(userToken: string, address: string | null = null): Promise<{ session_token: string; user: UserRow }> {
    const user = await this.users.byToken(userToken);
    if (!user) {
      const wait = address === null ? 0 : await this.perAddress.take(address);
      if (wait > 0) throw new TooManyRequests(`Too many unknown user tokens from ${address}`, wait);
      throw loginFailed('Incorrect user token');
    }
    const shared = isSharedAccount(user);
    const wait = shared ? 0 : await this.perToken.take(userToken);
    if (wait > 0) throw new TooManyRequests('Too many sessions opened with this token', wait);
    const token = randomHex(20);
    const now = nowIso();
    const entityId = (await this.users.entityOfAssignment(user.id, user.default_profile_id)) ?? user.entity_id;
    // The new session and the end of the sessions it replaces: one write transaction, one commit.
    await this.work.run(async () => {
      if (shared) await this.makeRoomForCodeSession(user.id, address);
      await this.store.insert({ token, userId: user.id, profileId: user.default_profile_id, entityId, at: now, address });
      if (!shared) await this.store.keepNewestOf(user.id, this.limits.livePerUser);
    });
    return { session_token: token, user };
  }

  /**
   * Before 1,040 sessions opened with a code's QR from four addresses ended other people's
   * enrollments (401), a code's sessions made room by ending the oldest. Now a session in use
   * (enrolling, or just enrolled) is never ended for another: past the bound of its address, or of
   * the code, a session no longer in use (its enrollment done or timed out) of that address, or of
   * the code, makes room, else the newcomer gets 429.
   */
  private async makeRoomForCodeSession(userId: number, address: string | null): Promise<void> {
    const now = Date.now();
    const inUse = {
      enrollingSince: new Date(now - this.limits.enrollmentWindowMs).toISOString(),
      enrolledSince: new Date(now - ENROLLED_GRACE_MS).toISOString(),
    };
    if ((await this.store.countOf(userId, address)) >= this.limits.livePerCodeAddress) {
      if (!(await this.store.removeOldestNotInUse(userId, inUse, address))) {
        throw new TooManyRequests(
          `This enrollment code already has ${this.limits.livePerCodeAddress} enrollments under way from ${address ?? 'this address'}`,
          60,
        );
      }
    }
    if ((await this.store.countOf(userId)) >= this.limits.livePerCode) {
      if (!(await this.store.removeOldestNotInUse(userId, inUse))) {
        throw new TooManyRequests(`This enrollment code already has ${this.limits.livePerCode} enrollments under way`, 60);
      }
    }
  }

  /** The agent this session has just enrolled: what lets it read that agent's record. Inside the enrollment's transaction. */
  async bindEnrollment(token: string, agentId: number, at: string): Promise<void> {
    await this.store.bindEnrollment(token, agentId, at);
  }

  /** Resolves a session token; throws ERROR_SESSION_TOKEN_INVALID for unknown or idle ones. */
  async resolve(token: string): Promise<SessionContext> {
    const row = await this.store.byToken(token);
    if (!row || row.kind === null) throw sessionTokenInvalid();
    const lastUsed = Date.parse(row.last_used_at);
    const now = Date.now();
    if (now - lastUsed > this.limits.idleMs) {
      await this.store.remove(token);
      throw sessionTokenInvalid();
    }
    if (now - lastUsed > TOUCH_EVERY_MS) await this.store.touch(token, new Date(now).toISOString());
    return {
      token: row.token,
      userId: row.user_id,
      userKind: row.kind,
      login: row.login,
      entityId: row.entity_id,
      activeProfileId: row.active_profile_id,
      enrolledAgentId: row.agent_id,
      enrolledAt: row.enrolled_at,
      seq: row.seq,
    };
  }

  /** changeActiveProfile: only to a profile the user holds; 404 otherwise (spec §7). */
  async changeProfile(session: SessionContext, profileId: number): Promise<void> {
    if (!Number.isInteger(profileId) || profileId <= 0) throw badRequest();
    const entityId = await this.users.entityOfAssignment(session.userId, profileId);
    if (entityId === undefined) throw itemNotFound();
    await this.store.setProfile(session.token, profileId, entityId);
  }

  /** getFullSession: the spec's fields, at the top level and under `session` (GLPI clients). */
  async fullSession(session: SessionContext): Promise<Record<string, unknown>> {
    const user = (await this.users.byId(session.userId))!;
    const profiles = await this.users.profilesOf(user.id);
    const active = profiles.find((p) => p.id === session.activeProfileId) ?? profiles[0]!;
    const fields = {
      valid_id: session.token,
      coreID: user.id,
      corename: user.login,
      corefriendlyname: [user.firstname, user.lastname].filter(Boolean).join(' ') || user.login,
      coreactive_entity: session.entityId,
      core_plugins: { 0: 'mdm' },
      coreactiveprofile: { id: active.id, name: active.name },
      coreprofiles: Object.fromEntries(profiles.map((p) => [String(p.id), { id: p.id, name: p.name }])),
      plugin_mdm_guest_profiles_id: (await this.users.guestProfile()).id,
    };
    // GLPI's names for the same values: the Flyve agents and GLPI's JavaScript client read these.
    const glpi = {
      glpiID: fields.coreID,
      glpiname: fields.corename,
      glpifriendlyname: fields.corefriendlyname,
      glpiactive_entity: fields.coreactive_entity,
      glpi_plugins: { 0: 'flyvemdm' },
      glpiactiveprofile: fields.coreactiveprofile,
      glpiprofiles: fields.coreprofiles,
      plugin_flyvemdm_guest_profiles_id: fields.plugin_mdm_guest_profiles_id,
    };
    const all = { ...fields, ...glpi };
    return { ...all, session: all };
  }

  async close(token: string): Promise<void> {
    await this.store.remove(token);
  }

  async closeAllOf(userId: number): Promise<void> {
    await this.store.removeOfUser(userId);
  }

  purgeIdle(): Promise<number> {
    return this.store.removeUnusedSince(new Date(Date.now() - this.limits.idleMs).toISOString());
  }

  /** Forgets the rate limits' buckets that are full again (every limit's: initSession's, enrollment's). */
  sweepRateLimits(): Promise<number> {
    return this.rates.sweep(Date.now());
  }
}
