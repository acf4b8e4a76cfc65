import type { Db } from '../db/database.ts';

/** A console session as stored: the SHA-256 of its id, never the id the cookie carries. */
export interface StoredAdminSession {
  id_hash: string;
  /** A random id the API names the session by (the list of one's sessions, ending one). */
  public_id: string;
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
  /** The sessions of an account (with `unowned`, also those from before accounts existed: the owner's), newest first. */
  ofAccount(accountId: number, unowned: boolean): StoredAdminSession[];
  /** Ends the account's session with this public id; false when it has none. */
  removeOneOfAccount(accountId: number, publicId: string, unowned: boolean): boolean;
  /** Ends the account's sessions but `keepHash`'s; how many ended. */
  removeOthers(accountId: number, keepHash: string | null, unowned: boolean): number;
  setCredential(idHash: string, credential: string): void;
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
        `INSERT INTO admin_sessions (id_hash, public_id, account_id, credential, address, user_agent, created_at, last_used_at, expires_at)
         VALUES (@id_hash, @public_id, @account_id, @credential, @address, @user_agent, @created_at, @last_used_at, @expires_at)`,
      ),
      ofAccount: db.prepare(
        `SELECT * FROM admin_sessions WHERE account_id = @id OR (@unowned = 1 AND account_id IS NULL) ORDER BY created_at DESC`,
      ),
      removeOneOfAccount: db.prepare(
        `DELETE FROM admin_sessions WHERE public_id = @publicId AND (account_id = @id OR (@unowned = 1 AND account_id IS NULL))`,
      ),
      removeOthers: db.prepare(
        `DELETE FROM admin_sessions WHERE (account_id = @id OR (@unowned = 1 AND account_id IS NULL)) AND id_hash IS NOT @keep`,
      ),
      setCredential: db.prepare(`UPDATE admin_sessions SET credential = ? WHERE id_hash = ?`),
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

  ofAccount(accountId: number, unowned: boolean): StoredAdminSession[] {
    return this.s.ofAccount.all({ id: accountId, unowned: unowned ? 1 : 0 }) as StoredAdminSession[];
  }

  removeOneOfAccount(accountId: number, publicId: string, unowned: boolean): boolean {
    return this.s.removeOneOfAccount.run({ id: accountId, publicId, unowned: unowned ? 1 : 0 }).changes === 1;
  }

  removeOthers(accountId: number, keepHash: string | null, unowned: boolean): number {
    return this.s.removeOthers.run({ id: accountId, keep: keepHash, unowned: unowned ? 1 : 0 }).changes;
  }

  setCredential(idHash: string, credential: string): void {
    this.s.setCredential.run(credential, idHash);
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
