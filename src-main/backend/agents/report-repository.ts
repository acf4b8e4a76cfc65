// The SQL of what agents report about themselves: inventories, positions, and the agent's
// last_report/last_contact that each report moves.
import type { Sql } from '../db/sql.ts';
import type { InventorySummary } from '../inventory/fusion-inventory.ts';
import type { Inventory, Position } from '../../../src-shared/contract/index.ts';
import { versionKey } from '../../../src-shared/contract/where.ts';

export type ReportSource = Inventory['source'];

/** The inventory and positions as the admin API shows them: the contract's shapes. */
export type StoredInventory = Inventory;

export type StoredPosition = Position;

export interface ReportingAgent {
  id: number;
  name: string;
  entity_id: number;
  computer_id: number;
}

export interface ReportRepository {
  reportingAgent(agentId: number): Promise<ReportingAgent | undefined>;
  /** Keeps the inventory (replacing the previous one) and copies its model and OS onto the agent. */
  saveInventory(agentId: number, xml: string, summary: InventorySummary, source: ReportSource, at: string): Promise<void>;
  /** Adds a position to the agent's history; returns its id. */
  savePosition(
    agent: Pick<ReportingAgent, 'id' | 'computer_id'>,
    position: { latitude: number | null; longitude: number | null; locatedAt: string },
    source: ReportSource,
    at: string,
  ): Promise<number>;
  inventoryOf(agentId: number): Promise<StoredInventory | null>;
  /** The latest positions, newest first. */
  positionsOf(agentId: number, limit: number): Promise<StoredPosition[]>;
}

export class SqliteReportRepository implements ReportRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      agent: `SELECT id, name, entity_id, computer_id FROM agents WHERE id = ?`,
      saveInventory: `INSERT INTO agent_inventories (agent_id, xml, summary, source, received_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(agent_id) DO UPDATE SET xml = excluded.xml, summary = excluded.summary, source = excluded.source, received_at = excluded.received_at`,
      inventoryColumns: `UPDATE agents SET model = ?, manufacturer = ?, os_name = ?, os_version = ?, os_version_key = ?, last_report = ?, last_contact = ? WHERE id = ?`,
      // The installed apps as rows (the --where language's app= and app_version), replaced by each inventory.
      clearApps: `DELETE FROM agent_apps WHERE agent_id = ?`,
      insertApp: `INSERT INTO agent_apps (agent_id, package, name, version, version_key) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (agent_id, package) DO NOTHING`,
      reported: `UPDATE agents SET last_report = ?, last_contact = ? WHERE id = ?`,
      insertPosition: `INSERT INTO geolocations (agent_id, computer_id, latitude, longitude, located_at, source, received_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      inventoryOf: `SELECT summary, source, received_at FROM agent_inventories WHERE agent_id = ?`,
      positions: `SELECT latitude, longitude, located_at, source, received_at FROM geolocations WHERE agent_id = ? ORDER BY id DESC LIMIT ?`,
    };
  }

  async reportingAgent(agentId: number): Promise<ReportingAgent | undefined> {
    return (await this.sql.get(this.s.agent, [agentId])) as ReportingAgent | undefined;
  }

  async saveInventory(agentId: number, xml: string, summary: InventorySummary, source: ReportSource, at: string): Promise<void> {
    await this.sql.run(this.s.saveInventory, [agentId, xml, JSON.stringify(summary), source, at]);
    await this.sql.run(this.s.inventoryColumns, [
      summary.model,
      summary.manufacturer,
      summary.os_name,
      summary.os_version,
      versionKey(summary.os_version),
      at,
      at,
      agentId,
    ]);
    await this.sql.run(this.s.clearApps, [agentId]);
    for (const app of summary.applications) {
      if (app.package)
        await this.sql.run(this.s.insertApp, [agentId, app.package, app.name, app.version, versionKey(app.version)]);
    }
  }

  async savePosition(
    agent: Pick<ReportingAgent, 'id' | 'computer_id'>,
    position: { latitude: number | null; longitude: number | null; locatedAt: string },
    source: ReportSource,
    at: string,
  ): Promise<number> {
    const id = Number(
      await this.sql.value<number>(this.s.insertPosition, [
        agent.id,
        agent.computer_id,
        position.latitude,
        position.longitude,
        position.locatedAt,
        source,
        at,
      ]),
    );
    await this.sql.run(this.s.reported, [at, at, agent.id]);
    return id;
  }

  async inventoryOf(agentId: number): Promise<StoredInventory | null> {
    const row = (await this.sql.get(this.s.inventoryOf, [agentId])) as
      { summary: string; source: ReportSource; received_at: string } | undefined;
    return row ? { ...(JSON.parse(row.summary) as InventorySummary), source: row.source, received_at: row.received_at } : null;
  }

  async positionsOf(agentId: number, limit: number): Promise<StoredPosition[]> {
    return (await this.sql.all(this.s.positions, [agentId, limit])) as StoredPosition[];
  }
}
