/**
 * Copies MDM Console's tables between the two engines, row for row, and proves the copy: the
 * machinery of `mdm-console migrate-db` (SQLite → PostgreSQL) and of `backup`/`restore` in
 * PostgreSQL mode (PostgreSQL → an SQLite snapshot file, and back).
 *
 * The tables are read from PostgreSQL's catalog (the schema the PostgreSQL migrator made), the
 * same tables and columns the SQLite schema has at the same version (test/api/db/schema-parity).
 * Parents are copied before their children (foreign-key order), each table in primary-key order.
 *
 * The proof is a checksum per table: SHA-256 over every row's values in primary-key order, each
 * value in one canonical text form (integers as decimal digits, reals as JavaScript prints the
 * double, text as itself, blobs as bytes, NULL as a mark of its own), computed on each side from
 * what that side's engine gives back, so a value changed by the copy changes the sum. Text keys
 * are ordered by bytes on both sides (SQLite's BINARY, PostgreSQL's "C" collation).
 */
import type Database from 'better-sqlite3';
import { createHash, type Hash } from 'node:crypto';
import pg from 'pg';

export type ColumnKind = 'integer' | 'real' | 'text' | 'blob';

export interface TableColumn {
  name: string;
  kind: ColumnKind;
}

export interface TableShape {
  name: string;
  columns: TableColumn[];
  /** The primary key's columns (every column when a table has none). */
  key: string[];
  /** The identity column (`GENERATED … AS IDENTITY`), whose sequence goes on past the copied rows. */
  identity: string | null;
  /** Tables this one refers to (foreign keys), itself excluded. */
  parents: string[];
}

export interface TableCopy {
  table: string;
  rows: number;
  /** SHA-256 (hex) of the table's rows on the side copied from. */
  checksum: string;
}

/** A reason a copy cannot be made or does not hold, worded for the person running it. */
export class CopyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CopyError';
  }
}

/** A value on its way between the engines: integers and reals as their decimal text. */
type Canonical = string | Buffer | null;

/** Rows per INSERT: at most ~60,000 parameters (PostgreSQL takes 65,535), at most 1,000 rows. */
const batchRows = (columns: number) => Math.max(1, Math.min(1000, Math.floor(60_000 / columns)));

/** Rows per FETCH of a server-side cursor. */
const FETCH_ROWS = 2000;

export const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

// Values from PostgreSQL as exactly as they are stored: integers as their decimal text (a bigint
// past 2^53 stays whole), doubles as numbers, bytea as Buffers, text as strings.
const EXACT: Record<number, (text: string) => unknown> = {
  [pg.types.builtins.INT8]: (text) => text,
  [pg.types.builtins.INT4]: (text) => text,
  [pg.types.builtins.INT2]: (text) => text,
  [pg.types.builtins.NUMERIC]: (text) => text,
  [pg.types.builtins.FLOAT8]: Number,
  [pg.types.builtins.FLOAT4]: Number,
  [pg.types.builtins.BOOL]: (text) => (text === 't' ? '1' : '0'),
  [pg.types.builtins.DATE]: (text) => text,
  [pg.types.builtins.TIMESTAMP]: (text) => text,
  [pg.types.builtins.TIMESTAMPTZ]: (text) => text,
  [pg.types.builtins.JSON]: (text) => text,
  [pg.types.builtins.JSONB]: (text) => text,
};
const EXACT_TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format ?? 'text') === 'text' && EXACT[oid]
      ? EXACT[oid]
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** A single PostgreSQL connection for copying (not pooled: one transaction holds it throughout). */
export function copyClient(url: string): pg.Client {
  const client = new pg.Client({ connectionString: url, application_name: 'mdm-console migrate', types: EXACT_TYPES });
  // A connection lost while idle must not end the process; the next query reports it.
  client.on('error', () => {});
  return client;
}

function kindOf(pgType: string): ColumnKind {
  if (/^(bigint|integer|smallint)$/.test(pgType)) return 'integer';
  if (/^(double precision|real|numeric)/.test(pgType)) return 'real';
  if (pgType === 'bytea') return 'blob';
  return 'text';
}

