import type { Sql } from '../db/sql.ts';

/** What one hit on a bucket left: whether it passed, and the bucket's theoretical arrival time. */
export interface RateHit {
  allowed: boolean;
  tatMs: number;
}

/**
 * The rate_limits table: one row per limited key, the bucket kept as its theoretical arrival time
 * (GCRA, equivalent to a token bucket). Each hit is one statement, atomic on both engines, so a
 * limit holds across every node on one database; the times are computed by the caller.
 */
export class RateLimitRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    // The bucket's next arrival time if this hit passes: from its tat, or from now once it is full.
    const next = `(CASE WHEN rate_limits.tat_ms > @now THEN rate_limits.tat_ms ELSE @now END) + @interval`;
    this.s = {
      hit: `INSERT INTO rate_limits (key, tat_ms, allowed) VALUES (@key, @first, @firstAllowed)
        ON CONFLICT (key) DO UPDATE SET
          allowed = CASE WHEN ${next} <= @limit THEN 1 ELSE 0 END,
          tat_ms = CASE WHEN ${next} <= @limit THEN ${next} ELSE rate_limits.tat_ms END
        RETURNING tat_ms, allowed`,
      tat: `SELECT tat_ms FROM rate_limits WHERE key = ?`,
      sweep: `DELETE FROM rate_limits WHERE tat_ms <= ?`,
    };
  }

  /**
   * One hit on `key`'s bucket at `nowMs`: it passes when the bucket's next arrival time stays within
   * `windowMs` (the burst) of now, and then moves on by `intervalMs`.
   */
  async hit(key: string, nowMs: number, intervalMs: number, windowMs: number): Promise<RateHit> {
    const firstAllowed = intervalMs <= windowMs;
    const row = (await this.sql.get<{ tat_ms: number; allowed: number }>(this.s.hit, {
      key,
      now: nowMs,
      interval: intervalMs,
      limit: nowMs + windowMs,
      first: firstAllowed ? nowMs + intervalMs : nowMs,
      firstAllowed: firstAllowed ? 1 : 0,
    }))!;
    return { allowed: Number(row.allowed) === 1, tatMs: Number(row.tat_ms) };
  }

  /** The bucket's theoretical arrival time, or undefined for a key never limited (or swept). */
  async tat(key: string): Promise<number | undefined> {
    const tat = await this.sql.value<number>(this.s.tat, [key]);
    return tat === undefined ? undefined : Number(tat);
  }

  /** Forgets the buckets full again at `nowMs` (they would start full anyway); how many went. */
  async sweep(nowMs: number): Promise<number> {
    return (await this.sql.run(this.s.sweep, [nowMs])).changes;
  }
}
