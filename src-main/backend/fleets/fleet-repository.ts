import type { Sql } from '../db/sql.ts';

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
  list(entityId: number): Promise<FleetView[]>;
  byId(id: number): Promise<FleetRow | undefined>;
  /** Case-insensitive. */
  byName(entityId: number, name: string): Promise<FleetRow | undefined>;
  defaultOf(entityId: number): Promise<FleetRow | undefined>;
  insert(entityId: number, name: string, at: string): Promise<number>;
  rename(id: number, name: string): Promise<void>;
  agentCount(id: number): Promise<number>;
  /**
   * Deletes the fleet; the invitations that named it point at `fallbackId` instead (what a
   * foreign key's ON DELETE would do, were it declared). Returns how many moved.
   */
  remove(id: number, fallbackId: number): Promise<number>;
}

export class SqliteFleetRepository implements FleetRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      list: `SELECT f.*, (SELECT count(*) FROM agents a WHERE a.fleet_id = f.id) AS agent_count
         FROM fleets f WHERE f.entity_id = ? ORDER BY f.is_default DESC, f.name COLLATE NOCASE`,
      byId: `SELECT * FROM fleets WHERE id = ?`,
      byName: `SELECT * FROM fleets WHERE entity_id = ? AND name = ? COLLATE NOCASE`,
      defaultOf: `SELECT * FROM fleets WHERE entity_id = ? AND is_default = 1`,
      insert: `INSERT INTO fleets (entity_id, name, is_default, created_at) VALUES (?, ?, 0, ?) RETURNING id`,
      rename: `UPDATE fleets SET name = ? WHERE id = ?`,
      agentCount: `SELECT count(*) FROM agents WHERE fleet_id = ?`,
      moveInvitations: `UPDATE invitations SET fleet_id = ? WHERE fleet_id = ?`,
      remove: `DELETE FROM fleets WHERE id = ?`,
    };
  }

  async list(entityId: number): Promise<FleetView[]> {
    return (await this.sql.all(this.s.list, [entityId])) as FleetView[];
  }

  async byId(id: number): Promise<FleetRow | undefined> {
    return (await this.sql.get(this.s.byId, [id])) as FleetRow | undefined;
  }

  async byName(entityId: number, name: string): Promise<FleetRow | undefined> {
    return (await this.sql.get(this.s.byName, [entityId, name])) as FleetRow | undefined;
  }

  async defaultOf(entityId: number): Promise<FleetRow | undefined> {
    return (await this.sql.get(this.s.defaultOf, [entityId])) as FleetRow | undefined;
  }

  async insert(entityId: number, name: string, at: string): Promise<number> {
    return Number(await this.sql.value<number>(this.s.insert, [entityId, name, at]));
  }

  async rename(id: number, name: string): Promise<void> {
    await this.sql.run(this.s.rename, [name, id]);
  }

  async agentCount(id: number): Promise<number> {
    return (await this.sql.value(this.s.agentCount, [id])) as number;
  }

  async remove(id: number, fallbackId: number): Promise<number> {
    const moved = (await this.sql.run(this.s.moveInvitations, [fallbackId, id])).changes;
    await this.sql.run(this.s.remove, [id]);
    return moved;
  }
}

/**
 * The SQL condition on a fleet column for the `@fleets` parameter (fleets/scope.ts,
 * fleetScopeParam): null for every fleet, else a JSON array of the fleets' ids.
 */
export const inFleetsSql = (column: string): string => `(@fleets IS NULL OR ${column} IN (SELECT value FROM json_each(@fleets)))`;
