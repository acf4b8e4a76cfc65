import { createHash } from 'node:crypto';
import { randomHex } from '../util/tokens.ts';
import type { AdminSessionRepository, StoredAdminSession } from './repository.ts';

/** How long a console session lasts on the server. */
export interface AdminSessionLimits {
  /** Unused for this long, it ends. */
  idleMs: number;
  /** It ends this long after sign-in, however busy (the cookie's Max-Age too). */
  maxAgeMs: number;
}

/** Twelve hours unused, seven days at most (the owner changes both in the sign-in settings). */
export const DEFAULT_ADMIN_SESSION_LIMITS: AdminSessionLimits = {
  idleMs: 12 * 60 * 60 * 1000,
  maxAgeMs: 7 * 24 * 60 * 60 * 1000,
};

/** last_used_at is written at most this often per session. */
const TOUCH_EVERY_MS = 60 * 1000;

export interface AdminSession {
  /** The id the API names it by (never the cookie's). */
  publicId: string;
  accountId: number | null;
  address: string | null;
  createdAt: string;
  expiresAt: string;
}

/** A session as its admin sees it in the list of their sessions. */
export interface ListedAdminSession {
  id: string;
  address: string | null;
  user_agent: string | null;
  created_at: string;
  last_used_at: string;
  /** When it ends unless used before (idle time), or at its maximum age, whichever comes first. */
  expires_at: string;
  current: boolean;
}

const hashOf = (id: string) => createHash('sha256').update(id).digest('hex');
const COOKIE_ID = /^[0-9a-f]{64}$/;

/**
 * The console's sessions, kept on the server: the cookie carries a random id (32 bytes), new on
 * every sign-in; the database keeps only its hash, a public id for the API, when it ends (idle
 * time, maximum age) and who it is (the admin account signed in). Signing out ends it at once; an
 * admin lists their sessions and ends any of them.
 */
export class AdminSessionService {
  private readonly store: AdminSessionRepository;
  private readonly source: () => Partial<AdminSessionLimits>;
  private readonly overrides: Partial<AdminSessionLimits>;
  private readonly now: () => number;

  /**
   * `limits`: fixed ones (tests), or read on each use from the sign-in settings; `overrides`
   * win over what that gives.
   */
  constructor(
    store: AdminSessionRepository,
    limits: Partial<AdminSessionLimits> | (() => Partial<AdminSessionLimits>) = {},
    now: () => number = Date.now,
    overrides: Partial<AdminSessionLimits> = {},
  ) {
    this.store = store;
    this.source = typeof limits === 'function' ? limits : () => limits;
    this.overrides = overrides;
    this.now = now;
  }

  get limits(): AdminSessionLimits {
    return { ...DEFAULT_ADMIN_SESSION_LIMITS, ...this.source(), ...this.overrides };
  }

  /** A new session; its id is what the cookie carries, and is nowhere else. */
  async open(
    credential: string,
    client: { accountId?: number | null; address?: string | null; userAgent?: string | null } = {},
  ): Promise<{ id: string; publicId: string; expiresAt: string }> {
    const id = randomHex(32);
    const publicId = randomHex(8);
    const now = this.now();
    const at = new Date(now).toISOString();
    const expiresAt = new Date(now + this.limits.maxAgeMs).toISOString();
    const row: StoredAdminSession = {
      id_hash: hashOf(id),
      public_id: publicId,
      account_id: client.accountId ?? null,
      credential,
      address: client.address ?? null,
      user_agent: client.userAgent?.slice(0, 300) ?? null,
      created_at: at,
      last_used_at: at,
      expires_at: expiresAt,
    };
    await this.store.insert(row);
    return { id, publicId, expiresAt };
  }

  /**
   * The live session `id` names, if `accepts` its account and credential still (a changed password or
   * admin token, a disabled account); null, and ended, otherwise or once expired.
   */
  async resolve(
    id: string,
    accepts: (accountId: number | null, credential: string) => Promise<boolean>,
  ): Promise<AdminSession | null> {
    if (!COOKIE_ID.test(id)) return null;
    const hash = hashOf(id);
    const row = await this.store.byHash(hash);
    if (!row) return null;
    const now = this.now();
    if (!(await accepts(row.account_id, row.credential)) || !this.alive(row, now)) {
      await this.store.remove(hash);
      return null;
    }
    if (now - Date.parse(row.last_used_at) > TOUCH_EVERY_MS) await this.store.touch(hash, new Date(now).toISOString());
    return {
      publicId: row.public_id,
      accountId: row.account_id,
      address: row.address,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
    };
  }

  /** Sign-out: the session ends on the server, whatever the browser keeps. */
  async end(id: string): Promise<void> {
    if (COOKIE_ID.test(id)) await this.store.remove(hashOf(id));
  }

  /** An account's live sessions, newest first; `currentId` (the cookie's id) is marked. `unowned`: the owner's, from before accounts. */
  async list(accountId: number, currentId: string | null, unowned = false): Promise<ListedAdminSession[]> {
    const now = this.now();
    const current = currentId !== null && COOKIE_ID.test(currentId) ? hashOf(currentId) : null;
    const { idleMs } = this.limits;
    return (await this.store.ofAccount(accountId, unowned))
      .filter((row) => this.alive(row, now))
      .map((row) => {
        const idleEnd = Date.parse(row.last_used_at) + idleMs;
        return {
          id: row.public_id,
          address: row.address,
          user_agent: row.user_agent,
          created_at: row.created_at,
          last_used_at: row.last_used_at,
          expires_at: new Date(Math.min(idleEnd, this.endOf(row))).toISOString(),
          current: row.id_hash === current,
        };
      });
  }

  /** Ends one of the account's sessions by its public id; false when it has no such session. */
  endOne(accountId: number, publicId: string, unowned = false): Promise<boolean> {
    return this.store.removeOneOfAccount(accountId, publicId, unowned);
  }

  /** Ends every session of the account but the one `keepId` (a cookie's id) names; how many ended. */
  endOthers(accountId: number, keepId: string | null, unowned = false): Promise<number> {
    const keep = keepId !== null && COOKIE_ID.test(keepId) ? hashOf(keepId) : null;
    return this.store.removeOthers(accountId, keep, unowned);
  }

  /** What the session `id` holds from now on (a new password's fingerprint: it stays signed in). */
  async recredential(id: string, credential: string): Promise<void> {
    if (COOKIE_ID.test(id)) await this.store.setCredential(hashOf(id), credential);
  }

  /** Ends every session of an account (disabled or deleted); how many ended. */
  endAllOf(accountId: number): Promise<number> {
    return this.store.removeOfAccount(accountId);
  }

  purgeExpired(): Promise<number> {
    const now = this.now();
    return this.store.removeExpired(new Date(now).toISOString(), new Date(now - this.limits.idleMs).toISOString());
  }

  count(): Promise<number> {
    return this.store.count();
  }

  /** When the session ends at the latest: at its own maximum age, or the current setting's when that was lowered since. */
  private endOf(row: StoredAdminSession): number {
    return Math.min(Date.parse(row.expires_at), Date.parse(row.created_at) + this.limits.maxAgeMs);
  }

  private alive(row: StoredAdminSession, now: number): boolean {
    return this.endOf(row) > now && now - Date.parse(row.last_used_at) <= this.limits.idleMs;
  }
}
