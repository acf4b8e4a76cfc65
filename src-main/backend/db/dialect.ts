import type { SqlEngine } from './sql.ts';

/**
 * The few SQL fragments SQLite and PostgreSQL write differently, for the repositories: a repository
 * builds its statements once with `dialect(sql.engine)` and stays one file for both engines.
 * Everything else is written in SQL both accept (see db/sql.ts): `INSERT … ON CONFLICT DO
 * NOTHING` rather than `INSERT OR IGNORE`, `… RETURNING id` rather than last_insert_rowid, times
 * computed in TypeScript as ISO strings rather than strftime/datetime, explicit `NULLS FIRST/LAST`
 * where NULLs sort (SQLite puts them first ascending, PostgreSQL last), `substr`/`length`/`lower`/
 * `coalesce`/`||` (the same on both).
 *
 * Parameters are written as the repository passes them (`?`, `@name`). A parameter that may be
 * NULL and is tested with `IS NULL` is cast here on PostgreSQL, which must know each parameter's type.
 */
export interface Dialect {
  readonly engine: SqlEngine;
  /**
   * The ids of a JSON array parameter (`'[1,2,3]'`) as a subquery, for `x IN ${jsonIds('?')}`.
   * SQLite: json_each; PostgreSQL: json_array_elements_text.
   */
  jsonIds(param: string): string;
  /**
   * The condition on a fleet column for the `@fleets` parameter (fleets/scope.ts,
   * fleetScopeParam): NULL for every fleet, else a JSON array of the fleets' ids.
   */
  inFleets(column: string, param?: string): string;
  /** `column` equals `param`, ignoring case (SQLite: COLLATE NOCASE; PostgreSQL: lower() = lower()). */
  equalsIgnoringCase(column: string, param: string): string;
  /** An ORDER BY term that ignores case. */
  orderIgnoringCase(column: string): string;
  /** Whether `haystack` contains `needle` as a substring (SQLite: instr; PostgreSQL: strpos). */
  contains(haystack: string, needle: string): string;
  /** The LIKE that ignores case, as SQLite's LIKE does (PostgreSQL: ILIKE). */
  readonly likeIgnoringCase: 'LIKE' | 'ILIKE';
  /**
   * A JSON array (as text) of `expression` over the rows of `from` (a FROM … WHERE … clause),
   * ordered by `orderBy`; '[]' when there are none.
   */
  jsonArrayOf(expression: string, from: string, orderBy: string): string;
  /** `OFFSET param` with no limit (SQLite needs LIMIT -1 before it). */
  offsetOnly(param: string): string;
  /** `a` equals `b`, NULL equal to NULL (SQLite: IS; PostgreSQL: IS NOT DISTINCT FROM). */
  same(a: string, b: string): string;
  /** `a` differs from `b`, NULL differing from any value (SQLite: IS NOT; PostgreSQL: IS DISTINCT FROM). */
  differs(a: string, b: string): string;
  /**
   * The end of a SELECT that locks the rows it picks (of the tables `of`, all when absent) and passes
   * over rows another transaction holds: how a queue's row is claimed by one node while the others
   * take the next ones (PostgreSQL: `FOR NO KEY UPDATE … SKIP LOCKED`, the row lock an UPDATE of
   * non-key columns takes, so inserts that reference the row are not held up). SQLite has one writer
   * and no row locks: nothing.
   */
  skipLocked(of?: string): string;
}

const sqlite: Dialect = {
  engine: 'sqlite',
  jsonIds: (param) => `(SELECT value FROM json_each(${param}))`,
  inFleets: (column, param = '@fleets') => `(${param} IS NULL OR ${column} IN (SELECT value FROM json_each(${param})))`,
  equalsIgnoringCase: (column, param) => `${column} = ${param} COLLATE NOCASE`,
  orderIgnoringCase: (column) => `${column} COLLATE NOCASE`,
  contains: (haystack, needle) => `instr(${haystack}, ${needle}) > 0`,
  likeIgnoringCase: 'LIKE',
  jsonArrayOf: (expression, from, orderBy) =>
    `(SELECT json_group_array(${expression}) FROM (SELECT ${expression} ${from} ORDER BY ${orderBy}))`,
  offsetOnly: (param) => `LIMIT -1 OFFSET ${param}`,
  same: (a, b) => `${a} IS ${b}`,
  differs: (a, b) => `${a} IS NOT ${b}`,
  skipLocked: () => '',
};

const postgres: Dialect = {
  engine: 'postgres',
  jsonIds: (param) => `(SELECT value::bigint FROM json_array_elements_text(CAST(${param} AS json)))`,
  inFleets: (column, param = '@fleets') =>
    `(CAST(${param} AS json) IS NULL OR ${column} IN (SELECT value::bigint FROM json_array_elements_text(CAST(${param} AS json))))`,
  equalsIgnoringCase: (column, param) => `lower(${column}) = lower(${param})`,
  orderIgnoringCase: (column) => `lower(${column})`,
  contains: (haystack, needle) => `strpos(${haystack}, ${needle}) > 0`,
  likeIgnoringCase: 'ILIKE',
  jsonArrayOf: (expression, from, orderBy) =>
    `(SELECT coalesce(json_agg(${expression} ORDER BY ${orderBy})::text, '[]') ${from})`,
  offsetOnly: (param) => `OFFSET ${param}`,
  same: (a, b) => `${a} IS NOT DISTINCT FROM ${b}`,
  differs: (a, b) => `${a} IS DISTINCT FROM ${b}`,
  skipLocked: (of) => ` FOR NO KEY UPDATE${of ? ` OF ${of}` : ''} SKIP LOCKED`,
};

export function dialect(engine: SqlEngine): Dialect {
  return engine === 'postgres' ? postgres : sqlite;
}
