import Database from 'better-sqlite3';

/**
 * SQLite's own exclusive lock on `file` (fcntl on POSIX, LockFileEx on Windows), held until
 * release: the operating system drops it when the process ends, however it ends. Null when
 * another process holds it.
 */
export function tryExclusiveFileLock(file: string): { release(): void } | null {
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
    release: () => {
      if (db.open) db.close();
    },
  };
}
