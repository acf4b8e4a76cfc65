import type { Sql } from '../db/sql.ts';
import { dialect } from '../db/dialect.ts';

/** A stored session with its user's kind and login (kind null: the user is gone). */
export interface StoredSession {
  token: string;
  user_id: number;
  active_profile_id: number;
  entity_id: number;
  created_at: string;
  last_used_at: string;
  agent_id: number | null;
  enrolled_at: string | null;
  /** Its number in opening order (null: opened before sessions were numbered). */
  seq: number | null;
  address: string | null;
  kind: 'person' | 'agent' | null;
  login: string;
}

export interface NewSession {
  token: string;
  userId: number;
  profileId: number;
  entityId: number;
  at: string;
  /** The client address it was opened from (null: unknown). */
  address?: string | null;
}

/**
 * When a session of an enrollment code's account is still needed by the device that opened it:
 * its enrollment is under way (no agent yet, opened after `enrollingSince`) or just done (enrolled
 * after `enrolledSince`, so the device can still read its record). Other sessions may be ended.
 */
export interface InUse {
  enrollingSince: string;
  enrolledSince: string;
}

/** The sessions table, as the session service uses it. */
export interface SessionRepository {
  insert(session: NewSession): Promise<void>;
  /** Ends the user's sessions beyond the `keep` most recently used. */
  keepNewestOf(userId: number, keep: number): Promise<void>;
  /** The user's sessions (opened from `address`, when given; null is an address of its own). */
  countOf(userId: number, address?: string | null): Promise<number>;
  /** Ends the user's oldest session (from `address`, when given) that is not in use; whether there was one. */
  removeOldestNotInUse(userId: number, inUse: InUse, address?: string | null): Promise<boolean>;
  byToken(token: string): Promise<StoredSession | undefined>;
  touch(token: string, at: string): Promise<void>;
  setProfile(token: string, profileId: number, entityId: number): Promise<void>;
  bindEnrollment(token: string, agentId: number, at: string): Promise<void>;
  remove(token: string): Promise<void>;
  removeOfUser(userId: number): Promise<void>;
  /** Ends the sessions last used before `cutoff`; how many ended. */
  removeUnusedSince(cutoff: string): Promise<number>;
  count(): Promise<number>;
}

export class SqliteSessionRepository implements SessionRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    const d = dialect(sql.engine);
    this.s = {
      // seq: past every session's number and every agent's enrolling session's (so never one given
      // before, even once those sessions are gone). Two sessions opened at once on two nodes may get
      // the same number; a session opened after another's opening was committed always gets a
      // higher one, and that is the order enrollment compares (a device's sessions follow each other).
      insert: `INSERT INTO sessions (token, user_id, active_profile_id, entity_id, created_at, last_used_at, address, seq)
         VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(m.n), 0) + 1 FROM
           (SELECT max(seq) AS n FROM sessions UNION ALL SELECT max(enrolled_session_seq) AS n FROM agents) AS m))`,
      countOfUser: `SELECT count(*) FROM sessions WHERE user_id = ?`,
      countOfAddress: `SELECT count(*) FROM sessions WHERE user_id = ? AND ${d.same('address', '?')}`,
      removeOldestOfUser: `DELETE FROM sessions WHERE token = (
           SELECT token FROM sessions WHERE user_id = @userId
             AND ((agent_id IS NULL AND created_at < @enrollingSince) OR (agent_id IS NOT NULL AND enrolled_at < @enrolledSince))
           ORDER BY created_at LIMIT 1)`,
      removeOldestOfAddress: `DELETE FROM sessions WHERE token = (
           SELECT token FROM sessions WHERE user_id = @userId AND ${d.same('address', '@address')}
             AND ((agent_id IS NULL AND created_at < @enrollingSince) OR (agent_id IS NOT NULL AND enrolled_at < @enrolledSince))
           ORDER BY created_at LIMIT 1)`,
      // Subqueries, not a JOIN: SQLite runs this (every agent request) about 3x faster so.
      byToken: `SELECT s.*, (SELECT kind FROM users WHERE id = s.user_id) AS kind, (SELECT login FROM users WHERE id = s.user_id) AS login
         FROM sessions s WHERE s.token = ?`,
      touch: `UPDATE sessions SET last_used_at = ? WHERE token = ?`,
      setProfile: `UPDATE sessions SET active_profile_id = ?, entity_id = ? WHERE token = ?`,
      remove: `DELETE FROM sessions WHERE token = ?`,
      removeOfUser: `DELETE FROM sessions WHERE user_id = ?`,
      // `user_id IN (?)`, not `= ?`: SQLite's planner reads the value bound to a `column = ?` it
      // weighs beside ORDER BY (or in a join), which makes better-sqlite3's clearing of the bindings
      // after each run expire the statement, so it was parsed and planned again on every
      // initSession (1.3% of an enrollment's CPU). `IN (?)` is the same condition on both engines.
      keepNewestOf: `DELETE FROM sessions WHERE token IN (
           SELECT token FROM sessions WHERE user_id IN (?)
             ORDER BY last_used_at DESC, ${sql.engine === 'sqlite' ? 'rowid' : 'created_at'} DESC ${d.offsetOnly('?')})`,
      bindEnrollment: `UPDATE sessions SET agent_id = ?, enrolled_at = ? WHERE token = ?`,
      removeUnusedSince: `DELETE FROM sessions WHERE last_used_at < ?`,
      count: `SELECT count(*) AS n FROM sessions`,
    };
  }

  async insert({ token, userId, profileId, entityId, at, address }: NewSession): Promise<void> {
    await this.sql.run(this.s.insert, [token, userId, profileId, entityId, at, at, address ?? null]);
  }

  async countOf(userId: number, address?: string | null): Promise<number> {
    return (
      address === undefined
        ? await this.sql.value(this.s.countOfUser, [userId])
        : await this.sql.value(this.s.countOfAddress, [userId, address])
    ) as number;
  }

  async removeOldestNotInUse(userId: number, inUse: InUse, address?: string | null): Promise<boolean> {
    const params = { userId, ...inUse };
    const result =
      address === undefined
        ? await this.sql.run(this.s.removeOldestOfUser, params)
        : await this.sql.run(this.s.removeOldestOfAddress, { ...params, address });
    return result.changes > 0;
  }

  async keepNewestOf(userId: number, keep: number): Promise<void> {
    await this.sql.run(this.s.keepNewestOf, [userId, keep]);
  }

  async byToken(token: string): Promise<StoredSession | undefined> {
    return (await this.sql.get(this.s.byToken, [token])) as StoredSession | undefined;
  }

  async touch(token: string, at: string): Promise<void> {
    await this.sql.run(this.s.touch, [at, token]);
  }

  async setProfile(token: string, profileId: number, entityId: number): Promise<void> {
    await this.sql.run(this.s.setProfile, [profileId, entityId, token]);
  }

  async bindEnrollment(token: string, agentId: number, at: string): Promise<void> {
    await this.sql.run(this.s.bindEnrollment, [agentId, at, token]);
  }

  async remove(token: string): Promise<void> {
    await this.sql.run(this.s.remove, [token]);
  }

  async removeOfUser(userId: number): Promise<void> {
    await this.sql.run(this.s.removeOfUser, [userId]);
  }

  async removeUnusedSince(cutoff: string): Promise<number> {
    return (await this.sql.run(this.s.removeUnusedSince, [cutoff])).changes;
  }

  async count(): Promise<number> {
    return (await this.sql.value(this.s.count)) as number;
  }
}
