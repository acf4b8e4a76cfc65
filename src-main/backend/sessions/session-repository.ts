import type { Db } from '../db/database.ts';

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
  insert(session: NewSession): void;
  /** Ends the user's sessions beyond the `keep` most recently used. */
  keepNewestOf(userId: number, keep: number): void;
  /** The user's sessions (opened from `address`, when given; null is an address of its own). */
  countOf(userId: number, address?: string | null): number;
  /** Ends the user's oldest session (from `address`, when given) that is not in use; whether there was one. */
  removeOldestNotInUse(userId: number, inUse: InUse, address?: string | null): boolean;
  byToken(token: string): StoredSession | undefined;
  touch(token: string, at: string): void;
  setProfile(token: string, profileId: number, entityId: number): void;
  bindEnrollment(token: string, agentId: number, at: string): void;
  remove(token: string): void;
  removeOfUser(userId: number): void;
  /** Ends the sessions last used before `cutoff`; how many ended. */
  removeUnusedSince(cutoff: string): number;
  count(): number;
}

export class SqliteSessionRepository implements SessionRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO sessions (token, user_id, active_profile_id, entity_id, created_at, last_used_at, address) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      countOfUser: db.prepare(`SELECT count(*) FROM sessions WHERE user_id = ?`).pluck(),
      countOfAddress: db.prepare(`SELECT count(*) FROM sessions WHERE user_id = ? AND address IS ?`).pluck(),
      removeOldestOfUser: db.prepare(
        `DELETE FROM sessions WHERE token = (
           SELECT token FROM sessions WHERE user_id = @userId
             AND ((agent_id IS NULL AND created_at < @enrollingSince) OR (agent_id IS NOT NULL AND enrolled_at < @enrolledSince))
           ORDER BY created_at LIMIT 1)`,
      ),
      removeOldestOfAddress: db.prepare(
        `DELETE FROM sessions WHERE token = (
           SELECT token FROM sessions WHERE user_id = @userId AND address IS @address
             AND ((agent_id IS NULL AND created_at < @enrollingSince) OR (agent_id IS NOT NULL AND enrolled_at < @enrolledSince))
           ORDER BY created_at LIMIT 1)`,
      ),
      // Subqueries, not a JOIN: SQLite runs this (every agent request) about 3x faster so.
      byToken: db.prepare(
        `SELECT s.*, (SELECT kind FROM users WHERE id = s.user_id) AS kind, (SELECT login FROM users WHERE id = s.user_id) AS login
         FROM sessions s WHERE s.token = ?`,
      ),
      touch: db.prepare(`UPDATE sessions SET last_used_at = ? WHERE token = ?`),
      setProfile: db.prepare(`UPDATE sessions SET active_profile_id = ?, entity_id = ? WHERE token = ?`),
      remove: db.prepare(`DELETE FROM sessions WHERE token = ?`),
      removeOfUser: db.prepare(`DELETE FROM sessions WHERE user_id = ?`),
      keepNewestOf: db.prepare(
        `DELETE FROM sessions WHERE token IN (
           SELECT token FROM sessions WHERE user_id = ? ORDER BY last_used_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
      ),
      bindEnrollment: db.prepare(`UPDATE sessions SET agent_id = ?, enrolled_at = ? WHERE token = ?`),
      removeUnusedSince: db.prepare(`DELETE FROM sessions WHERE last_used_at < ?`),
      count: db.prepare(`SELECT count(*) AS n FROM sessions`).pluck(),
    };
  }

  insert({ token, userId, profileId, entityId, at, address }: NewSession): void {
    this.s.insert.run(token, userId, profileId, entityId, at, at, address ?? null);
  }

  countOf(userId: number, address?: string | null): number {
    return (address === undefined ? this.s.countOfUser.get(userId) : this.s.countOfAddress.get(userId, address)) as number;
  }

  removeOldestNotInUse(userId: number, inUse: InUse, address?: string | null): boolean {
    const params = { userId, ...inUse };
    const result =
      address === undefined ? this.s.removeOldestOfUser.run(params) : this.s.removeOldestOfAddress.run({ ...params, address });
    return result.changes > 0;
  }

  keepNewestOf(userId: number, keep: number): void {
    this.s.keepNewestOf.run(userId, keep);
  }

  byToken(token: string): StoredSession | undefined {
    return this.s.byToken.get(token) as StoredSession | undefined;
  }

  touch(token: string, at: string): void {
    this.s.touch.run(at, token);
  }

  setProfile(token: string, profileId: number, entityId: number): void {
    this.s.setProfile.run(profileId, entityId, token);
  }

  bindEnrollment(token: string, agentId: number, at: string): void {
    this.s.bindEnrollment.run(agentId, at, token);
  }

  remove(token: string): void {
    this.s.remove.run(token);
  }

  removeOfUser(userId: number): void {
    this.s.removeOfUser.run(userId);
  }

  removeUnusedSince(cutoff: string): number {
    return this.s.removeUnusedSince.run(cutoff).changes;
  }

  count(): number {
    return this.s.count.get() as number;
  }
}