/** The tables of the database's current schema (schema_version aside), parents first. */
export async function postgresTables(client: pg.Client): Promise<TableShape[]> {
  // (Integers come back as text from copyClient: identity is '1' or '0'.)
  const columns = await client.query<{ table: string; column: string; type: string; identity: string }>(`
    SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type,
           CASE WHEN a.attidentity IN ('a', 'd') THEN 1 ELSE 0 END AS identity
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname <> 'schema_version'
     ORDER BY c.relname, a.attnum`);
  const keys = await client.query<{ table: string; column: string }>(`
    SELECT c.relname AS table, a.attname AS column
      FROM pg_constraint k
      JOIN pg_class c ON c.oid = k.conrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
      CROSS JOIN LATERAL unnest(k.conkey) WITH ORDINALITY AS u(attnum, position)
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = u.attnum
     WHERE k.contype = 'p' AND n.nspname = current_schema()
     ORDER BY c.relname, u.position`);
  const references = await client.query<{ child: string; parent: string }>(`
    SELECT DISTINCT c.relname AS child, p.relname AS parent
      FROM pg_constraint k
      JOIN pg_class c ON c.oid = k.conrelid
      JOIN pg_class p ON p.oid = k.confrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE k.contype = 'f' AND n.nspname = current_schema()`);
  const tables = new Map<string, TableShape>();
  for (const row of columns.rows) {
    let table = tables.get(row.table);
    if (!table) {
      table = { name: row.table, columns: [], key: [], identity: null, parents: [] };
      tables.set(row.table, table);
    }
    table.columns.push({ name: row.column, kind: kindOf(row.type) });
    if (row.identity === '1') table.identity = row.column;
  }
  for (const row of keys.rows) tables.get(row.table)?.key.push(row.column);
  for (const row of references.rows) {
    if (row.child !== row.parent) tables.get(row.child)?.parents.push(row.parent);
  }
  for (const table of tables.values()) if (table.key.length === 0) table.key = table.columns.map((c) => c.name);
  return parentsFirst([...tables.values()]);
}

/** Orders tables so each comes after the tables it refers to (by name among equals, for a stable order). */
function parentsFirst(tables: TableShape[]): TableShape[] {
  const byName = new Map(tables.map((t) => [t.name, t]));
  const ordered: TableShape[] = [];
  const placed = new Set<string>();
  const pending = [...tables].sort((a, b) => a.name.localeCompare(b.name));
  while (pending.length > 0) {
    const ready = pending.findIndex((t) => t.parents.every((p) => placed.has(p) || !byName.has(p)));
    if (ready < 0) {
      throw new CopyError(
        `The tables ${pending.map((t) => t.name).join(', ')} refer to each other in a cycle: they cannot be copied parents first`,
      );
    }
    const [table] = pending.splice(ready, 1);
    ordered.push(table!);
    placed.add(table!.name);
  }
  return ordered;
}

/** The SQLite file's tables and their columns (SQLite's own tables aside). */
export function sqliteColumns(db: Database.Database): Map<string, string[]> {
  const tables = db
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
    .pluck()
    .all() as string[];
  return new Map(
    tables.map((table) => [table, (db.pragma(`table_info(${quote(table)})`) as { name: string }[]).map((c) => c.name)]),
  );
}

/** Refuses to copy between schemas that differ (a table or a column on one side only). */
export function assertSameTables(sqlite: Database.Database, tables: TableShape[], what: string): void {
  const lite = sqliteColumns(sqlite);
  const differences: string[] = [];
  for (const table of tables) {
    const columns = lite.get(table.name);
    if (!columns) {
      differences.push(`table ${table.name} is only in PostgreSQL`);
      continue;
    }
    const pgColumns = table.columns.map((c) => c.name);
    for (const column of pgColumns)
      if (!columns.includes(column)) differences.push(`${table.name}.${column} is only in PostgreSQL`);
    for (const column of columns) if (!pgColumns.includes(column)) differences.push(`${table.name}.${column} is only in SQLite`);
  }
  for (const name of lite.keys()) if (!tables.some((t) => t.name === name)) differences.push(`table ${name} is only in SQLite`);
  if (differences.length > 0) {
    throw new CopyError(
      `${what}: the SQLite and PostgreSQL schemas differ (${differences.slice(0, 5).join('; ')}${differences.length > 5 ? '; …' : ''}). ` +
        'Both sides must be at the same schema version of the same MDM Console.',
    );
  }
}

/** Describes a row by its key, for messages: "agents id 12". */
function rowName(table: TableShape, row: unknown[]): string {
  const values = table.key.map((k) => {
    const value = row[table.columns.findIndex((c) => c.name === k)];
    return value === undefined || value === null ? 'NULL' : Buffer.isBuffer(value) ? '<bytes>' : String(value as string | number);
  });
  return `${table.name} ${table.key.join(', ')} ${values.join(', ')}`;
}

