import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { Fleet, FleetRecord } from '../../../src-shared/contract/index.ts';

/** A fleet's row, and with its number of devices: the contract's FleetRecord and Fleet. */
export type FleetRow = FleetRecord;
export type FleetView = Fleet;

/** Fleets group agents; each entity has exactly one default fleet. */
export class FleetService {
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly statements;

  constructor(db: Db, events: EventLog, work: UnitOfWork) {
    this.events = events;
    this.work = work;
    this.statements = {
      list: db.prepare(
        `SELECT f.*, (SELECT count(*) FROM agents a WHERE a.fleet_id = f.id) AS agent_count
         FROM fleets f WHERE f.entity_id = ? ORDER BY f.is_default DESC, f.name COLLATE NOCASE`,
      ),
      byId: db.prepare(`SELECT * FROM fleets WHERE id = ?`),
      byName: db.prepare(`SELECT * FROM fleets WHERE entity_id = ? AND name = ? COLLATE NOCASE`),
      defaultOf: db.prepare(`SELECT * FROM fleets WHERE entity_id = ? AND is_default = 1`),
      insert: db.prepare(`INSERT INTO fleets (entity_id, name, is_default, created_at) VALUES (?, ?, 0, ?)`),
      rename: db.prepare(`UPDATE fleets SET name = ? WHERE id = ?`),
      agentCount: db.prepare(`SELECT count(*) AS n FROM agents WHERE fleet_id = ?`),
      moveInvitations: db.prepare(`UPDATE invitations SET fleet_id = ? WHERE fleet_id = ?`),
      remove: db.prepare(`DELETE FROM fleets WHERE id = ?`),
    };
  }

  list(entityId = 1): FleetView[] {
    return this.statements.list.all(entityId) as FleetView[];
  }

  byId(id: number): FleetRow | undefined {
    return this.statements.byId.get(id) as FleetRow | undefined;
  }

  get(id: number): FleetRow {
    const fleet = this.byId(id);
    if (!fleet) throw itemNotFound('Fleet not found');
    return fleet;
  }

  defaultOf(entityId: number): FleetRow {
    return this.statements.defaultOf.get(entityId) as FleetRow;
  }

  /** The fleet called `name`, or the default when no name is given; unknown names are refused. */
  resolve(entityId: number, name: string | null | undefined): FleetRow {
    if (!name?.trim()) return this.defaultOf(entityId);
    const fleet = this.statements.byName.get(entityId, name.trim()) as FleetRow | undefined;
    if (!fleet) throw new ApiError(400, 'ERROR_UNKNOWN_FLEET', `Unknown fleet "${name.trim()}"`);
    return fleet;
  }

  create(name: string, entityId = 1): FleetRow {
    const clean = name.trim();
    if (!clean) throw new ApiError(400, 'ERROR_BAD_REQUEST', 'A fleet needs a name');
    if (this.statements.byName.get(entityId, clean)) {
      throw new ApiError(409, 'ERROR_DUPLICATE', `A fleet called "${clean}" already exists`);
    }
    return this.work.run(() => {
      const id = Number(this.statements.insert.run(entityId, clean, nowIso()).lastInsertRowid);
      this.events.record('fleet.created', `Fleet "${clean}" created`, { entityId }, { fleet_id: id });
      return this.byId(id)!;
    });
  }

  rename(id: number, name: string): FleetRow {
    const fleet = this.get(id);
    const clean = name.trim();
    if (!clean) throw new ApiError(400, 'ERROR_BAD_REQUEST', 'A fleet needs a name');
    const clash = this.statements.byName.get(fleet.entity_id, clean) as FleetRow | undefined;
    if (clash && clash.id !== id) throw new ApiError(409, 'ERROR_DUPLICATE', `A fleet called "${clean}" already exists`);
    return this.work.run(() => {
      this.statements.rename.run(clean, id);
      this.events.record('fleet.renamed', `Fleet "${fleet.name}" renamed to "${clean}"`, { entityId: fleet.entity_id }, { fleet_id: id });
      return this.byId(id)!;
    });
  }

  /**
   * Deletes an empty fleet (never the default one). Invitations that named it enroll into the
   * default fleet from now on; its deployments are removed (deployments.ts follows fleet.deleted).
   */
  remove(id: number): FleetRow {
    const fleet = this.get(id);
    if (fleet.is_default === 1) throw new ApiError(409, 'ERROR_DEFAULT_FLEET', 'The default fleet cannot be deleted');
    const { n } = this.statements.agentCount.get(id) as { n: number };
    if (n > 0) throw new ApiError(409, 'ERROR_FLEET_NOT_EMPTY', `Fleet "${fleet.name}" still has ${n} device${n === 1 ? '' : 's'}: move them to another fleet first`);
    return this.work.run(() => {
      const fallback = this.defaultOf(fleet.entity_id);
      const moved = this.statements.moveInvitations.run(fallback.id, id).changes;
      this.statements.remove.run(id);
      this.events.record('fleet.deleted', `Fleet "${fleet.name}" deleted${moved > 0 ? `; its ${moved} invitation(s) now enroll into "${fallback.name}"` : ''}`, { entityId: fleet.entity_id }, { fleet_id: id, name: fleet.name });
      return fleet;
    });
  }
}
