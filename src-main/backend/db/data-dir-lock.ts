import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from '../startup-error.ts';

export const LOCK_FILE = 'server.lock';
export const SERVER_FILE = 'server.json';

export interface DataDirLock {
  readonly file: string;
  release(): void;
}

/** What a running server wrote about itself (DIR/server.json), as far as it can be read. */
export interface ServerRecord {
  pid?: number;
  api_url?: string;
  admin_url?: string;
  deeplink_url?: string;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function readServerRecord(dataDir: string): ServerRecord | null {
  try {
    return JSON.parse(readFileSync(join(dataDir, SERVER_FILE), 'utf8')) as ServerRecord;
  } catch {
    return null;
  }
}

/** "pid 123, console http://…, agent API http://…" — or what is known of it. */
export function describeRunningServer(dataDir: string): string {
  const record = readServerRecord(dataDir);
  // server.json is written once listening: without it (or with a dead pid's) the holder is starting.
  if (!record?.pid || !record.admin_url || !isAlive(record.pid)) return 'another MDM Console server, still starting';
  return `another MDM Console server (pid ${record.pid}; admin and console at ${record.admin_url}, agent API at ${record.api_url})`;
}

/**
 * Takes the data dir for this process alone. The lock is SQLite's own exclusive lock on
 * DIR/server.lock (fcntl on POSIX, LockFileEx on Windows): the operating system drops it when the
 * process ends, however it ends, so a server killed with SIGKILL leaves no stale lock behind.
 */
export function tryLockDataDir(dataDir: string): DataDirLock | null {
  const file = join(dataDir, LOCK_FILE);
  const db = new Database(file, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = OFF');
    // The first write takes the exclusive lock; in EXCLUSIVE locking mode it is kept until close.
    db.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (pid INTEGER, since TEXT); DELETE FROM holder;');
    db.prepare('INSERT INTO holder VALUES (?, ?)').run(process.pid, new Date().toISOString());
    db.exec('COMMIT');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return null;
    throw error;
  }
  return {
    file,
    release: () => {
      if (db.open) db.close();
    },
  };
}

/** Like tryLockDataDir, but a held lock is a StartupError naming the server that holds it. */
export function lockDataDir(dataDir: string): DataDirLock {
  const lock = tryLockDataDir(dataDir);
  if (lock) return lock;
  throw new StartupError(
    `The data dir ${dataDir} is in use by ${describeRunningServer(dataDir)}. ` +
      'One server per data dir: stop that one first (Ctrl+C in its terminal), or use another --data-dir.',
    { code: 'EDATADIRLOCKED' },
  );
}