/** One value in its canonical form for a column of `kind`; throws a CopyError naming the row when it cannot be. */
function canonical(value: unknown, kind: ColumnKind, table: TableShape, row: unknown[], column: string): Canonical {
  if (value === null || value === undefined) return null;
  const refuse = (why: string): never => {
    throw new CopyError(`${rowName(table, row)}: column ${column} holds ${why}, which cannot be copied`);
  };
  switch (kind) {
    case 'integer':
      if (typeof value === 'bigint') return value.toString();
      if (typeof value === 'number')
        return Number.isInteger(value) ? BigInt(value).toString() : refuse(`${value}, not an integer`);
      if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value).toString();
      return refuse(`${JSON.stringify(typeof value === 'string' ? value.slice(0, 40) : '<bytes>')}, not an integer`);
    case 'real':
      if (typeof value === 'number') return String(value);
      if (typeof value === 'bigint') return String(Number(value));
      if (typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value))) return String(Number(value));
      return refuse('something that is not a number');
    case 'text':
      if (typeof value === 'string') {
        if (value.includes('\0')) refuse('a NUL character (PostgreSQL text cannot hold one)');
        return value;
      }
      if (typeof value === 'number' || typeof value === 'bigint') return String(value);
      return refuse('bytes where text belongs');
    case 'blob':
      if (Buffer.isBuffer(value)) return value;
      if (typeof value === 'string') return Buffer.from(value, 'utf8');
      return refuse('a number where bytes belong');
  }
}

/** Feeds one row's canonical values to the table's hash (length-prefixed: no two rows read alike). */
function hashRow(hash: Hash, values: Canonical[]): void {
  for (const value of values) {
    if (value === null) hash.update('N;');
    else if (Buffer.isBuffer(value)) {
      hash.update(`B${value.length}:`);
      hash.update(value);
    } else {
      hash.update(`V${Buffer.byteLength(value)}:`);
      hash.update(value);
    }
  }
  hash.update('\n');
}

const columnList = (table: TableShape) => table.columns.map((c) => quote(c.name)).join(', ');

function sqliteOrder(table: TableShape): string {
  return table.key.map((k) => `${quote(k)} COLLATE BINARY`).join(', ');
}

function postgresOrder(table: TableShape): string {
  return table.key
    .map((k) => (table.columns.find((c) => c.name === k)?.kind === 'text' ? `${quote(k)} COLLATE "C"` : quote(k)))
    .join(', ');
}

/** The table's rows from SQLite in key order, each value canonical. */
function* sqliteRows(db: Database.Database, table: TableShape): Generator<Canonical[]> {
  const statement = db
    .prepare(`SELECT ${columnList(table)} FROM ${quote(table.name)} ORDER BY ${sqliteOrder(table)}`)
    .raw(true)
    .safeIntegers(true);
  for (const row of statement.iterate() as IterableIterator<unknown[]>) {
    yield row.map((value, i) => canonical(value, table.columns[i]!.kind, table, row, table.columns[i]!.name));
  }
}

/** The table's rows from PostgreSQL in key order, each value canonical; runs inside the caller's transaction. */
async function* postgresRows(client: pg.Client, table: TableShape): AsyncGenerator<Canonical[]> {
  const cursor = `mdm_copy_${table.name}`;
  await client.query(
    `DECLARE ${quote(cursor)} NO SCROLL CURSOR FOR SELECT ${columnList(table)} FROM ${quote(table.name)} ORDER BY ${postgresOrder(table)}`,
  );
  try {
    for (;;) {
      const { rows } = await client.query<unknown[]>({
        text: `FETCH FORWARD ${FETCH_ROWS} FROM ${quote(cursor)}`,
        rowMode: 'array',
      });
      for (const row of rows) {
        yield row.map((value, i) => canonical(value, table.columns[i]!.kind, table, row, table.columns[i]!.name));
      }
      if (rows.length < FETCH_ROWS) break;
    }
  } finally {
    await client.query(`CLOSE ${quote(cursor)}`);
  }
}

/** The checksum and row count of a table in SQLite. */
export function sqliteChecksum(db: Database.Database, table: TableShape): TableCopy {
  const hash = createHash('sha256');
  let rows = 0;
  for (const row of sqliteRows(db, table)) {
    hashRow(hash, row);
    rows++;
  }
  return { table: table.name, rows, checksum: hash.digest('hex') };
}

/** The checksum and row count of a table in PostgreSQL (inside the caller's transaction). */
export async function postgresChecksum(client: pg.Client, table: TableShape): Promise<TableCopy> {
  const hash = createHash('sha256');
  let rows = 0;
  for await (const row of postgresRows(client, table)) {
    hashRow(hash, row);
    rows++;
  }
  return { table: table.name, rows, checksum: hash.digest('hex') };
}

export interface CopyProgress {
  table: string;
  rows: number;
  done: boolean;
}

