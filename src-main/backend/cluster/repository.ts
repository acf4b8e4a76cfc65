// The node registry's rows (table `nodes`) and the secrets every node of one database shares
// (table `cluster_secrets`), over the SQL port: the same statements on both engines.
import type { Sql } from '../db/sql.ts';
import { heldSessionLocks, transactionLock, trySessionLock, type SessionLock } from '../db/session-locks.ts';

export interface NodeRow {
  id: number;
  name: string;
  admin_url: string;
  agent_url: string;
  version: string;
  broker_mode: string;
  started_at: string;
  last_heartbeat: string;
  stopped_at: string | null;
}

export type NodeFields = Omit<NodeRow, 'id' | 'stopped_at'>;

/** The advisory lock space of node names (a running node holds (NODE_LOCKS, its row id)): "node". */
const NODE_LOCKS = 0x6e6f6465;

export class NodeRepository {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  /**
   * The id of the row named `fields.name`, inserted (marked stopped, so nobody counts it live yet)
   * when there is none; an existing row is left as it is.
   */
  async ensure(fields: NodeFields): Promise<{ id: number; created: boolean }> {
    const { changes } = await this.sql.run(
      `INSERT INTO nodes (name, admin_url, agent_url, version, broker_mode, started_at, last_heartbeat, stopped_at)
       VALUES (@name, @admin_url, @agent_url, @version, @broker_mode, @started_at, @last_heartbeat, @last_heartbeat)
       ON CONFLICT (name) DO NOTHING`,
      fields,
    );
    return { id: (await this.sql.value<number>('SELECT id FROM nodes WHERE name = ?', [fields.name]))!, created: changes > 0 };
  }

  /** Removes the row of a node that never ran (its start was refused). */
  async forget(id: number): Promise<void> {
    await this.sql.run('DELETE FROM nodes WHERE id = ? AND stopped_at IS NOT NULL', [id]);
  }

  /** The name's lock, held while this process runs (the database releases it when the process dies); null when another holds it. */
  holdName(id: number): Promise<SessionLock | null> {
    return trySessionLock(this.sql, NODE_LOCKS, id);
  }

  /** Ids of the rows whose name lock a running process holds; null on SQLite (only this process can). */
  heldIds(): Promise<Set<number> | null> {
    return heldSessionLocks(this.sql, NODE_LOCKS);
  }

  /** Runs `work` in a transaction that nodes joining at the same time take one after the other. */
  joining<T>(work: () => Promise<T>): Promise<T> {
    return this.sql.transaction(async () => {
      await transactionLock(this.sql, NODE_LOCKS, 0);
      return work();
    });
  }

  async list(): Promise<NodeRow[]> {
    return this.sql.all<NodeRow>('SELECT * FROM nodes ORDER BY name');
  }

  /** This node started: its address, version and broker, running from now. */
  async start(id: number, fields: NodeFields): Promise<void> {
    await this.sql.run(
      `UPDATE nodes SET admin_url = @admin_url, agent_url = @agent_url, version = @version, broker_mode = @broker_mode,
              started_at = @started_at, last_heartbeat = @last_heartbeat, stopped_at = NULL
        WHERE id = @id`,
      { ...fields, id },
    );
  }

  async heartbeat(id: number, at: string): Promise<void> {
    await this.sql.run('UPDATE nodes SET last_heartbeat = ? WHERE id = ? AND stopped_at IS NULL', [at, id]);
  }

  async stop(id: number, at: string): Promise<void> {
    await this.sql.run('UPDATE nodes SET stopped_at = ?, last_heartbeat = ? WHERE id = ?', [at, at, id]);
  }
}

/** Secrets every node of one database shares, by name. */
export class SharedSecretRepository {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  async get(name: string): Promise<{ value: string; updated_at: string } | undefined> {
    return this.sql.get<{ value: string; updated_at: string }>('SELECT value, updated_at FROM cluster_secrets WHERE name = ?', [
      name,
    ]);
  }

  /** Replaces the value of `name` (or stores it). */
  async put(name: string, value: string, at: string): Promise<void> {
    await this.sql.run(
      `INSERT INTO cluster_secrets (name, value, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      [name, value, at],
    );
  }

  /** Stores `value` under `name` unless a value is there already; returns the stored one (the first node's, when several race). */
  async claim(name: string, value: string, at: string): Promise<string> {
    await this.sql.run('INSERT INTO cluster_secrets (name, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING', [
      name,
      value,
      at,
    ]);
    return (await this.get(name))!.value;
  }
}
