/**
 * Locks a process holds for as long as it lives, released by the database itself when the
 * process dies (a `kill -9`, a lost machine): PostgreSQL session-level advisory locks, each on a
 * connection of its own outside the pool. Keys are two 32-bit integers: a space (what kind of
 * lock) and a key within it.
 *
 * On SQLite there is one node per database (the data dir's lock, db/data-dir-lock.ts, keeps any
 * other process out), so every lock is this process's: taking one always succeeds.
 */
import pg from 'pg';
import { PostgresSql } from './postgres-sql.ts';
import type { Sql } from './sql.ts';

export interface SessionLock {
  /** False once the connection holding it has broken (the database then released the lock). */
  held(): boolean;
  release(): Promise<void>;
  /** Drops the connection without waiting for the database (which no longer holds the lock). */
  abandon(): void;
}

const ALWAYS_HELD: SessionLock = { held: () => true, release: () => Promise.resolve(), abandon: () => {} };

/** Takes the lock (space, key) if no other session holds it; null when one does. */
export async function trySessionLock(sql: Sql, space: number, key: number): Promise<SessionLock | null> {
  if (!(sql instanceof PostgresSql)) return ALWAYS_HELD;
  const client = new pg.Client({
    connectionString: sql.pool.options.connectionString,
    application_name: 'mdm-console lock',
    connectionTimeoutMillis: sql.pool.options.connectionTimeoutMillis,
    // Never queried after taking the lock: TCP keepalive lets a dead peer be noticed.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  let broken = false;
  // A broken connection must not end the process: the lock is gone, which held() says.
  client.on('error', () => {
    broken = true;
  });
  client.on('end', () => {
    broken = true;
  });
  await client.connect();
  let ok = false;
  try {
    const result = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::int, $2::int) AS ok', [space, key]);
    ok = result.rows[0]?.ok === true;
  } finally {
    if (!ok) await client.end().catch(() => {});
  }
  if (!ok) return null;
  return {
    held: () => !broken,
    release: async () => {
      if (broken) return;
      broken = true;
      // Ending the session releases its locks.
      await client.end().catch(() => {});
    },
    abandon: () => {
      broken = true;
      // Not awaited: a half-open connection never answers (keepalive closes its socket in time).
      void client.end().catch(() => {});
    },
  };
}

/**
 * The keys of `space` whose lock some session holds now, on this database; null on SQLite, where
 * only this process can hold any.
 */
export async function heldSessionLocks(sql: Sql, space: number): Promise<Set<number> | null> {
  if (sql.engine !== 'postgres') return null;
  // Two-integer advisory locks show as classid = space, objid = key, objsubid = 2.
  const rows = await sql.all<{ key: number }>(
    `SELECT objid::bigint AS key FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = ?::bigint::oid
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [space],
  );
  return new Set(rows.map((row) => Number(row.key)));
}

/** Within the calling transaction, waits for the transaction-level lock (space, key) (PostgreSQL; SQLite's writer lock already serializes). */
export async function transactionLock(sql: Sql, space: number, key: number): Promise<void> {
  if (sql.engine !== 'postgres') return;
  await sql.value('SELECT pg_advisory_xact_lock(?::int, ?::int)', [space, key]);
}
