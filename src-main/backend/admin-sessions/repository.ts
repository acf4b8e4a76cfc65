import type { Db } from '../db/database.ts';

/** A console session as stored: the SHA-256 of its id, never the id the cookie carries. */
export interface StoredAdminSession {
  id_hash: string;
  /** The admin account signed in; null for the admin token's holder (there are no accounts yet). */
  account_id: number | null;
  /** A fingerprint of what it was signed in with: a session outlives no change of the admin token. */
  credential: string;
  address: string | null;
  user_agent: string | null;
  created_at: string;
  last_used_at: string;
  /** The session's maximum age: it ends then, however busy. */
  expires_at: string;
}

/** The admin_sessions table, as the console session service uses it. */
export interface AdminSessionRepository {
  insert(session: StoredAdminSession): void;
  byHash(idHash: string): StoredAdminSession | undefined;
  touch(idHash: string, at: string): void;
  remove(idHash: string): void;
  removeOfAccount(accountId: number): number;
  /** Ends the sessions past their maximum age or unused since `idleCutoff`; how many ended. */
  removeExpired(now: string, idleCutoff: string): number;
  count(): number;
}

export class SqliteAdminSessionRepository implements AdminSessionRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO admin_sessions (id_hash, account_id, credential, address, user_agent, created_at, last_used_at, expires_at)
         VALUES (@id_hash, @account_id, @credential, @address, @user_agent, @created_at, @last_used_at, @expires_at)`,
      ),
      byHash: db.prepare(`SELECT * FROM admin_sessions WHERE id_hash = ?`),
      touch: db.prepare(`UPDATE admin_sessions SET last_used_at = ? WHERE id_hash = ?`),
      remove: db.prepare(`DELETE FROM admin_sessions WHERE id_hash = ?`),
      removeOfAccount: db.prepare(`DELETE FROM admin_sessions WHERE account_id = ?`),
      removeExpired: db.prepare(`DELETE FROM admin_sessions WHERE expires_at <= ? OR last_used_at < ?`),
      count: db.prepare(`SELECT count(*) FROM admin_sessions`).pluck(),
    };
  }

  insert(session: StoredAdminSession): void {
    this.s.insert.run(session);
  }

  byHash(idHash: string): StoredAdminSession | undefined {
    return this.s.byHash.get(idHash) as StoredAdminSession | undefined;
  }

  touch(idHash: string, at: string): void {
    this.s.touch.run(at, idHash);
  }

  remove(idHash: string): void {
    this.s.remove.run(idHash);
  }

  removeOfAccount(accountId: number): number {
    return this.s.removeOfAccount.run(accountId).changes;
  }

  removeExpired(now: string, idleCutoff: string): number {
    return this.s.removeExpired.run(now, idleCutoff).changes;
  }

  count(): number {
    return this.s.count.get() as number;
  }
}
