// What agents report about themselves beyond presence and pings: their inventory and their
// position. One code path whatever carried the report (HTTP of release rc.7, MQTT of rc.6, the
// create input), so each is recorded alike: the data, last_report/last_contact, and an event.
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { InventoryError, parseInventory, type InventorySummary } from '../inventory/fusion-inventory.ts';
import type { ReportingAgent, ReportRepository, ReportSource, StoredInventory, StoredPosition } from './report-repository.ts';

export type { ReportSource, StoredInventory, StoredPosition } from './report-repository.ts';

export interface Position {
  /** null with `gpsOff` (the device answered but has no fix). */
  latitude: number | null;
  longitude: number | null;
  /** When the device located itself (ISO); the reception time when it did not say. */
  locatedAt: string;
  gpsOff: boolean;
}

export { InventoryError };

export class DeviceReports {
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly reports: ReportRepository;

  constructor(deps: { reports: ReportRepository; events: EventLog; work: UnitOfWork }) {
    this.reports = deps.reports;
    this.events = deps.events;
    this.work = deps.work;
  }

  /** Stores an inventory (FusionInventory XML). Throws InventoryError when it cannot be read. */
  async inventory(agentId: number, xml: string, source: ReportSource): Promise<InventorySummary> {
    const agent = await this.agent(agentId);
    const summary = parseInventory(xml);
    const at = nowIso();
    await this.work.run(async () => {
      await this.reports.saveInventory(agentId, xml, summary, source, at);
      const what = [
        summary.manufacturer,
        summary.model,
        summary.os_name && `${summary.os_name} ${summary.os_version ?? ''}`.trim(),
      ]
        .filter(Boolean)
        .join(', ');
      await this.events.record(
        'agent.inventory',
        `${agent.name} sent its inventory${what ? ` (${what})` : ''}${via(source)}`,
        refs(agent),
        {
          source,
          model: summary.model,
          os_name: summary.os_name,
          os_version: summary.os_version,
          applications: summary.applications.length,
          bytes: Buffer.byteLength(xml, 'utf8'),
        },
      );
    });
    return summary;
  }

  /** Records a position (or that the device has no GPS fix). */
  async position(agentId: number, position: Position, source: 'http' | 'mqtt'): Promise<number> {
    const agent = await this.agent(agentId);
    const at = nowIso();
    return this.work.run(async () => {
      const id = await this.reports.savePosition(agent, position, source, at);
      await this.events.record(
        'agent.geolocation',
        position.gpsOff
          ? `${agent.name} answered Geolocate: GPS off${via(source)}`
          : `${agent.name} is at ${position.latitude}, ${position.longitude}${via(source)}`,
        refs(agent),
        {
          source,
          latitude: position.latitude,
          longitude: position.longitude,
          located_at: position.locatedAt,
          gps_off: position.gpsOff,
        },
      );
      return id;
    });
  }

  inventoryOf(agentId: number): Promise<StoredInventory | null> {
    return this.reports.inventoryOf(agentId);
  }

  positionsOf(agentId: number, limit = 20): Promise<StoredPosition[]> {
    return this.reports.positionsOf(agentId, limit);
  }

  private async agent(agentId: number): Promise<ReportingAgent> {
    const agent = await this.reports.reportingAgent(agentId);
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
export function positionOf(input: {
  latitude?: unknown;
  longitude?: unknown;
  datetime?: unknown;
  gps?: unknown;
}): Position | { error: string } {
  const time = input.datetime === undefined || input.datetime === null || input.datetime === '' ? null : Number(input.datetime);
  if (time !== null && (!Number.isFinite(time) || time < 0 || time > 1e11))
    return { error: 'the date must be a Unix time in seconds' };
  const locatedAt = time === null ? nowIso() : new Date(time * 1000).toISOString();
  if (typeof input.gps === 'string' && input.gps.toLowerCase() === 'off' && input.latitude === undefined) {
    return { latitude: null, longitude: null, locatedAt, gpsOff: true };
  }
  const latitude = coordinate(input.latitude);
  const longitude = coordinate(input.longitude);
  if (latitude === null || longitude === null) return { error: 'latitude and longitude are required (or gps "off")' };
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180)
    return { error: 'latitude must be within ±90 and longitude within ±180' };
  return { latitude, longitude, locatedAt, gpsOff: false };
}

function coordinate(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string' || !/^\s*-?\d+(\.\d+)?\s*$/.test(value)) return null;
  return Number(value);
}