export interface CopyOptions {
  /** Told after each batch and at the end of each table. */
  onProgress?: (progress: CopyProgress) => void;
  /** Stops the copy between two batches (its reason becomes the error). */
  signal?: AbortSignal;
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new CopyError('Interrupted');
}

/**
 * Copies one table from SQLite into PostgreSQL, inside the caller's transaction, in batches of
 * multi-row INSERTs; returns what SQLite held (rows and checksum).
 */
export async function copyTableToPostgres(
  db: Database.Database,
  client: pg.Client,
  table: TableShape,
  options: CopyOptions = {},
): Promise<TableCopy> {
  const size = batchRows(table.columns.length);
  const width = table.columns.length;
  const insert = (rows: number) => {
    const tuples: string[] = [];
    for (let r = 0; r < rows; r++) tuples.push(`(${table.columns.map((_, c) => `$${r * width + c + 1}`).join(', ')})`);
    return `INSERT INTO ${quote(table.name)} (${columnList(table)}) VALUES ${tuples.join(', ')}`;
  };
  const fullBatch = insert(size);
  const hash = createHash('sha256');
  let rows = 0;
  let batch: Canonical[] = [];
  let first: Canonical[] | undefined;
  const flush = async () => {
    const count = batch.length / width;
    if (count === 0) return;
    try {
      await client.query(
        count === size
          ? { name: `mdm_copy_${table.name}_${size}`, text: fullBatch, values: batch }
          : { text: insert(count), values: batch },
      );
    } catch (error) {
      throw new CopyError(
        `PostgreSQL refused rows of ${table.name} (from ${rowName(table, first ?? [])} on): ${(error as Error).message}`,
      );
    }
    rows += count;
    batch = [];
    first = undefined;
    options.onProgress?.({ table: table.name, rows, done: false });
    checkAborted(options.signal);
  };
  for (const row of sqliteRows(db, table)) {
    hashRow(hash, row);
    first ??= row;
    for (const value of row) batch.push(value);
    if (batch.length === size * width) await flush();
  }
  await flush();
  options.onProgress?.({ table: table.name, rows, done: true });
  return { table: table.name, rows, checksum: hash.digest('hex') };
}

/**
 * Copies one table from PostgreSQL (inside the caller's transaction, a snapshot) into SQLite,
 * inside the SQLite transaction the caller opened; returns what PostgreSQL held.
 */
export async function copyTableToSqlite(
  client: pg.Client,
  db: Database.Database,
  table: TableShape,
  options: CopyOptions = {},
): Promise<TableCopy> {
  const insert = db.prepare(
    `INSERT INTO ${quote(table.name)} (${columnList(table)}) VALUES (${table.columns.map(() => '?').join(', ')})`,
  );
  const hash = createHash('sha256');
  let rows = 0;
  for await (const row of postgresRows(client, table)) {
    hashRow(hash, row);
    const values = row.map((value, i) => {
      if (value === null || Buffer.isBuffer(value)) return value;
      const kind = table.columns[i]!.kind;
      return kind === 'integer' ? BigInt(value) : kind === 'real' ? Number(value) : value;
    });
    try {
      insert.run(values);
    } catch (error) {
      throw new CopyError(`SQLite refused ${rowName(table, row)}: ${(error as Error).message}`);
    }
    if (++rows % FETCH_ROWS === 0) {
      options.onProgress?.({ table: table.name, rows, done: false });
      checkAborted(options.signal);
    }
  }
  options.onProgress?.({ table: table.name, rows, done: true });
  return { table: table.name, rows, checksum: hash.digest('hex') };
}

/** Sets each identity sequence past the table's largest id (or back to 1 for an empty table). */
export async function resetIdentities(client: pg.Client, tables: TableShape[]): Promise<void> {
  for (const table of tables) {
    if (!table.identity) continue;
    const column = quote(table.identity);
    await client.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), coalesce((SELECT max(${column}) FROM ${quote(table.name)}), 1),
                     (SELECT max(${column}) FROM ${quote(table.name)}) IS NOT NULL)`,
      [quote(table.name), table.identity],
    );
  }
}

/** Compares what each side holds; throws a CopyError naming the tables that differ. */
export function assertSameCopies(from: TableCopy[], to: TableCopy[], what: string): void {
  const wrong: string[] = [];
  for (const source of from) {
    const copy = to.find((t) => t.table === source.table);
    if (!copy) wrong.push(`${source.table} is missing`);
    else if (copy.rows !== source.rows) wrong.push(`${source.table}: ${source.rows} rows, ${copy.rows} copied`);
    else if (copy.checksum !== source.checksum) wrong.push(`${source.table}: the rows' values differ (checksums)`);
  }
  if (wrong.length > 0) throw new CopyError(`${what} does not match its source: ${wrong.join('; ')}`);
}
