/**
 * The one door to the database for every repository, whichever engine runs: SQLite (the embedded
 * default, better-sqlite3) or PostgreSQL (`serve --database-url`). Repositories are written once
 * over this port in SQL both engines accept; where they differ, a repository asks `sql.engine` (or
 * a helper in db/dialect.ts) rather than being written twice. Domain rooms never see which engine
 * runs.
 *
 * Parameters: positional `?` with an array, or named `@name` with an object (as better-sqlite3
 * takes them); the PostgreSQL driver rewrites both into `$n`. Values are strings, numbers, null,
 * bigints or Buffers; booleans are stored as 0/1 integers on both engines.
 *
 * Transactions: `transaction(work)` runs `work` in one transaction carried by AsyncLocalStorage,
 * so every query issued while `work` runs, however deep, joins it; a nested call joins the outer
 * one. Queries outside a transaction never see another's uncommitted rows (the SQLite driver
 * queues them behind an open transaction, the PostgreSQL driver uses another pooled connection).
 */
export type SqlValue = string | number | bigint | null | Buffer;
export type SqlParams = readonly SqlValue[] | Readonly<Record<string, SqlValue | undefined>>;

export type SqlEngine = 'sqlite' | 'postgres';

export interface SqlRunResult {
  /** Rows inserted, updated or deleted. */
  changes: number;
}

export interface Sql {
  readonly engine: SqlEngine;
  /** Every row. */
  all<T>(text: string, params?: SqlParams): Promise<T[]>;
  /** The first row, or undefined. */
  get<T>(text: string, params?: SqlParams): Promise<T | undefined>;
  /** The first column of the first row, or undefined. */
  value<T>(text: string, params?: SqlParams): Promise<T | undefined>;
  /** A statement without rows (INSERT/UPDATE/DELETE). For a new id write `INSERT … RETURNING id` with `value`. */
  run(text: string, params?: SqlParams): Promise<SqlRunResult>;
  /** Several statements without parameters (migrations). */
  exec(text: string): Promise<void>;
  /** Runs `work` in one transaction (joining the open one, if any); rolls back if it throws. */
  transaction<T>(work: () => Promise<T>): Promise<T>;
  /** Whether the calling async context is inside a transaction. */
  inTransaction(): boolean;
  close(): Promise<void>;
}
