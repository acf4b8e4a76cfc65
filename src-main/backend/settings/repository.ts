import type { Sql } from '../db/sql.ts';

/** The settings table: one JSON text per key. */
export interface SettingsRepository {
  all(): Promise<{ key: string; value: string }[]>;
  put(key: string, value: string): Promise<void>;
}

export class SqliteSettingsRepository implements SettingsRepository {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  all(): Promise<{ key: string; value: string }[]> {
    return this.sql.all<{ key: string; value: string }>(`SELECT key, value FROM settings`);
  }

  async put(key: string, value: string): Promise<void> {
    await this.sql.run(`INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, [
      key,
      value,
    ]);
  }
}
