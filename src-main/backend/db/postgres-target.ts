/**
 * An empty PostgreSQL database to copy an office's data into (`migrate-db`, and `restore` in
 * PostgreSQL mode): reached, checked to be empty, given MDM Console's schema by the PostgreSQL
 * migrator, and then filled in one transaction that proves its copy before it commits.
 *
 * "Empty" is: no tables at all, or MDM Console's schema holding nothing but the rows its own
 * migrations put there (the root entity, the three profiles, the default fleet). A database a
 * server has run on (settings, tokens, anything more), or one at a newer schema, is refused, so
 * nothing anyone keeps is ever overwritten.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { StartupError } from '../startup-error.ts';
import {
  assertSameCopies,
  assertSameTables,
  copyClient,
  CopyError,
  copyTableToPostgres,
  postgresChecksum,
  postgresTables,
  quote,
  resetIdentities,
  type CopyOptions,
  type TableCopy,
  type TableShape,
} from './copy-tables.ts';
import { OLDEST_POSTGRES, openPostgresDatabase } from './postgres-database.ts';
import { postgresMigrations } from './postgres-migrations.ts';
import { checkDatabaseUrl, explainPostgresError, redactedUrl } from './postgres-sql.ts';

/** The rows MDM Console's own migrations insert, per table: what an unused database holds. */
export function seedRows(): Map<string, number> {
  const seeds = new Map<string, number>();
  for (const migration of postgresMigrations) {
    for (const match of migration.sql.matchAll(/\bINSERT\s+INTO\s+([a-z_][a-z0-9_]*)/gi)) {
      const table = match[1]!.toLowerCase();
      seeds.set(table, (seeds.get(table) ?? 0) + 1);
    }
  }
  return seeds;
}

export const latestPostgresVersion = () => Math.max(...postgresMigrations.map((m) => m.version));

/** Connects, saying what is wrong in the terms of the URL given (never a driver's stack). */
async function connect(url: string): Promise<pg.Client> {
  checkDatabaseUrl(url);
  const client = copyClient(url);
  try {
    await client.connect();
    const version = Number((await client.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`)).rows[0]!.v);
    if (version < OLDEST_POSTGRES * 10000) {
      throw new StartupError(
        `PostgreSQL at ${redactedUrl(url)} is version ${Math.floor(version / 10000)}; MDM Console needs ${OLDEST_POSTGRES} or newer.`,
        { code: 'EPOSTGRESOLD', option: 'databaseUrl' },
      );
    }
    return client;
  } catch (error) {
    await client.end().catch(() => {});
    throw explainPostgresError(error, url);
  }
}

/** The tables of ours that hold more than the migrations' own rows: "agents (12 rows)". */
async function rowsBeyondSeed(client: pg.Client, tables: TableShape[]): Promise<string[]> {
  const seeds = seedRows();
  const found: string[] = [];
  for (const table of tables) {
    const allowed = seeds.get(table.name) ?? 0;
    const count = Number(
      (await client.query<{ n: string }>(`SELECT count(*) AS n FROM (SELECT 1 FROM ${quote(table.name)} LIMIT ${allowed + 1}) s`))
        .rows[0]!.n,
    );
    if (count > allowed) {
      const total = (await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${quote(table.name)}`)).rows[0]!.n;
      found.push(`${table.name} (${total} row${total === '1' ? '' : 's'})`);
    }
  }
  return found;
}

export interface EmptyTarget {
  /** A connection of its own for the copy's transaction; `end()` it when done. */
  client: pg.Client;
  tables: TableShape[];
  schemaVersion: number;
}

/**
 * Checks that the database of `url` is empty (see above) and gives it MDM Console's schema with
 * the PostgreSQL migrator.
 */
