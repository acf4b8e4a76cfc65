// Both engines' schemas, opened fresh, are the same: tables, columns (type in spirit, nullability,
// default), primary keys, indexes (unique or not, columns, partial condition) and foreign keys. A
// SQLite migration (db/migrations.ts) without its PostgreSQL twin (db/postgres-migrations.ts)
// fails here.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src-main/backend/db/database.ts';
import { migrations } from '../../../src-main/backend/db/migrations.ts';
import { openPostgresDatabase } from '../../../src-main/backend/db/postgres-database.ts';
import { postgresMigrations } from '../../../src-main/backend/db/postgres-migrations.ts';
import type { PostgresSql } from '../../../src-main/backend/db/postgres-sql.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

interface Table {
  /** "name type [not null] [default …]", type one of integer, text, real, blob. */
  columns: string[];
  primaryKey: string[];
  /** "[unique ](col, lower(col)) [where …]", sorted. */
  indexes: string[];
  /** "(cols) -> table(cols) on delete …", sorted. */
  foreignKeys: string[];
}
type Schema = Record<string, Table>;

/** An expression or condition as both engines can be made to print it. */
const normal = (text: string | null | undefined) =>
  (text ?? '')
    .replace(/::[a-z ]+/gi, '')
    .replace(/[()]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();

const sqliteType = (declared: string) =>
  ({ INTEGER: 'integer', TEXT: 'text', REAL: 'real', BLOB: 'blob' })[declared.toUpperCase()] ?? `?${declared}`;

function sqliteSchema(db: Database.Database): Schema {
  const schema: Schema = {};
  const tables = db
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
    .pluck()
    .all() as string[];
  for (const table of tables) {
    const info = db.pragma(`table_info("${table}")`) as Array<{
      name: string;
      type: string;
      notnull: number;
      dflt_value: string | null;
      pk: number;
    }>;
    const columns = info.map(
      (c) =>
        `${c.name} ${sqliteType(c.type)}${c.notnull || c.pk ? ' not null' : ''}${c.dflt_value === null ? '' : ` default ${normal(c.dflt_value)}`}`,
    );
    const primaryKey = info
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name);
    const indexes: string[] = [];
    for (const index of db.pragma(`index_list("${table}")`) as Array<{
      name: string;
      unique: number;
      origin: string;
      partial: number;
    }>) {
      if (index.origin === 'pk') continue;
      const keys = (db.pragma(`index_xinfo("${index.name}")`) as Array<{ name: string | null; key: number; coll: string }>)
        .filter((k) => k.key === 1)
        .map((k) => (k.coll.toUpperCase() === 'NOCASE' ? `lower(${k.name})` : (k.name ?? '<expression>')));
      const sql = db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`).pluck().get(index.name) as
        string | null;
      const where = index.partial && sql ? ` where ${normal(sql.slice(sql.search(/\sWHERE\s/i) + 7))}` : '';
      indexes.push(`${index.unique ? 'unique ' : ''}(${keys.join(', ')})${where}`);
    }
    const foreign = new Map<number, { table: string; from: string[]; to: string[]; onDelete: string }>();
    for (const fk of db.pragma(`foreign_key_list("${table}")`) as Array<{
      id: number;
      table: string;
      from: string;
      to: string;
      on_delete: string;
    }>) {
      const entry = foreign.get(fk.id) ?? { table: fk.table, from: [], to: [], onDelete: fk.on_delete };
      entry.from.push(fk.from);
      entry.to.push(fk.to);
      foreign.set(fk.id, entry);
    }
    const foreignKeys = [...foreign.values()].map(
      (fk) => `(${fk.from.join(', ')}) -> ${fk.table}(${fk.to.join(', ')}) on delete ${fk.onDelete.toLowerCase()}`,
    );
    schema[table] = { columns: columns.sort(), primaryKey, indexes: indexes.sort(), foreignKeys: foreignKeys.sort() };
  }
  return schema;
}

const postgresType = (type: string) =>
  ({
    bigint: 'integer',
    integer: 'integer',
    smallint: 'integer',
    text: 'text',
    'double precision': 'real',
    real: 'real',
    bytea: 'blob',
  })[type] ?? `?${type}`;

const ON_DELETE: Record<string, string> = { a: 'no action', r: 'restrict', c: 'cascade', n: 'set null', d: 'set default' };

async function postgresSchema(sql: PostgresSql): Promise<Schema> {
  const schema: Schema = {};
  const tables = await sql.all<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_version' ORDER BY 1`,
  );
  for (const { name: table } of tables) {
    const info = await sql.all<{ name: string; type: string; nullable: string; dflt: string | null; identity: string }>(
      `SELECT column_name AS name, data_type AS type, is_nullable AS nullable, column_default AS dflt, is_identity AS identity
         FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`,
      [table],
    );
    const columns = info.map(
      (c) =>
        `${c.name} ${postgresType(c.type)}${c.nullable === 'NO' ? ' not null' : ''}${c.dflt === null ? '' : ` default ${normal(c.dflt)}`}`,
    );
    const primaryKey = await sql.all<{ name: string }>(
      `SELECT a.attname AS name
         FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
        WHERE i.indrelid = ?::regclass AND i.indisprimary ORDER BY k.n`,
      [table],
    );
    const indexRows = await sql.all<{ unique: number; keys: string[]; predicate: string | null }>(
      `SELECT i.indisunique AS unique,
              array(SELECT pg_get_indexdef(i.indexrelid, k, true) FROM generate_series(1, i.indnkeyatts) AS k ORDER BY k) AS keys,
              pg_get_expr(i.indpred, i.indrelid, true) AS predicate
         FROM pg_index i WHERE i.indrelid = ?::regclass AND NOT i.indisprimary`,
      [table],
    );
    const indexes = indexRows.map(
      (i) => `${i.unique ? 'unique ' : ''}(${i.keys.join(', ')})${i.predicate ? ` where ${normal(i.predicate)}` : ''}`,
    );
    const fkRows = await sql.all<{ from: string[]; table: string; to: string[]; ondelete: string }>(
      `SELECT array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
                      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.n) AS from,
              c.confrelid::regclass::text AS table,
              array(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n)
                      JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.n) AS to,
              c.confdeltype AS ondelete
         FROM pg_constraint c WHERE c.conrelid = ?::regclass AND c.contype = 'f'`,
      [table],
    );
    const foreignKeys = fkRows.map(
      (fk) => `(${fk.from.join(', ')}) -> ${fk.table}(${fk.to.join(', ')}) on delete ${ON_DELETE[fk.ondelete] ?? fk.ondelete}`,
    );
    schema[table] = {
      columns: columns.sort(),
      primaryKey: primaryKey.map((c) => c.name),
      indexes: indexes.sort(),
      foreignKeys: foreignKeys.sort(),
    };
  }
  return schema;
}

describe('the two engines’ schemas', () => {
  let dir: string;
  let database: TestDatabase;
  let sqlite: Schema;
  let postgres: Schema;
  let sqliteIndexNames: string[];
  let postgresIndexNames: string[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mdm-schema-parity-'));
    const db = openDatabase(join(dir, 'db.sqlite'));
    sqlite = sqliteSchema(db);
    sqliteIndexNames = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`)
      .pluck()
      .all() as string[];
    db.close();
    database = await createTestDatabase('schema_parity');
    const sql = await openPostgresDatabase(database.url);
    postgres = await postgresSchema(sql);
    postgresIndexNames = (
      await sql.all<{ name: string }>(`SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema()`)
    ).map((row) => row.name);
    await sql.close();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await database?.drop();
  });

  it('reach the same version', () => {
    const sqliteLatest = Math.max(...migrations.map((m) => m.version));
    const postgresLatest = Math.max(...postgresMigrations.map((m) => m.version));
    expect(postgresLatest, `SQLite migration ${sqliteLatest} needs its twin in db/postgres-migrations.ts`).toBe(sqliteLatest);
  });

  it('have the same tables', () => {
    expect(Object.keys(postgres)).toEqual(Object.keys(sqlite));
    expect(Object.keys(sqlite).length).toBeGreaterThan(30);
  });

  it('have, table by table, the same columns, primary keys, indexes and foreign keys', () => {
    const differing = Object.keys(sqlite).filter((table) => JSON.stringify(postgres[table]) !== JSON.stringify(sqlite[table]));
    const only = (schema: Schema) => Object.fromEntries(differing.map((table) => [table, schema[table]]));
    expect(only(postgres), `tables ${differing.join(', ')} differ (expected: SQLite, received: PostgreSQL)`).toEqual(
      only(sqlite),
    );
  });

  it('name the indexes SQLite names alike (a later migration may drop one by its name)', () => {
    expect(sqliteIndexNames.filter((name) => !postgresIndexNames.includes(name))).toEqual([]);
  });
});
