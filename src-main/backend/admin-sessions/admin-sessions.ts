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

export const DEFAULT_ADMIN_SESSION_LIMITS: AdminSessionLimits = {
  idleMs: 7 * 24 * 60 * 60 * 1000,
  maxAgeMs: 30 * 24 * 60 * 60 * 1000,
};

/** last_used_at is written at most this often per session. */
const TOUCH_EVERY_MS = 60 * 1000;

export interface AdminSession {
  accountId: number | null;
  address: string | null;
  createdAt: string;
  expiresAt: string;
}

const hashOf = (id: string) => createHash('sha256').update(id).digest('hex');

/**
 * The console's sessions, kept on the server: the cookie carries a random id (32 bytes), new on
 * every sign-in; the database keeps only its hash, when it ends (idle time, maximum age) and who
 * it is (the admin account signed in). Signing out ends it at once.
 */
export class AdminSessionService {
  private readonly store: AdminSessionRepository;
  readonly limits: AdminSessionLimits;
  private readonly now: () => number;

  constructor(store: AdminSessionRepository, limits: Partial<AdminSessionLimits> = {}, now: () => number = Date.now) {
    this.store = store;
    this.limits = { ...DEFAULT_ADMIN_SESSION_LIMITS, ...limits };
    this.now = now;
  }

  /** A new session; its id is what the cookie carries, and is nowhere else. */
  open(
    credential: string,
    client: { accountId?: number | null; address?: string | null; userAgent?: string | null } = {},
  ): { id: string; expiresAt: string } {
    const id = randomHex(32);
    const now = this.now();
    const at = new Date(now).toISOString();
    const expiresAt = new Date(now + this.limits.maxAgeMs).toISOString();
    const row: StoredAdminSession = {
      id_hash: hashOf(id),
      account_id: client.accountId ?? null,
      credential,
      address: client.address ?? null,
      user_agent: client.userAgent?.slice(0, 300) ?? null,
      created_at: at,
      last_used_at: at,
      expires_at: expiresAt,
    };
    this.store.insert(row);
    return { id, expiresAt };
  }

  /**
   * The live session `id` names, if `accepts` its account and credential still (a changed password or
   * admin token, a disabled account); null, and ended, otherwise or once expired.
   */
  resolve(id: string, accepts: (accountId: number | null, credential: string) => boolean): AdminSession | null {
    if (!/^[0-9a-f]{64}$/.test(id)) return null;
    const hash = hashOf(id);
    const row = this.store.byHash(hash);
    if (!row) return null;
    const now = this.now();
    const lastUsed = Date.parse(row.last_used_at);
    if (!accepts(row.account_id, row.credential) || Date.parse(row.expires_at) <= now || now - lastUsed > this.limits.idleMs) {
      this.store.remove(hash);
      return null;
    }
    if (now - lastUsed > TOUCH_EVERY_MS) this.store.touch(hash, new Date(now).toISOString());
    return { accountId: row.account_id, address: row.address, createdAt: row.created_at, expiresAt: row.expires_at };
  }

  /** Sign-out: the session ends on the server, whatever the browser keeps. */
  end(id: string): void {
    if (/^[0-9a-f]{64}$/.test(id)) this.store.remove(hashOf(id));
  }

  /** Ends every session of an account (disabled or deleted); how many ended. */
  endAllOf(accountId: number): number {
    return this.store.removeOfAccount(accountId);
  }

  purgeExpired(): number {
    const now = this.now();
    return this.store.removeExpired(new Date(now).toISOString(), new Date(now - this.limits.idleMs).toISOString());
  }

  count(): number {
    return this.store.count();
  }
}
