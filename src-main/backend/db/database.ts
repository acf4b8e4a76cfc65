import Database from 'better-sqlite3';
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { migrations as allMigrations, type Migration } from './migrations.ts';

export type Db = Database.Database;

/** Opens (creating if needed) the SQLite file, sets the pragmas we rely on and migrates it. */
export function openDatabase(file: string, migrations: Migration[] = allMigrations): Db {
  if (file !== ':memory:') {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // It holds every token: owner-only, and SQLite gives its -wal and -shm files the same mode.
    closeSync(openSync(file, 'a', 0o600));
    chmodSync(file, 0o600);
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db, migrations);
  return db;
}

/** Applies every migration newer than PRAGMA user_version, each in its own transaction. */
export function migrate(db: Db, migrations: Migration[] = allMigrations): number[] {
  const applied: number[] = [];
  const current = db.pragma('user_version', { simple: true }) as number;
  const latest = Math.max(0, ...migrations.map((m) => m.version));
  if (current > latest) {
    throw new Error(`database schema version ${current} is newer than this program (${latest}); refusing to open it`);
  }
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    if (migration.version <= current) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    })();
    applied.push(migration.version);
  }
  return applied;
}

export function nowIso(): string {
  return new Date().toISOString();
}
