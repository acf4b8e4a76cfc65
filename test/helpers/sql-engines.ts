// The SQL port's two engines for the tests that must hold on both: SQLite (a real file in a
// temporary directory) and PostgreSQL (a database of its own in the run's cluster,
// test/helpers/postgres.ts). Each `open()` gives a fresh, empty database.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { PostgresSql } from '../../src-main/backend/db/postgres-sql.ts';
import type { Sql, SqlEngine } from '../../src-main/backend/db/sql.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';

export interface TestEngine {
  name: SqlEngine;
  open(): Promise<Sql>;
  /** Removes what `open` made. */
  cleanup(): Promise<void>;
}

// The SQLite driver arrives with the asynchronous sweep (branch async); until it is on main the
// suites run on PostgreSQL alone.
const SQLITE_DRIVER = resolve(import.meta.dirname, '../../src-main/backend/db/sqlite-sql.ts');

function sqliteEngine(label: string): TestEngine {
  let dir: string | undefined;
  let n = 0;
  return {
    name: 'sqlite',
    open: async () => {
      dir ??= mkdtempSync(join(tmpdir(), `mdm-${label}-`));
      const { SqliteSql } = (await import(SQLITE_DRIVER)) as { SqliteSql: new (db: Database.Database) => Sql };
      const db = new Database(join(dir, `db-${++n}.sqlite`));
      db.pragma('journal_mode = WAL');
      db.pragma('foreign_keys = ON');
      return new SqliteSql(db);
    },
    cleanup: async () => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresEngine(label: string): TestEngine {
  // One database for the file; each open() a schema of its own in it (a database takes ~0.2 s to
  // make and more to drop; a schema, milliseconds).
  let database: Promise<TestDatabase> | undefined;
  let n = 0;
  return {
    name: 'postgres',
    open: async () => {
      database ??= createTestDatabase(label);
      const { url } = await database;
      const schema = `s${++n}`;
      const admin = new PostgresSql(url);
      await admin.exec(`CREATE SCHEMA ${schema}`);
      await admin.close();
      const scoped = new URL(url);
      scoped.searchParams.set('options', `-c search_path=${schema}`);
      return new PostgresSql(scoped.toString());
    },
    cleanup: async () => {
      if (database) await (await database).drop();
    },
  };
}

/** Both engines (PostgreSQL alone until the SQLite driver is in the tree). */
export function testEngines(label: string): TestEngine[] {
  return [...(existsSync(SQLITE_DRIVER) ? [sqliteEngine(label)] : []), postgresEngine(label)];
}
