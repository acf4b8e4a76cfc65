/**
 * Backup and restore of a data dir. A backup is a folder holding a consistent copy of the
 * database (SQLite's online backup API: a snapshot, also while the server writes), the stored
 * files and packages that snapshot refers to, the broker's TLS certificate (devices pin it), the
 * mail secrets, the admin token and the RabbitMQ nodes' secret, plus `backup.json` describing it.
 */
import Database from 'better-sqlite3';
import {
  chmodSync,
  constants,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describeRunningServer, tryLockDataDir } from './data-dir-lock.ts';
import { migrations } from './migrations.ts';

export const DATABASE_FILE = 'mdm-console.sqlite';
const MANIFEST = 'backup.json';
/** Small files and folders copied as they are, when present. */
const EXTRAS = ['mqtt-tls', 'secrets.json', 'admin-token', 'rabbitmq-auth-secret'];
const STORED = [
  { table: 'files', folder: 'file' },
  { table: 'packages', folder: 'package' },
] as const;

export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

export interface BackupManifest {
  format: 1;
  created_at: string;
  data_dir: string;
  schema_version: number;
  files: number;
  packages: number;
  bytes: number;
  /** The engine the backup was taken from (absent in backups of SQLite made before PostgreSQL mode). */
  engine?: 'sqlite' | 'postgres';
  /** PostgreSQL mode: the database it was taken from, without its password. */
  database?: string;
}

interface StoredRow {
  storage_name: string;
  size: number;
}

function storedRows(db: Database.Database): { folder: string; rows: StoredRow[] }[] {
  return STORED.map(({ table, folder }) => ({
    folder,
    rows: db.prepare(`SELECT storage_name, size FROM ${table}`).all() as StoredRow[],
  }));
}

/**
 * A stored file's name is one plain file name (uploads get 32 hex digits): no separator, no `..`,
 * no leading dot. The same rule as files/store.ts's isStorageName (kept here too: the database
 * layer does not import the file store).
 */
function isStorageName(name: string): boolean {
  return /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/.test(name);
}

function describeKind(stats: Stats, path: string): string {
  if (stats.isSymbolicLink()) {
    let target = '?';
    try {
      target = readlinkSync(path);
    } catch {
      // described without its target
    }
    return `a symbolic link (to ${target})`;
  }
  return 'not a regular file or folder';
}

/**
 * Refuses a backup whose entries would put anything outside the data dir, or serve it: a link
 * (to a file or a folder) or a special file anywhere in what a restore copies, the database
 * included. `entries` are paths relative to the backup folder; folders are walked.
 */
function assertPlainEntries(backupDir: string, entries: string[]): void {
  const pending = [...entries];
  while (pending.length > 0) {
    const entry = pending.pop()!;
    const path = join(backupDir, entry);
    const stats = lstatSync(path, { throwIfNoEntry: false });
    if (!stats || stats.isFile()) continue;
    if (stats.isDirectory()) {
      for (const name of readdirSync(path)) pending.push(join(entry, name));
      continue;
    }
    throw new BackupError(
      `${backupDir} cannot be restored: its entry ${entry} is ${describeKind(stats, path)}; a backup holds only plain files, so nothing outside the data dir is written or served. Nothing was restored.`,
    );
  }
}

export function assertEmptyFolder(dir: string): void {
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory()) throw new BackupError(`${dir} exists and is not a folder; name a new or empty folder`);
  if (readdirSync(dir).length > 0)
    throw new BackupError(`${dir} is not empty; name a new or empty folder, so no earlier backup is overwritten`);
}

/**
 * Copies the data dir into `target` (new or empty). Works whether the server runs or not.
 * `filesDir`: where the stored files are (serve --files-dir); default DATA_DIR/files.
 */
export async function backupDataDir(dataDir: string, target: string, filesDir = join(dataDir, 'files')): Promise<BackupManifest> {
  const source = join(dataDir, DATABASE_FILE);
  if (!existsSync(source)) throw new BackupError(`There is no database to back up in ${dataDir} (no ${DATABASE_FILE})`);
  assertEmptyFolder(target);
  mkdirSync(target, { recursive: true, mode: 0o700 });
  const copy = join(target, DATABASE_FILE);
  try {
    const db = new Database(source, { fileMustExist: true, timeout: 5000 });
    try {
      await db.backup(copy);
    } finally {
      db.close();
    }
    chmodSync(copy, 0o600);
    const snapshot = new Database(copy);
    let manifest: BackupManifest;
    try {
      if (snapshot.pragma('quick_check(1)', { simple: true }) !== 'ok') {
        throw new BackupError(`The database ${source} is damaged (its copy fails SQLite's integrity check); no backup was made`);
      }
      manifest = {
        format: 1,
        created_at: new Date().toISOString(),
        data_dir: dataDir,
        schema_version: snapshot.pragma('user_version', { simple: true }) as number,
        files: 0,
        packages: 0,
        bytes: 0,
      };
      copyStoredContent(snapshot, filesDir, target, manifest);
    } finally {
      snapshot.close();
    }
    finishBackup(dataDir, target, manifest);
    return manifest;
  } catch (error) {
    emptyFolder(target);
    throw error;
  }
}