export async function prepareEmptyTarget(url: string): Promise<EmptyTarget> {
  const where = redactedUrl(url);
  const startOver =
    "Give it an empty database: create one (CREATE DATABASE …, owned by the URL's user), or drop and recreate this one if what it holds is not wanted.";
  let client = await connect(url);
  try {
    const hasVersion =
      (await client.query<{ r: string | null }>(`SELECT to_regclass('schema_version')::text AS r`)).rows[0]!.r !== null;
    const version = hasVersion
      ? Number((await client.query<{ v: string }>('SELECT coalesce(max(version), 0) AS v FROM schema_version')).rows[0]!.v)
      : 0;
    const latest = latestPostgresVersion();
    if (version > latest) {
      throw new CopyError(
        `the PostgreSQL database ${where} holds MDM Console data of a newer version (schema ${version}; this version knows up to ${latest}): it is not an empty database. ${startOver}`,
      );
    }
    const tables = await postgresTables(client);
    if (version === 0 && tables.length > 0) {
      throw new CopyError(
        `the PostgreSQL database ${where} already holds tables that are not MDM Console's (${tables
          .slice(0, 5)
          .map((t) => t.name)
          .join(', ')}). ${startOver}`,
      );
    }
    const used = await rowsBeyondSeed(client, tables);
    if (used.length > 0) {
      throw new CopyError(
        `the PostgreSQL database ${where} is not empty: it holds MDM Console data (${used.slice(0, 6).join(', ')}${used.length > 6 ? ', …' : ''}). Nothing was copied, so nothing there is overwritten. ${startOver}`,
      );
    }
    // The schema, by the migrator every server runs (from nothing, or on from an older empty one).
    if (version < latest) {
      await client.end();
      const sql = await openPostgresDatabase(url, { poolSize: 1 });
      await sql.close();
      client = await connect(url);
    }
    return { client, tables: await postgresTables(client), schemaVersion: latest };
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
}

export interface FillResult {
  tables: TableCopy[];
  rows: number;
  seconds: number;
}

/**
 * Copies every table of the SQLite database into the prepared target in one transaction: the
 * target's own rows (the migrations' seed) go first, then each table parents first, then the
 * identity sequences go past the copied ids, then each table is read back and compared (row count
 * and checksum) with what SQLite holds. Only a copy that matches is committed: any failure, or an
 * interruption (`signal`), rolls it all back and the database holds only the empty schema again.
 * `beforeCommit` runs last inside the transaction (the stored files' check, say).
 */
export async function fillFromSqlite(
  target: EmptyTarget,
  sqlite: Database.Database,
  what: string,
  options: CopyOptions & { beforeCommit?: () => Promise<void> } = {},
): Promise<FillResult> {
  const { client, tables } = target;
  const sqliteVersion = sqlite.pragma('user_version', { simple: true }) as number;
  if (sqliteVersion !== target.schemaVersion) {
    throw new CopyError(
      `the SQLite database is at schema ${sqliteVersion} and PostgreSQL at ${target.schemaVersion}: run the same MDM Console version for both.`,
    );
  }
  assertSameTables(sqlite, tables, what);
  const broken = sqlite.pragma('foreign_key_check') as { table: string; rowid: number; parent: string }[];
  if (broken.length > 0) {
    const first = broken[0]!;
    throw new CopyError(
      `the SQLite database has ${broken.length} row(s) referring to rows that no longer exist (e.g. ${first.table} row ${first.rowid} → ${first.parent}); PostgreSQL would refuse them. Nothing was copied.`,
    );
  }
  const started = process.hrtime.bigint();
  const names = tables.map((t) => quote(t.name)).join(', ');
  await client.query('BEGIN');
  try {
    // Nobody else writes meanwhile (a server started on it by mistake waits, or the lock times out).
    await client.query(`SET LOCAL lock_timeout = '10s'`);
    try {
      await client.query(`LOCK TABLE ${names} IN ACCESS EXCLUSIVE MODE`);
    } catch (error) {
      if ((error as { code?: string }).code === '55P03') {
        throw new CopyError(
          `the PostgreSQL database is in use (a server running on it?): its tables could not be locked within 10 s. Stop what uses it and run the command again.`,
        );
      }
      throw error;
    }
    const used = await rowsBeyondSeed(client, tables);
    if (used.length > 0)
      throw new CopyError(`the PostgreSQL database is no longer empty (${used.join(', ')}): nothing was copied.`);
    // The seed rows go (children first): the copy brings the office's own (its root entity,
    // profiles, fleets). Every other table was found empty.
    const seeds = seedRows();
    for (const table of [...tables].reverse()) if (seeds.has(table.name)) await client.query(`DELETE FROM ${quote(table.name)}`);
    const copied: TableCopy[] = [];
    for (const table of tables) copied.push(await copyTableToPostgres(sqlite, client, table, options));
    await resetIdentities(client, tables);
    const check: TableCopy[] = [];
    for (const table of tables) check.push(await postgresChecksum(client, table));
    assertSameCopies(copied, check, 'The copy in PostgreSQL');
    await options.beforeCommit?.();
    await client.query('COMMIT');
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return { tables: copied, rows: copied.reduce((sum, t) => sum + t.rows, 0), seconds };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}
