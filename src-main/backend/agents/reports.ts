// What agents report about themselves beyond presence and pings: their inventory and their
// position. One code path whatever carried the report (HTTP of release rc.7, MQTT of rc.6, the
// create input), so each is recorded alike: the data, last_report/last_contact, and an event.
import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { InventoryError, parseInventory, type InventorySummary } from '../inventory/fusion-inventory.ts';
import type { Inventory, Position as ContractPosition } from '../../../src-shared/contract/index.ts';

export type ReportSource = 'enrollment' | 'http' | 'mqtt';

export interface Position {
  /** null with `gpsOff` (the device answered but has no fix). */
  latitude: number | null;
  longitude: number | null;
  /** When the device located itself (ISO); the reception time when it did not say. */
  locatedAt: string;
  gpsOff: boolean;
}

/** The inventory and positions as the admin API shows them: the contract's shapes. */
export type StoredInventory = Inventory;

export type StoredPosition = ContractPosition;

interface ReportingAgent {
  id: number;
  name: string;
  entity_id: number;
  computer_id: number;
}

export { InventoryError };

export class DeviceReports {
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly statements;

  constructor(deps: { db: Db; events: EventLog; work: UnitOfWork }) {
    this.events = deps.events;
    this.work = deps.work;
    const db = deps.db;
    this.statements = {
      agent: db.prepare(`SELECT id, name, entity_id, computer_id FROM agents WHERE id = ?`),
      saveInventory: db.prepare(
        `INSERT INTO agent_inventories (agent_id, xml, summary, source, received_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(agent_id) DO UPDATE SET xml = excluded.xml, summary = excluded.summary, source = excluded.source, received_at = excluded.received_at`,
      ),
      inventoryColumns: db.prepare(
        `UPDATE agents SET model = ?, manufacturer = ?, os_name = ?, os_version = ?, last_report = ?, last_contact = ? WHERE id = ?`,
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

  /** Stores an inventory (FusionInventory XML). Throws InventoryError when it cannot be read. */
  inventory(agentId: number, xml: string, source: ReportSource): InventorySummary {
    const agent = this.agent(agentId);
    const summary = parseInventory(xml);
    const at = nowIso();
    this.work.run(() => {
      this.statements.saveInventory.run(agentId, xml, JSON.stringify(summary), source, at);
      this.statements.inventoryColumns.run(summary.model, summary.manufacturer, summary.os_name, summary.os_version, at, at, agentId);
      const what = [summary.manufacturer, summary.model, summary.os_name && `${summary.os_name} ${summary.os_version ?? ''}`.trim()].filter(Boolean).join(', ');
      this.events.record('agent.inventory', `${agent.name} sent its inventory${what ? ` (${what})` : ''}${via(source)}`, refs(agent), {
        source,
        model: summary.model,
        os_name: summary.os_name,
        os_version: summary.os_version,
        applications: summary.applications.length,
        bytes: Buffer.byteLength(xml, 'utf8'),
      });
    });
    return summary;
  }

  /** Records a position (or that the device has no GPS fix). */
  position(agentId: number, position: Position, source: 'http' | 'mqtt'): number {
    const agent = this.agent(agentId);
    const at = nowIso();
    return this.work.run(() => {
      const id = Number(this.statements.insertPosition.run(agentId, agent.computer_id, position.latitude, position.longitude, position.locatedAt, source, at).lastInsertRowid);
      this.statements.reported.run(at, at, agentId);
      this.events.record(
        'agent.geolocation',
        position.gpsOff ? `${agent.name} answered Geolocate: GPS off${via(source)}` : `${agent.name} is at ${position.latitude}, ${position.longitude}${via(source)}`,
        refs(agent),
        { source, latitude: position.latitude, longitude: position.longitude, located_at: position.locatedAt, gps_off: position.gpsOff },
      );
      return id;
    });
  }

  inventoryOf(agentId: number): StoredInventory | null {
    const row = this.statements.inventoryOf.get(agentId) as { summary: string; source: ReportSource; received_at: string } | undefined;
    return row ? { ...(JSON.parse(row.summary) as InventorySummary), source: row.source, received_at: row.received_at } : null;
  }

  positionsOf(agentId: number, limit = 20): StoredPosition[] {
    return this.statements.positions.all(agentId, limit) as StoredPosition[];
  }

  private agent(agentId: number): ReportingAgent {
    const agent = this.statements.agent.get(agentId) as ReportingAgent | undefined;
    if (!agent) throw new Error(`agent ${agentId} does not exist`);
    return agent;
  }
}

const refs = (agent: ReportingAgent) => ({ entityId: agent.entity_id, agentId: agent.id });
const via = (source: ReportSource) => (source === 'enrollment' ? ' at enrollment' : ` over ${source.toUpperCase()}`);

/**
 * A position as the reference agents send it: `latitude`/`longitude` (strings or numbers) and a
 * Unix time (`_datetime` over HTTP, `datetime` over MQTT), or `gps: "off"`. Null when unusable.
 */
export function positionOf(input: { latitude?: unknown; longitude?: unknown; datetime?: unknown; gps?: unknown }): Position | { error: string } {
  const time = input.datetime === undefined || input.datetime === null || input.datetime === '' ? null : Number(input.datetime);
  if (time !== null && (!Number.isFinite(time) || time < 0 || time > 1e11)) return { error: 'the date must be a Unix time in seconds' };
  const locatedAt = time === null ? nowIso() : new Date(time * 1000).toISOString();
  if (typeof input.gps === 'string' && input.gps.toLowerCase() === 'off' && input.latitude === undefined) {
    return { latitude: null, longitude: null, locatedAt, gpsOff: true };
  }
  const latitude = coordinate(input.latitude);
  const longitude = coordinate(input.longitude);
  if (latitude === null || longitude === null) return { error: 'latitude and longitude are required (or gps "off")' };
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180) return { error: 'latitude must be within ±90 and longitude within ±180' };
  return { latitude, longitude, locatedAt, gpsOff: false };
}

function coordinate(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string' || !/^\s*-?\d+(\.\d+)?\s*$/.test(value)) return null;
  return Number(value);
}