/** No half backup that looks like a whole one. */
export function emptyFolder(target: string): void {
  if (!existsSync(target)) return;
  for (const name of readdirSync(target)) rmSync(join(target, name), { recursive: true, force: true });
}

/**
 * Copies into the backup folder the stored files and packages that the snapshot `db` names,
 * counting them into `manifest`. Stored content never changes once written (a new upload gets a
 * new storage name), so the files the snapshot names are copied as they are now.
 */
export function copyStoredContent(db: Database.Database, filesDir: string, target: string, manifest: BackupManifest): void {
  for (const { folder, rows } of storedRows(db)) {
    mkdirSync(join(target, 'files', folder), { recursive: true, mode: 0o700 });
    for (const row of rows) {
      if (!isStorageName(row.storage_name))
        throw new BackupError(
          `The ${folder === 'file' ? 'files' : 'packages'} table names ${JSON.stringify(row.storage_name)} as stored content: a path that leaves the store; no backup was made`,
        );
      const from = join(filesDir, folder, row.storage_name);
      const stats = lstatSync(from, { throwIfNoEntry: false });
      if (stats && !stats.isFile())
        throw new BackupError(`${from} is ${describeKind(stats, from)}, not stored content; no backup was made`);
      try {
        copyFileSync(from, join(target, 'files', folder, row.storage_name));
      } catch {
        throw new BackupError(`${from} is missing (deleted while backing up?): run the backup again`);
      }
      manifest.bytes += row.size;
    }
    if (folder === 'file') manifest.files = rows.length;
    else manifest.packages = rows.length;
  }
}

