import type { Sql } from '../db/sql.ts';

/**
 * The sealed rows of `cluster_secrets` (what every node of one database shares; the admin token's
 * row is cluster/repository.ts's): named `sealed:<name>`, each value sealed by the cluster key
 * (secrets/cluster-key.ts), never in clear. `sealed:cluster-key` is the key check: a value sealed by
 * the key the database's secrets are written with, which names that key.
 */
export const SEALED_PREFIX = 'sealed:';
export const KEY_CHECK_ROW = `${SEALED_PREFIX}cluster-key`;

export interface SealedRow {
  /** Without the prefix ("smtp_password"). */
  name: string;
  value: string;
}

export class SecretRepository {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  /** The sealed key check, or undefined before any node recorded one. */
  keyCheck(): Promise<string | undefined> {
    return this.sql.value<string>(`SELECT value FROM cluster_secrets WHERE name = ?`, [KEY_CHECK_ROW]);
  }

  /** Records this key check unless one is recorded already (another node's, first); returns the one recorded. */
  async recordKeyCheck(sealed: string, at: string): Promise<string> {
    await this.sql.run(`INSERT INTO cluster_secrets (name, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`, [
      KEY_CHECK_ROW,
      sealed,
      at,
    ]);
    return (await this.keyCheck())!;
  }

  /** Every sealed secret but the key check. */
  async all(): Promise<SealedRow[]> {
    const rows = await this.sql.all<SealedRow>(
      `SELECT name, value FROM cluster_secrets WHERE substr(name, 1, ?) = ? AND name <> ? ORDER BY name`,
      [SEALED_PREFIX.length, SEALED_PREFIX, KEY_CHECK_ROW],
    );
    return rows.map((row) => ({ name: row.name.slice(SEALED_PREFIX.length), value: row.value }));
  }

  async put(name: string, sealed: string, at: string): Promise<void> {
    await this.sql.run(
      `INSERT INTO cluster_secrets (name, value, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      [`${SEALED_PREFIX}${name}`, sealed, at],
    );
  }

  async remove(name: string): Promise<void> {
    await this.sql.run(`DELETE FROM cluster_secrets WHERE name = ?`, [`${SEALED_PREFIX}${name}`]);
  }
}
