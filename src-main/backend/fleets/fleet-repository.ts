import type { Db } from '../db/database.ts';

export interface FleetRow {
  id: number;
  entity_id: number;
  name: string;
  is_default: number;
  created_at: string;
}

export interface FleetView extends FleetRow {
  agent_count: number;
}

/** The fleets table, as the fleet service uses it. */
export interface FleetRepository {
  /** The entity's fleets, the default first, then by name; each with its number of agents. */
  list(entityId: number): FleetView[];
  byId(id: number): FleetRow | undefined;
  /** Case-insensitive. */
  byName(entityId: number, name: string): FleetRow | undefined;
  defaultOf(entityId: number): FleetRow | undefined;
  insert(entityId: number, name: string, at: string): number;
  rename(id: number, name: string): void;
  agentCount(id: number): number;
  /**
   * Deletes the fleet; the invitations that named it point at `fallbackId` instead (what a
   * foreign key's ON DELETE would do, were it declared). Returns how many moved.
   */
  remove(id: number, fallbackId: number): number;
}

export class SqliteFleetRepository implements FleetRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      list: db.prepare(
        `SELECT f.*, (SELECT count(*) FROM agents a WHERE a.fleet_id = f.id) AS agent_count
         FROM fleets f WHERE f.entity_id = ? ORDER BY f.is_default DESC, f.name COLLATE NOCASE`,
      ),
      byId: db.prepare(`SELECT * FROM fleets WHERE id = ?`),
      byName: db.prepare(`SELECT * FROM fleets WHERE entity_id = ? AND name = ? COLLATE NOCASE`),
      defaultOf: db.prepare(`SELECT * FROM fleets WHERE entity_id = ? AND is_default = 1`),
      insert: db.prepare(`INSERT INTO fleets (entity_id, name, is_default, created_at) VALUES (?, ?, 0, ?)`),
      rename: db.prepare(`UPDATE fleets SET name = ? WHERE id = ?`),
      agentCount: db.prepare(`SELECT count(*) FROM agents WHERE fleet_id = ?`).pluck(),
      moveInvitations: db.prepare(`UPDATE invitations SET fleet_id = ? WHERE fleet_id = ?`),
      remove: db.prepare(`DELETE FROM fleets WHERE id = ?`),
    };
  }

  list(entityId: number): FleetView[] {
    return this.s.list.all(entityId) as FleetView[];
  }

  byId(id: number): FleetRow | undefined {
    return this.s.byId.get(id) as FleetRow | undefined;
  }

  byName(entityId: number, name: string): FleetRow | undefined {
    return this.s.byName.get(entityId, name) as FleetRow | undefined;
  }

  defaultOf(entityId: number): FleetRow | undefined {
    return this.s.defaultOf.get(entityId) as FleetRow | undefined;
  }

  insert(entityId: number, name: string, at: string): number {
    return Number(this.s.insert.run(entityId, name, at).lastInsertRowid);
  }

  rename(id: number, name: string): void {
    this.s.rename.run(name, id);
  }

  agentCount(id: number): number {
    return this.s.agentCount.get(id) as number;
  }

  remove(id: number, fallbackId: number): number {
    const moved = this.s.moveInvitations.run(fallbackId, id).changes;
    this.s.remove.run(id);
    return moved;
  }
}

/**
 * The SQL condition on a fleet column for the `@fleets` parameter (fleets/scope.ts,
 * fleetScopeParam): null for every fleet, else a JSON array of the fleets' ids.
 */
export const inFleetsSql = (column: string): string => `(@fleets IS NULL OR ${column} IN (SELECT value FROM json_each(@fleets)))`;