/** The certificate and secrets, then the manifest, which makes the folder a backup. */
export function finishBackup(dataDir: string, target: string, manifest: BackupManifest): void {
  for (const name of EXTRAS) {
    if (existsSync(join(dataDir, name)))
      cpSync(join(dataDir, name), join(target, name), { recursive: true, preserveTimestamps: true });
  }
  writeFileSync(join(target, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
}

/** Checks a backup folder; returns its manifest. */
export function readBackup(backupDir: string): BackupManifest {
  // Before anything is opened: the database itself may not be a link either.
  assertPlainEntries(backupDir, [DATABASE_FILE, 'files', ...EXTRAS]);
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(readFileSync(join(backupDir, MANIFEST), 'utf8')) as BackupManifest;
  } catch {
    throw new BackupError(`${backupDir} is not a backup made by mdm-console backup (no readable ${MANIFEST})`);
  }
  const file = join(backupDir, DATABASE_FILE);
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch {
    throw new BackupError(`${file} is missing or unreadable: the backup is incomplete`);
  }
  try {
    if (db.pragma('quick_check(1)', { simple: true }) !== 'ok')
      throw new BackupError(`${file} is damaged: this backup cannot be restored`);
    const version = db.pragma('user_version', { simple: true }) as number;
    const known = Math.max(...migrations.map((m) => m.version));
    if (version > known)
      throw new BackupError(
        `${backupDir} was made by a newer version of MDM Console (database schema ${version}; this version knows up to ${known}): restore it with that version`,
      );
    for (const { folder, rows } of storedRows(db)) {
      for (const row of rows) {
        if (!isStorageName(row.storage_name))
          throw new BackupError(
            `${backupDir} cannot be restored: its ${folder === 'file' ? 'files' : 'packages'} table names ${JSON.stringify(row.storage_name)} as stored content, a path that leaves the store. Nothing was restored.`,
          );
        const path = join(backupDir, 'files', folder, row.storage_name);
        const stats = lstatSync(path, { throwIfNoEntry: false });
        if (stats && !stats.isFile())
          throw new BackupError(
            `${backupDir} cannot be restored: its entry ${relative(backupDir, path)} is ${describeKind(stats, path)}; a backup holds only plain files, so nothing outside the data dir is written or served. Nothing was restored.`,
          );
        if (stats?.size !== row.size) throw new BackupError(`${path} is missing or has the wrong size: the backup is incomplete`);
      }
    }
  } catch (error) {
    if (error instanceof BackupError) throw error;
    throw new BackupError(`${file} cannot be read as a database (${(error as Error).message}): this backup cannot be restored`);
  } finally {
    db.close();
  }
  return manifest;
}

/** What a restore put in place, and how to take it back while the data dir is still locked. */
export interface PlacedBackup {
  /** Where what it replaced went (DATA_DIR/before-restore-<time>/), or null when nothing was replaced. */
  previous: string | null;
  /** Removes what was restored and puts back what it had replaced. */
  undo(): void;
}

/**
 * Moves the data dir's `entries` that exist to DATA_DIR/before-restore-<time>/ (also `alsoMoved`,
 * such as the SQLite file's -wal and -shm) and copies the backup's in their place. The caller holds
 * the data dir's lock. A failure while copying puts everything back and throws.
 */
export function placeBackup(
  dataDir: string,
  backupDir: string,
  allEntries: string[],
  alsoMoved: string[] = [],
  filesDir = join(dataDir, 'files'),
): PlacedBackup {
  // A files dir of its own (serve --files-dir, shared by several nodes): the backup's stored files
  // are added to it (storage names are random: one never names other content), nothing is replaced.
  const sharedFiles = resolve(filesDir) !== resolve(join(dataDir, 'files'));
  const entries = sharedFiles ? allEntries.filter((name) => name !== 'files') : allEntries;
  const replaced = [...entries, ...alsoMoved].filter((name) => existsSync(join(dataDir, name)));
  let previous: string | null = null;
  if (replaced.length > 0) {
    previous = join(dataDir, `before-restore-${new Date().toISOString().replace(/[:.]/g, '-')}`);
    mkdirSync(previous, { mode: 0o700 });
    for (const name of replaced) renameSync(join(dataDir, name), join(previous, name));
  }
  // Checked again while copying (the backup folder may change after readBackup looked): a link
  // met now stops the restore, and what it had replaced is put back.
  const plain = (source: string) => {
    const stats = lstatSync(source);
    if (stats.isFile() || stats.isDirectory()) return true;
    throw new BackupError(
      `${backupDir} cannot be restored: its entry ${relative(backupDir, source)} is ${describeKind(stats, source)}; a backup holds only plain files. Nothing was restored.`,
    );
  };
  const restored = entries.filter((name) => existsSync(join(backupDir, name)));
  const added: string[] = [];
  const undo = () => {
    for (const path of added) rmSync(path, { force: true });
    for (const name of restored) rmSync(join(dataDir, name), { recursive: true, force: true });
    if (previous) {
      for (const name of replaced) renameSync(join(previous, name), join(dataDir, name));
      rmSync(previous, { recursive: true, force: true });
      previous = null;
    }
  };
  try {
    for (const name of restored) {
      cpSync(join(backupDir, name), join(dataDir, name), {
        recursive: true,
        filter: plain,
        ...(name === DATABASE_FILE || name === 'files' ? {} : { preserveTimestamps: true }),
      });
    }
    if (restored.includes(DATABASE_FILE)) chmodSync(join(dataDir, DATABASE_FILE), 0o600);
    if (sharedFiles && allEntries.includes('files')) {
      for (const { folder } of STORED) {
        const from = join(backupDir, 'files', folder);
        if (!existsSync(from)) continue;
        mkdirSync(join(filesDir, folder), { recursive: true, mode: 0o700 });
        for (const name of readdirSync(from)) {
          const to = join(filesDir, folder, name);
          if (!plain(join(from, name)) || existsSync(to)) continue;
          copyFileSync(join(from, name), to, constants.COPYFILE_EXCL);
          added.push(to);
        }
      }
    }
  } catch (error) {
    undo();
    throw error;
  }
  return { previous, undo };
}

/** Takes the data dir's lock for a restore, or says which server holds it. */
export function lockForRestore(dataDir: string, what = 'its database'): { release(): void } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const lock = tryLockDataDir(dataDir);
  if (!lock)
    throw new BackupError(
      `A server is running on ${dataDir}: ${describeRunningServer(dataDir)}. Stop it first (Ctrl+C in its terminal): a restore replaces ${what}.`,
    );
  return lock;
}

/** The entries of a backup besides the database: stored content, certificate, secrets. */
export const BACKUP_FILES = ['files', ...EXTRAS];

/**
 * Puts a backup in place of the data dir's database, files, certificate and secrets. Refuses
 * while a server runs on the data dir (and holds its lock meanwhile, so none starts). What it
 * replaces is moved to DATA_DIR/before-restore-<time>/, never deleted.
 */
export function restoreDataDir(
  dataDir: string,
  backupDir: string,
  filesDir = join(dataDir, 'files'),
): { manifest: BackupManifest; previous: string | null } {
  const manifest = readBackup(backupDir);
  const lock = lockForRestore(dataDir);
  try {
    // The note of a move to PostgreSQL (migrate-db) goes aside too: the data dir is on SQLite again.
    const { previous } = placeBackup(
      dataDir,
      backupDir,
      [DATABASE_FILE, ...BACKUP_FILES],
      [`${DATABASE_FILE}-wal`, `${DATABASE_FILE}-shm`, 'moved-to-postgres.json'],
      filesDir,
    );
    return { manifest, previous };
  } finally {
    lock.release();
  }
}
