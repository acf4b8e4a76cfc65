/**
 * `mdm-console migrate-db --to postgres://…`: moves a stopped server's SQLite data dir into an
 * empty PostgreSQL database, in one transaction that is committed only once every table's row
 * count and checksum match on both sides and every stored file still has its recorded size and
 * SHA-256. The SQLite file is left as it was (the way back, until the move is trusted); the
 * stored files stay in the data dir, where the server on PostgreSQL finds them.
 */
import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { DATABASE_FILE } from './backup.ts';
import { CopyError, type CopyOptions, type TableCopy } from './copy-tables.ts';
import { describeRunningServer, tryLockDataDir } from './data-dir-lock.ts';
import { openDatabase } from './database.ts';
import { fillFromSqlite, prepareEmptyTarget } from './postgres-target.ts';
import { redactedUrl } from './postgres-sql.ts';

/** Left in the data dir once its data lives in PostgreSQL: when, where to, how much. */
export const MOVED_FILE = 'moved-to-postgres.json';

const STORED = [
  { table: 'files', folder: 'file' },
  { table: 'packages', folder: 'package' },
] as const;

export interface StoredContentCheck {
  files: number;
  packages: number;
  bytes: number;
  /** The folder holding them (DATA_DIR/files). */
  dir: string;
}

export interface MigrateReport {
  dataDir: string;
  /** The target, without its password. */
  database: string;
  schemaVersion: number;
  tables: TableCopy[];
  rows: number;
  seconds: number;
  rowsPerSecond: number;
  stored: StoredContentCheck;
}

export interface MigrateOptions extends CopyOptions {
  dataDir: string;
  /** postgres://USER:PASSWORD@HOST:PORT/DATABASE */
  url: string;
  /** Told each step as it starts ("Checking the stored files"). */
  onStep?: (text: string) => void;
  /**
   * Rows for the `cluster_secrets` table, written in the copy's transaction once every table is proved
   * (the data dir's SMTP password, sealed by the cluster key: secrets/database-secrets.ts sealedRows).
   */
  secretRows?: { name: string; value: string; updated_at: string }[];
}

export interface MovedNote {
  moved_at?: string;
  database?: string;
  schema_version?: number;
  rows?: number;
}

/** What DATA_DIR/moved-to-postgres.json says, or null when the data dir's data was never moved. */
export function movedNote(dataDir: string): MovedNote | null {
  const file = join(dataDir, MOVED_FILE);
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as MovedNote;
  } catch {
    return {};
  }
}

/** Same rule as files/store.ts (the database room does not import the file store). */
const isStorageName = (name: string) => /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/.test(name);

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/**
 * Reads every stored file and package the database names and checks its size and SHA-256 against
 * its row. A missing or changed one is refused before anything is copied.
 */
export async function checkStoredContent(db: Database.Database, dataDir: string): Promise<StoredContentCheck> {
  const dir = join(dataDir, 'files');
  const result: StoredContentCheck = { files: 0, packages: 0, bytes: 0, dir };
  const problems: string[] = [];
  for (const { table, folder } of STORED) {
    const rows = db.prepare(`SELECT id, name, size, sha256, storage_name FROM ${table} ORDER BY id`).all() as {
      id: number;
      name: string;
      size: number;
      sha256: string;
      storage_name: string;
    }[];
    for (const row of rows) {
      const label = `${table} id ${row.id} (${JSON.stringify(row.name)})`;
      if (!isStorageName(row.storage_name)) {
        problems.push(`${label}: its storage name ${JSON.stringify(row.storage_name)} leaves the store`);
        continue;
      }
      const path = join(dir, folder, row.storage_name);
      const stats = lstatSync(path, { throwIfNoEntry: false });
      if (!stats) problems.push(`${label}: ${path} is missing`);
      else if (!stats.isFile()) problems.push(`${label}: ${path} is not a plain file`);
      else if (stats.size !== row.size) problems.push(`${label}: ${path} has ${stats.size} bytes, ${row.size} recorded`);
      else if ((await sha256Of(path)) !== row.sha256) problems.push(`${label}: ${path} does not have its recorded SHA-256`);
      else {
        result.bytes += row.size;
        if (table === 'files') result.files++;
        else result.packages++;
      }
    }
  }
  if (problems.length > 0) {
    throw new CopyError(
      `The stored content of ${problems.length} item(s) is missing or changed: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? '; …' : ''}. ` +
        'Nothing was copied. Put the files back (from a backup), or start the server on SQLite and delete those items, then run migrate-db again.',
    );
  }
  return result;
}

/** Copies the data dir's SQLite database into the empty PostgreSQL database of `url` (see above). */
export async function migrateDataDirToPostgres(options: MigrateOptions): Promise<MigrateReport> {
  const { dataDir, url } = options;
  const file = join(dataDir, DATABASE_FILE);
  if (!existsSync(file)) {
    throw new CopyError(
      `There is no SQLite database in ${dataDir} (no ${DATABASE_FILE}): nothing to migrate. Name the data dir with --data-dir.`,
    );
  }
  const moved = movedNote(dataDir);
  if (moved) {
    throw new CopyError(
      `${dataDir} was already moved to PostgreSQL (${moved.database ?? 'a database'}, on ${moved.moved_at ?? 'an earlier run'}): its SQLite file is the data as it was then, ` +
        'and a server on PostgreSQL may have written more since. Back up that database instead (mdm-console backup DIR --database-url …). ' +
        `To make the move again from the SQLite file anyway (nothing ran on PostgreSQL, or you give that up), remove ${join(dataDir, MOVED_FILE)} and run migrate-db again.`,
    );
  }
  const lock = tryLockDataDir(dataDir);
  if (!lock) {
    throw new CopyError(
      `A server is running on ${dataDir}: ${describeRunningServer(dataDir)}. Stop it first (Ctrl+C in its terminal): migrate-db copies a stopped server's data, so nothing written meanwhile is left behind.`,
    );
  }
  try {
    // The normal opener: its integrity check, and an older schema migrated up to this version's.
    options.onStep?.(`Opening ${file}`);
    const sqlite = openDatabase(file);
    try {
      options.onStep?.('Checking the stored files and packages against their SHA-256');
      const stored = await checkStoredContent(sqlite, dataDir);
      options.onStep?.(`Preparing ${redactedUrl(url)}`);
      const target = await prepareEmptyTarget(url);
      try {
        options.onStep?.('Copying every table in one transaction');
        const filled = await fillFromSqlite(target, sqlite, 'migrate-db', {
          ...options,
          beforeCommit: async () => {
            for (const row of options.secretRows ?? [])
              await target.client.query(`INSERT INTO cluster_secrets (name, value, updated_at) VALUES ($1, $2, $3)`, [
                row.name,
                row.value,
                row.updated_at,
              ]);
          },
        });
        const report: MigrateReport = {
          dataDir,
          database: redactedUrl(url),
          schemaVersion: target.schemaVersion,
          tables: filled.tables,
          rows: filled.rows,
          seconds: filled.seconds,
          rowsPerSecond: Math.round(filled.rows / Math.max(filled.seconds, 0.001)),
          stored,
        };
        writeFileSync(
          join(dataDir, MOVED_FILE),
          `${JSON.stringify({ moved_at: new Date().toISOString(), database: report.database, schema_version: report.schemaVersion, rows: report.rows }, null, 2)}\n`,
          { mode: 0o600 },
        );
        return report;
      } finally {
        await target.client.end().catch(() => {});
      }
    } finally {
      sqlite.close();
    }
  } finally {
    lock.release();
  }
}
