// Opening a PostgreSQL database for the backend: the migrator (once, even with several nodes
// starting together), and a clear StartupError for each way the URL can be wrong.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresDatabase, postgresSchemaVersion } from '../../../src-main/backend/db/postgres-database.ts';
import { postgresMigrations } from '../../../src-main/backend/db/postgres-migrations.ts';
import { PostgresSql } from '../../../src-main/backend/db/postgres-sql.ts';
import { StartupError } from '../../../src-main/backend/startup-error.ts';
import { freePort } from '../../helpers/external-brokers.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const latest = Math.max(...postgresMigrations.map((m) => m.version));
const databases: TestDatabase[] = [];
const fresh = async (label: string) => {
  const database = await createTestDatabase(label);
  databases.push(database);
  return database;
};
afterAll(async () => {
  for (const database of databases) await database.drop();
});

/** The StartupError that opening `url` fails with. */
async function startupError(url: string): Promise<StartupError> {
  const error: unknown = await openPostgresDatabase(url).then(
    async (sql) => {
      await sql.close();
      return new Error('it opened');
    },
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(StartupError);
  return error as StartupError;
}

describe('opening PostgreSQL', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await fresh('open');
  });

  it('migrates an empty database to the latest schema, with the seed rows SQLite has', async () => {
    const sql = await openPostgresDatabase(database.url);
    try {
      expect(await postgresSchemaVersion(sql)).toBe(latest);
      expect(await sql.all('SELECT id, name FROM profiles ORDER BY id')).toEqual([
        { id: 1, name: 'Self-Service' },
        { id: 2, name: 'MDM guest' },
        { id: 3, name: 'MDM agent' },
      ]);
      expect(await sql.get('SELECT id, entity_id, name, is_default FROM fleets')).toEqual({
        id: 1,
        entity_id: 1,
        name: 'Default fleet',
        is_default: 1,
      });
      expect(await sql.value<string>('SELECT created_at FROM entities WHERE id = 1')).toMatch(
        /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
      );
      // The identities go on after the rows the baseline gave ids.
      expect(await sql.value(`INSERT INTO entities (name, created_at) VALUES ('second', 'now') RETURNING id`)).toBe(2);
      expect(await sql.value(`INSERT INTO fleets (entity_id, name, created_at) VALUES (1, 'Second', 'now') RETURNING id`)).toBe(
        2,
      );
      // The append-only events, as on SQLite.
      await sql.run(`INSERT INTO events (at, type, message) VALUES ('now', 'test', 'hello')`);
      await expect(sql.run('DELETE FROM events')).rejects.toThrow('events are append-only');
      await expect(sql.run(`UPDATE events SET message = 'changed'`)).rejects.toThrow('events are append-only');
      // Case-insensitive uniqueness (SQLite's COLLATE NOCASE).
      await expect(sql.run(`INSERT INTO fleets (entity_id, name, created_at) VALUES (1, 'SECOND', 'now')`)).rejects.toThrow(
        /duplicate key/,
      );
    } finally {
      await sql.close();
    }
  });

  it('opens a migrated database again without migrating it again', async () => {
    const sql = await openPostgresDatabase(database.url);
    expect(await sql.value('SELECT count(*) FROM schema_version')).toBe(postgresMigrations.length);
    await sql.close();
  });

  it('migrates once when several nodes start on one empty database at the same moment', async () => {
    const shared = await fresh('race');
    const opened = await Promise.all([1, 2, 3, 4].map(() => openPostgresDatabase(shared.url)));
    // Each migration applied once (a second run of the baseline would have failed on its CREATE TABLEs).
    expect(await opened[0]!.all('SELECT version FROM schema_version ORDER BY version')).toEqual(
      postgresMigrations.map((m) => ({ version: m.version })),
    );
    expect(await opened[0]!.value('SELECT count(*) FROM profiles')).toBe(3);
    for (const sql of opened) await sql.close();
  });
});

describe('a database URL that cannot be used is a StartupError saying what to do', () => {
  let url: URL;
  beforeAll(async () => {
    url = new URL((await fresh('errors')).url);
  });
  const variant = (change: (url: URL) => void) => {
    const copy = new URL(url);
    change(copy);
    return copy.toString();
  };

  it('not a URL, or not PostgreSQL', async () => {
    expect((await startupError('localhost:5432/mdm')).message).toMatch(
      /not a PostgreSQL URL.*postgres:\/\/USER:PASSWORD@HOST:PORT\/DATABASE/,
    );
    expect((await startupError('nothing like a url')).message).toMatch(/not a URL/);
    expect((await startupError('mysql://root:pw@127.0.0.1/mdm')).message).toMatch(/not a PostgreSQL URL/);
    expect((await startupError('postgres://u:p@127.0.0.1:5432')).message).toMatch(/names no database/);
  });

  it('nothing listening: connection refused, the password not shown', async () => {
    const port = await freePort();
    const error = await startupError(variant((u) => (u.port = String(port))));
    expect(error.code).toBe('ECONNREFUSED');
    expect(error.option).toBe('databaseUrl');
    expect(error.message).toContain(`Cannot connect to PostgreSQL at 127.0.0.1:${port} (connection refused)`);
    expect(error.message).not.toContain(url.password);
  });

  it('a wrong password', async () => {
    const error = await startupError(variant((u) => (u.password = 'wrong')));
    expect(error.message).toMatch(/PostgreSQL refused the password of user "mdm"/);
    expect(error.message).not.toContain('wrong');
  });

  it('a database that does not exist', async () => {
    const error = await startupError(variant((u) => (u.pathname = '/no_such_db')));
    expect(error.message).toMatch(/database "no_such_db" does not exist.*createdb no_such_db/);
  });

  it("a database holding someone else's tables", async () => {
    const other = await fresh('foreign');
    const sql = new PostgresSql(other.url);
    await sql.exec('CREATE TABLE invoices (id integer)');
    await sql.close();
    const error = await startupError(other.url);
    expect(error.code).toBe('EDATABASENOTEMPTY');
    expect(error.message).toMatch(/already holds tables that are not MDM Console's \(invoices\)/);
  });

  it('a database written by a newer version', async () => {
    const newer = await fresh('newer');
    await (await openPostgresDatabase(newer.url)).close();
    const sql = new PostgresSql(newer.url);
    await sql.run(`INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'from the future', 'now')`, [latest + 5]);
    await sql.close();
    const error = await startupError(newer.url);
    expect(error.code).toBe('ESCHEMANEWER');
    expect(error.message).toContain(`database schema ${latest + 5}; this version knows up to ${latest}`);
  });
});
