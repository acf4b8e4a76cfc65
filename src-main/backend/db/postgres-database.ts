import { StartupError } from '../startup-error.ts';
import { postgresMigrations, type PostgresMigration } from './postgres-migrations.ts';
import { checkDatabaseUrl, explainPostgresError, PostgresSql, redactedUrl, type PostgresSqlOptions } from './postgres-sql.ts';

/** The oldest PostgreSQL the schema and the queries are written for. */
export const OLDEST_POSTGRES = 13;

/** The session-level advisory lock that one node holds while it migrates: "mdm-mig". */
const MIGRATION_LOCK = 0x6d646d6d6967;

export interface OpenPostgresOptions extends PostgresSqlOptions {
  migrations?: PostgresMigration[];
}

/**
 * Connects to the database of `url`, checks the server's version and migrates the schema. A
 * database that cannot be used (unreachable, wrong password, missing, too old, someone else's
 * tables, a newer schema) is a StartupError saying what to do.
 */
export async function openPostgresDatabase(url: string, options: OpenPostgresOptions = {}): Promise<PostgresSql> {
  checkDatabaseUrl(url);
  const sql = new PostgresSql(url, options);
  try {
    const version = Number(await sql.value<string>(`SELECT current_setting('server_version_num')`));
    if (version < OLDEST_POSTGRES * 10000) {
      throw new StartupError(
        `PostgreSQL at ${redactedUrl(url)} is version ${Math.floor(version / 10000)}; MDM Console needs ${OLDEST_POSTGRES} or newer.`,
        { code: 'EPOSTGRESOLD', option: 'databaseUrl' },
      );
    }
    await migratePostgres(sql, options.migrations ?? postgresMigrations, url);
    return sql;
  } catch (error) {
    await sql.close().catch(() => {});
    throw explainPostgresError(error, url);
  }
}

/**
 * Applies every migration newer than the database's schema_version, each in its own transaction.
 * Several nodes starting at once migrate once: each waits for the advisory lock, and reads the
 * version only once it holds it.
 */
export async function migratePostgres(sql: PostgresSql, migrations: PostgresMigration[], url = ''): Promise<number[]> {
  const applied: number[] = [];
  const client = await sql.pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_version (
        version     integer PRIMARY KEY,
        name        text NOT NULL,
        applied_at  text NOT NULL
      )`);
      const current = Number((await client.query('SELECT coalesce(max(version), 0) AS v FROM schema_version')).rows[0].v);
      const latest = Math.max(0, ...migrations.map((m) => m.version));
      if (current > latest) {
        throw new StartupError(
          `The PostgreSQL database ${redactedUrl(url)} was written by a newer version of MDM Console (database schema ${current}; ` +
            `this version knows up to ${latest}), so it is not used, to keep it intact. Run the newer version, or restore a backup.`,
          { code: 'ESCHEMANEWER', option: 'databaseUrl' },
        );
      }
      if (current === 0) {
        const foreign = (
          await client.query<{ name: string }>(
            `SELECT table_name AS name FROM information_schema.tables
              WHERE table_schema = current_schema() AND table_name <> 'schema_version' ORDER BY 1 LIMIT 5`,
          )
        ).rows.map((row) => row.name);
        if (foreign.length > 0) {
          throw new StartupError(
            `The PostgreSQL database ${redactedUrl(url)} already holds tables that are not MDM Console's (${foreign.join(', ')}): ` +
              'give MDM Console an empty database of its own (CREATE DATABASE).',
            { code: 'EDATABASENOTEMPTY', option: 'databaseUrl' },
          );
        }
      }
      for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
        if (migration.version <= current) continue;
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)', [
            migration.version,
            migration.name,
            new Date().toISOString(),
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
        applied.push(migration.version);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
  }
  return applied;
}

/** The schema version of the database (0 for an empty one). */
export async function postgresSchemaVersion(sql: PostgresSql): Promise<number> {
  const exists = await sql.value<number>(`SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'`);
  if (!exists) return 0;
  return (await sql.value<number>('SELECT coalesce(max(version), 0) FROM schema_version')) ?? 0;
}
