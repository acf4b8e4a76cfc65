import type { Sql } from '../db/sql.ts';

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
  insert(session: StoredAdminSession): Promise<void>;
  byHash(idHash: string): Promise<StoredAdminSession | undefined>;
  touch(idHash: string, at: string): Promise<void>;
  remove(idHash: string): Promise<void>;
  /** The sessions of an account (with `unowned`, also those from before accounts existed: the owner's), newest first. */
  ofAccount(accountId: number, unowned: boolean): Promise<StoredAdminSession[]>;
  /** Ends the account's session with this public id; false when it has none. */
  removeOneOfAccount(accountId: number, publicId: string, unowned: boolean): Promise<boolean>;
  /** Ends the account's sessions but `keepHash`'s; how many ended. */
  removeOthers(accountId: number, keepHash: string | null, unowned: boolean): Promise<number>;
  setCredential(idHash: string, credential: string): Promise<void>;
  removeOfAccount(accountId: number): Promise<number>;
  /** Ends the sessions past their maximum age or unused since `idleCutoff`; how many ended. */
  removeExpired(now: string, idleCutoff: string): Promise<number>;
  count(): Promise<number>;
}

export class SqliteAdminSessionRepository implements AdminSessionRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      insert: `INSERT INTO admin_sessions (id_hash, public_id, account_id, credential, address, user_agent, created_at, last_used_at, expires_at)
         VALUES (@id_hash, @public_id, @account_id, @credential, @address, @user_agent, @created_at, @last_used_at, @expires_at)`,
      ofAccount: `SELECT * FROM admin_sessions WHERE account_id = @id OR (@unowned = 1 AND account_id IS NULL) ORDER BY created_at DESC`,
      removeOneOfAccount: `DELETE FROM admin_sessions WHERE public_id = @publicId AND (account_id = @id OR (@unowned = 1 AND account_id IS NULL))`,
      removeOthers: `DELETE FROM admin_sessions WHERE (account_id = @id OR (@unowned = 1 AND account_id IS NULL)) AND id_hash IS NOT @keep`,
      setCredential: `UPDATE admin_sessions SET credential = ? WHERE id_hash = ?`,
      byHash: `SELECT * FROM admin_sessions WHERE id_hash = ?`,
      touch: `UPDATE admin_sessions SET last_used_at = ? WHERE id_hash = ?`,
      remove: `DELETE FROM admin_sessions WHERE id_hash = ?`,
      removeOfAccount: `DELETE FROM admin_sessions WHERE account_id = ?`,
      removeExpired: `DELETE FROM admin_sessions WHERE expires_at <= ? OR last_used_at < ?`,
      count: `SELECT count(*) FROM admin_sessions`,
    };
  }

  async insert(session: StoredAdminSession): Promise<void> {
    await this.sql.run(this.s.insert, { ...session });
  }

  async byHash(idHash: string): Promise<StoredAdminSession | undefined> {
    return (await this.sql.get(this.s.byHash, [idHash])) as StoredAdminSession | undefined;
  }

  async touch(idHash: string, at: string): Promise<void> {
    await this.sql.run(this.s.touch, [at, idHash]);
  }

  async remove(idHash: string): Promise<void> {
    await this.sql.run(this.s.remove, [idHash]);
  }

  async ofAccount(accountId: number, unowned: boolean): Promise<StoredAdminSession[]> {
    return (await this.sql.all(this.s.ofAccount, { id: accountId, unowned: unowned ? 1 : 0 })) as StoredAdminSession[];
  }

  async removeOneOfAccount(accountId: number, publicId: string, unowned: boolean): Promise<boolean> {
    return (await this.sql.run(this.s.removeOneOfAccount, { id: accountId, publicId, unowned: unowned ? 1 : 0 })).changes === 1;
  }

  async removeOthers(accountId: number, keepHash: string | null, unowned: boolean): Promise<number> {
    return (await this.sql.run(this.s.removeOthers, { id: accountId, keep: keepHash, unowned: unowned ? 1 : 0 })).changes;
  }

  async setCredential(idHash: string, credential: string): Promise<void> {
    await this.sql.run(this.s.setCredential, [credential, idHash]);
  }

  async removeOfAccount(accountId: number): Promise<number> {
    return (await this.sql.run(this.s.removeOfAccount, [accountId])).changes;
  }

  async removeExpired(now: string, idleCutoff: string): Promise<number> {
    return (await this.sql.run(this.s.removeExpired, [now, idleCutoff])).changes;
  }

  async count(): Promise<number> {
    return (await this.sql.value(this.s.count)) as number;
  }
}
