// The SQL of duty leases (migration 28): one row per duty, naming the node that holds it, until when,
// and its fence (a counter that grows by one each time the lease changes hands). Written in SQL both
// engines accept; times are ISO strings computed by the caller.
import type { Sql } from '../db/sql.ts';

export interface DutyLeaseRow {
  duty: string;
  holder: string;
  fence: number;
  acquired_at: string;
  renewed_at: string;
  expires_at: string;
}

export interface DutyRepository {
  /**
   * Takes the lease of `duty` for `holder` until `expiresAt`, or renews it: succeeds when nobody
   * holds it, when it has expired at `now`, or when it is still `holder`'s under `fence`. Returns
   * the lease's fence (a new one when it changed hands or had lapsed), or null when another node
   * holds it (or `holder` lost it: its fence is no longer the lease's).
   */
  acquire(duty: string, holder: string, fence: number, now: string, expiresAt: string): Promise<number | null>;
  /** Gives the lease up (it expires now), if it is still `holder`'s under `fence`; whether it was. */
  release(duty: string, holder: string, fence: number, now: string): Promise<boolean>;
  /** Every lease, expired or not, by duty. */
  list(): Promise<DutyLeaseRow[]>;
  /** Forgets every lease: the one node of a SQLite data dir, starting, holds none yet (a killed run's are stale). */
  clear(): Promise<void>;
}

export class SqlDutyRepository implements DutyRepository {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  async acquire(duty: string, holder: string, fence: number, now: string, expiresAt: string): Promise<number | null> {
    // One statement for both engines: a fresh row (fence 1), or the existing row updated only when
    // it has expired or is still the caller's under its fence. On PostgreSQL two nodes racing for an
    // expired lease serialize on the row: the second sees the first's new expiry in the WHERE and
    // gets no row back. The fence stays while the holder renews in time and grows otherwise.
    const fenceNow = await this.sql.value<number>(
      `INSERT INTO duty_leases (duty, holder, fence, acquired_at, renewed_at, expires_at)
       VALUES (@duty, @holder, 1, @now, @now, @expires)
       ON CONFLICT (duty) DO UPDATE SET
         fence = CASE WHEN duty_leases.expires_at > @now THEN duty_leases.fence ELSE duty_leases.fence + 1 END,
         acquired_at = CASE WHEN duty_leases.expires_at > @now THEN duty_leases.acquired_at ELSE @now END,
         holder = @holder,
         renewed_at = @now,
         expires_at = @expires
       WHERE duty_leases.expires_at <= @now OR (duty_leases.holder = @holder AND duty_leases.fence = @fence)
       RETURNING fence`,
      { duty, holder, fence, now, expires: expiresAt },
    );
    return fenceNow ?? null;
  }

  async release(duty: string, holder: string, fence: number, now: string): Promise<boolean> {
    const result = await this.sql.run(
      `UPDATE duty_leases SET expires_at = @now, renewed_at = @now
       WHERE duty = @duty AND holder = @holder AND fence = @fence AND expires_at > @now`,
      { duty, holder, fence, now },
    );
    return result.changes === 1;
  }

  async list(): Promise<DutyLeaseRow[]> {
    return this.sql.all<DutyLeaseRow>(
      `SELECT duty, holder, fence, acquired_at, renewed_at, expires_at FROM duty_leases ORDER BY duty`,
    );
  }

  async clear(): Promise<void> {
    await this.sql.run(`DELETE FROM duty_leases`);
  }
}
