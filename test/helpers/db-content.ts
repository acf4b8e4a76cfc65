// What a database holds, whatever the engine: every row of every table as JSON with its columns
// by name, sorted, so an SQLite file and a PostgreSQL database can be compared table by table.
import Database from 'better-sqlite3';
import { PostgresSql } from '../../src-main/backend/db/postgres-sql.ts';

export type Rows = Record<string, string[]>;

/** A row as JSON with its columns by name (the engines may order a table's columns differently). */
const rowText = (row: object) => JSON.stringify(Object.fromEntries(Object.entries(row).sort(([a], [b]) => a.localeCompare(b))));

/** Every row of every table, each as JSON in column order, sorted: what a table holds, whatever the engine. */
export function sqliteContent(file: string): Rows {
  const db = new Database(file, { readonly: true });
  try {
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
      .pluck()
      .all() as string[];
    return Object.fromEntries(
      tables.map((table) => [table, (db.prepare(`SELECT * FROM "${table}"`).all() as object[]).map(rowText).sort()]),
    );
  } finally {
    db.close();
  }
}

export async function postgresContent(url: string): Promise<Rows> {
  const sql = new PostgresSql(url);
  try {
    const tables = await sql.all<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_name <> 'schema_version' ORDER BY 1`,
    );
    const content: Rows = {};
    for (const { name } of tables) {
      content[name] = (await sql.all<object>(`SELECT * FROM "${name}"`)).map(rowText).sort();
    }
    return content;
  } finally {
    await sql.close();
  }
}
