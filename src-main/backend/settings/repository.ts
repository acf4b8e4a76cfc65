import type { Db } from '../db/database.ts';

/** The settings table: one JSON text per key. */
export interface SettingsRepository {
  all(): { key: string; value: string }[];
  put(key: string, value: string): void;
}

export class SqliteSettingsRepository implements SettingsRepository {
  private readonly selectAll;
  private readonly upsert;

  constructor(db: Db) {
    this.selectAll = db.prepare(`SELECT key, value FROM settings`);
    this.upsert = db.prepare(
      `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
    );
  }

  all(): { key: string; value: string }[] {
    return this.selectAll.all() as { key: string; value: string }[];
  }

  put(key: string, value: string): void {
    this.upsert.run(key, value);
  }
}
