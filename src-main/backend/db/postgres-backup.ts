/**
 * `backup` and `restore` in PostgreSQL mode, by the library rather than pg_dump/pg_restore: a
 * backup is the same folder as in SQLite mode (backup.ts), its `mdm-console.sqlite` written from
 * one PostgreSQL snapshot (a REPEATABLE READ, READ ONLY transaction: consistent while servers keep
 * writing), with the stored files that snapshot names, the certificate and the secrets. So one
 * backup format serves both engines: a PostgreSQL backup restores into an empty PostgreSQL
 * database, or into a data dir on SQLite (the laptop again), and an SQLite backup restores into
 * PostgreSQL; no client tools of the server's exact major version are needed, and each table's
 * copy is proved by its row count and checksum (copy-tables.ts), as migrate-db's is.
 */
import Database from 'better-sqlite3';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  assertEmptyFolder,
  BACKUP_FILES,
  BackupError,
  copyStoredContent,
  DATABASE_FILE,
  emptyFolder,
  finishBackup,
  lockForRestore,
  placeBackup,
  readBackup,
  type BackupManifest,
} from './backup.ts';
import {
  assertSameCopies,
  assertSameTables,
  copyClient,
  CopyError,
  copyTableToSqlite,
  postgresTables,
  quote,
  sqliteChecksum,
  type CopyOptions,
  type TableCopy,
} from './copy-tables.ts';
import { openDatabase } from './database.ts';
import { checkStoredContent } from './migrate-to-postgres.ts';
import { migrations } from './migrations.ts';
import { fillFromSqlite, prepareEmptyTarget } from './postgres-target.ts';
import { checkDatabaseUrl, explainPostgresError, redactedUrl } from './postgres-sql.ts';

export interface PostgresBackupReport extends BackupManifest {
  tables: TableCopy[];
  rows: number;
}

/**
 * Backs up the PostgreSQL database of `url` and the data dir's files into `target` (new or
 * empty). Works while servers run on the database.
 */
export async function backupPostgres(
  dataDir: string,
  url: string,
  target: string,
  options: CopyOptions & { filesDir?: string } = {},
): Promise<PostgresBackupReport> {
  checkDatabaseUrl(url);
  assertEmptyFolder(target);
  const client = copyClient(url);
  try {
    await client.connect();
  } catch (error) {
    throw explainPostgresError(error, url);
  }
  mkdirSync(target, { recursive: true, mode: 0o700 });
  try {
    // One snapshot for every table and the file list: what committed before it, nothing after.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const hasSchema = (await client.query<{ r: string | null }>(`SELECT to_regclass('schema_version')::text AS r`)).rows[0]!.r;
    const version = hasSchema
      ? Number((await client.query<{ v: string }>('SELECT coalesce(max(version), 0) AS v FROM schema_version')).rows[0]!.v)
      : 0;
    if (version === 0)
      throw new BackupError(`There is no MDM Console database at ${redactedUrl(url)} to back up (no schema_version table)`);
    const known = Math.max(...migrations.map((m) => m.version));
    if (version > known) {
      throw new BackupError(
        `${redactedUrl(url)} was written by a newer version of MDM Console (database schema ${version}; this version knows up to ${known}): back it up with that version`,
      );
    }
    const tables = await postgresTables(client);
    const file = join(target, DATABASE_FILE);
    // An SQLite file at the database's own schema version, emptied of its migrations' seed rows.
    const db = openDatabase(
      file,
      migrations.filter((m) => m.version <= version),
    );
    let copies: TableCopy[];
    try {
      assertSameTables(db, tables, 'backup');
      db.exec('BEGIN');
      for (const table of [...tables].reverse()) {
        if (
          db
            .prepare(`SELECT count(*) FROM ${quote(table.name)}`)
            .pluck()
            .get()
        )
          db.exec(`DELETE FROM ${quote(table.name)}`);
      }
      copies = [];
      for (const table of tables) copies.push(await copyTableToSqlite(client, db, table, options));
      assertSameCopies(
        copies,
        tables.map((table) => sqliteChecksum(db, table)),
        'The backup',
      );
      db.exec('COMMIT');
      if (db.pragma('quick_check(1)', { simple: true }) !== 'ok')
        throw new BackupError(`The backup's database ${file} fails SQLite's integrity check`);
      db.pragma('journal_mode = DELETE');
    } catch (error) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw error;
    } finally {
      db.close();
    }
    const manifest: BackupManifest = {
      format: 1,
      created_at: new Date().toISOString(),
      data_dir: dataDir,
      schema_version: version,
      files: 0,
      packages: 0,
      bytes: 0,
      engine: 'postgres',
      database: redactedUrl(url),
    };
    const snapshot = new Database(file, { readonly: true, fileMustExist: true });
    try {
      copyStoredContent(snapshot, options.filesDir ?? join(dataDir, 'files'), target, manifest);
    } finally {
      snapshot.close();
    }
    finishBackup(dataDir, target, manifest);
    return { ...manifest, tables: copies, rows: copies.reduce((sum, t) => sum + t.rows, 0) };
  } catch (error) {
    emptyFolder(target);
    throw error;
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    await client.end().catch(() => {});
  }
}

export interface PostgresRestoreReport {
  manifest: BackupManifest;
  /** Where the data dir's replaced files went, or null. */
  previous: string | null;
  database: string;
  tables: TableCopy[];
  rows: number;
}

/**
 * Restores a backup (of either engine) into the empty PostgreSQL database of `url`, and its files,
 * certificate and secrets into the data dir (what they replace is moved to
 * DATA_DIR/before-restore-<time>/). Refuses a database that is not empty (postgres-target.ts) and
 * a data dir a server runs on. The database is filled in one transaction proved table by table;
 * if it fails, the data dir's files are put back as they were.
 */
export async function restorePostgres(
  dataDir: string,
  backupDir: string,
  url: string,
  options: CopyOptions & { filesDir?: string } = {},
): Promise<PostgresRestoreReport> {
  checkDatabaseUrl(url);
  const manifest = readBackup(backupDir);
  const lock = lockForRestore(dataDir, 'its files, certificate and secrets');
  // The backup's database is read from a copy: an older one is migrated up by the normal opener,
  // and the backup itself stays as it was.
  const work = mkdtempSync(join(dataDir, 'restore-'));
  try {
    copyFileSync(join(backupDir, DATABASE_FILE), join(work, DATABASE_FILE));
    const db = openDatabase(join(work, DATABASE_FILE));
    try {
      await checkStoredContent(db, backupDir).catch((error: unknown) => {
        if (error instanceof CopyError)
          throw new BackupError(
            `${backupDir} cannot be restored: ${error.message.replace(/ Nothing was copied\..*$/, '')} Nothing was restored.`,
          );
        throw error;
      });
      const target = await prepareEmptyTarget(url);
      try {
        const placed = placeBackup(dataDir, backupDir, BACKUP_FILES, [], options.filesDir);
        try {
          const filled = await fillFromSqlite(target, db, 'restore', options);
          return { manifest, previous: placed.previous, database: redactedUrl(url), tables: filled.tables, rows: filled.rows };
        } catch (error) {
          placed.undo();
          throw error;
        }
      } finally {
        await target.client.end().catch(() => {});
      }
    } finally {
      db.close();
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
    lock.release();
  }
}
