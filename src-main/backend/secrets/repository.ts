import type { Sql } from '../db/sql.ts';

/** The row that records which key the database's secrets are encrypted with (its key check). */
export const CLUSTER_KEY_ROW = 'cluster-key';
const KEY_CHECK = CLUSTER_KEY_ROW;

export interface StoredSecret {
  name: string;
  /** Sealed (secrets/cluster-key.ts): never the value itself. */
  value: string;
  key_id: string;
}

/** The `secrets` table: values sealed by the cluster key, and the key check (PostgreSQL; unused on SQLite). */
export class SecretRepository {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  /** The key check the database's secrets were written with; undefined before any node recorded one. */
  keyCheck(): Promise<string | undefined> {
    return this.sql.value<string>(`SELECT key_id FROM secrets WHERE name = ?`, [KEY_CHECK]);
  }

  /** Records `keyId` unless a key check is recorded already (another node's, first); returns the one recorded. */
  async recordKeyCheck(keyId: string, sealed: string, at: string): Promise<string> {
    await this.sql.run(
      `INSERT INTO secrets (name, value, key_id, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`,
      [KEY_CHECK, sealed, keyId, at],
    );
    return (await this.keyCheck())!;
  }

  /** Every secret but the key check. */
  all(): Promise<StoredSecret[]> {
    return this.sql.all<StoredSecret>(`SELECT name, value, key_id FROM secrets WHERE name <> ? ORDER BY name`, [KEY_CHECK]);
  }

  async put(name: string, value: string, keyId: string, at: string): Promise<void> {
    await this.sql.run(
      `INSERT INTO secrets (name, value, key_id, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value, key_id = excluded.key_id, updated_at = excluded.updated_at`,
      [name, value, keyId, at],
    );
  }

  async remove(name: string): Promise<void> {
    await this.sql.run(`DELETE FROM secrets WHERE name = ?`, [name]);
  }
}
