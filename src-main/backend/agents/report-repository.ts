// The SQL of what agents report about themselves: inventories, positions, and the agent's
// last_report/last_contact that each report moves.
import type { Db } from '../db/database.ts';
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
  reportingAgent(agentId: number): ReportingAgent | undefined;
  /** Keeps the inventory (replacing the previous one) and copies its model and OS onto the agent. */
  saveInventory(agentId: number, xml: string, summary: InventorySummary, source: ReportSource, at: string): void;
  /** Adds a position to the agent's history; returns its id. */
  savePosition(
    agent: Pick<ReportingAgent, 'id' | 'computer_id'>,
    position: { latitude: number | null; longitude: number | null; locatedAt: string },
    source: ReportSource,
    at: string,
  ): number;
  inventoryOf(agentId: number): StoredInventory | null;
  /** The latest positions, newest first. */
  positionsOf(agentId: number, limit: number): StoredPosition[];
}

export class SqliteReportRepository implements ReportRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      agent: db.prepare(`SELECT id, name, entity_id, computer_id FROM agents WHERE id = ?`),
      saveInventory: db.prepare(
        `INSERT INTO agent_inventories (agent_id, xml, summary, source, received_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(agent_id) DO UPDATE SET xml = excluded.xml, summary = excluded.summary, source = excluded.source, received_at = excluded.received_at`,
      ),
      inventoryColumns: db.prepare(
        `UPDATE agents SET model = ?, manufacturer = ?, os_name = ?, os_version = ?, os_version_key = ?, last_report = ?, last_contact = ? WHERE id = ?`,
      ),
      // The installed apps as rows (the --where language's app= and app_version), replaced by each inventory.
      clearApps: db.prepare(`DELETE FROM agent_apps WHERE agent_id = ?`),
      insertApp: db.prepare(
        `INSERT INTO agent_apps (agent_id, package, name, version, version_key) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (agent_id, package) DO NOTHING`,
      ),
      reported: db.prepare(`UPDATE agents SET last_report = ?, last_contact = ? WHERE id = ?`),
      insertPosition: db.prepare(
        `INSERT INTO geolocations (agent_id, computer_id, latitude, longitude, located_at, source, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      inventoryOf: db.prepare(`SELECT summary, source, received_at FROM agent_inventories WHERE agent_id = ?`),
      positions: db.prepare(
        `SELECT latitude, longitude, located_at, source, received_at FROM geolocations WHERE agent_id = ? ORDER BY id DESC LIMIT ?`,
      ),
    };
  }

  reportingAgent(agentId: number): ReportingAgent | undefined {
    return this.s.agent.get(agentId) as ReportingAgent | undefined;
  }

  saveInventory(agentId: number, xml: string, summary: InventorySummary, source: ReportSource, at: string): void {
    this.s.saveInventory.run(agentId, xml, JSON.stringify(summary), source, at);
    this.s.inventoryColumns.run(
      summary.model,
      summary.manufacturer,
      summary.os_name,
      summary.os_version,
      versionKey(summary.os_version),
      at,
      at,
      agentId,
    );
    this.s.clearApps.run(agentId);
    for (const app of summary.applications) {
      if (app.package) this.s.insertApp.run(agentId, app.package, app.name, app.version, versionKey(app.version));
    }
  }

  savePosition(
    agent: Pick<ReportingAgent, 'id' | 'computer_id'>,
    position: { latitude: number | null; longitude: number | null; locatedAt: string },
    source: ReportSource,
    at: string,
  ): number {
    const id = Number(
      this.s.insertPosition.run(
        agent.id,
        agent.computer_id,
        position.latitude,
        position.longitude,
        position.locatedAt,
        source,
        at,
      ).lastInsertRowid,
    );
    this.s.reported.run(at, at, agent.id);
    return id;
  }

  inventoryOf(agentId: number): StoredInventory | null {
    const row = this.s.inventoryOf.get(agentId) as { summary: string; source: ReportSource; received_at: string } | undefined;
    return row ? { ...(JSON.parse(row.summary) as InventorySummary), source: row.source, received_at: row.received_at } : null;
  }

  positionsOf(agentId: number, limit: number): StoredPosition[] {
    return this.s.positions.all(agentId, limit) as StoredPosition[];
  }
}
