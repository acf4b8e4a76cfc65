import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { FleetRepository, FleetRow, FleetView } from './fleet-repository.ts';

export type { FleetRow, FleetView };

/** Fleets group agents; each entity has exactly one default fleet. */
export class FleetService {
  private readonly store: FleetRepository;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;

  constructor(deps: { store: FleetRepository; events: EventLog; work: UnitOfWork }) {
    this.store = deps.store;
    this.events = deps.events;
    this.work = deps.work;
  }

  list(entityId = 1): FleetView[] {
    return this.store.list(entityId);
  }

  byId(id: number): FleetRow | undefined {
    return this.store.byId(id);
  }

  get(id: number): FleetRow {
    const fleet = this.byId(id);
    if (!fleet) throw itemNotFound('Fleet not found');
    return fleet;
  }

  defaultOf(entityId: number): FleetRow {
    return this.store.defaultOf(entityId)!;
  }

  /**
   * The fleet called `name` or, failing that, whose id it is (the CLI's `--fleet NAME|ID`; a fleet
   * named "2" wins over fleet #2), or the default when none is given; unknown ones are refused.
   */
  resolve(entityId: number, name: string | null | undefined): FleetRow {
    if (!name?.trim()) return this.defaultOf(entityId);
    const clean = name.trim();
    const fleet =
      this.store.byName(entityId, clean) ?? (/^[1-9]\d{0,15}$/.test(clean) ? this.store.byId(Number(clean)) : undefined);
    if (!fleet || fleet.entity_id !== entityId) throw new ApiError(400, 'ERROR_UNKNOWN_FLEET', `Unknown fleet "${clean}"`);
    return fleet;
  }

  create(name: string, entityId = 1): FleetRow {
    const clean = name.trim();
    if (!clean) throw new ApiError(400, 'ERROR_BAD_REQUEST', 'A fleet needs a name');
    if (this.store.byName(entityId, clean)) {
      throw new ApiError(409, 'ERROR_DUPLICATE', `A fleet called "${clean}" already exists`);
    }
    return this.work.run(() => {
      const id = this.store.insert(entityId, clean, nowIso());
      this.events.record(
        'fleet.created',
        `Fleet "${clean}" created`,
        { entityId },
        { fleet_id: id, name: clean, before: null, after: { name: clean } },
      );
      return this.byId(id)!;
    });
  }

  rename(id: number, name: string): FleetRow {
    const fleet = this.get(id);
    const clean = name.trim();
    if (!clean) throw new ApiError(400, 'ERROR_BAD_REQUEST', 'A fleet needs a name');
    const clash = this.store.byName(fleet.entity_id, clean);
    if (clash && clash.id !== id) throw new ApiError(409, 'ERROR_DUPLICATE', `A fleet called "${clean}" already exists`);
    return this.work.run(() => {
      this.store.rename(id, clean);
      this.events.record(
        'fleet.renamed',
        `Fleet "${fleet.name}" renamed to "${clean}"`,
        { entityId: fleet.entity_id },
        { fleet_id: id, name: clean, before: { name: fleet.name }, after: { name: clean } },
      );
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
    const n = this.store.agentCount(id);
    if (n > 0)
      throw new ApiError(
        409,
        'ERROR_FLEET_NOT_EMPTY',
        `Fleet "${fleet.name}" still has ${n} device${n === 1 ? '' : 's'}: move them to another fleet first`,
      );
    return this.work.run(() => {
      const fallback = this.defaultOf(fleet.entity_id);
      const moved = this.store.remove(id, fallback.id);
      this.events.record(
        'fleet.deleted',
        `Fleet "${fleet.name}" deleted${moved > 0 ? `; its ${moved} invitation(s) now enroll into "${fallback.name}"` : ''}`,
        { entityId: fleet.entity_id },
        { fleet_id: id, name: fleet.name, before: { name: fleet.name }, after: null },
      );
      return fleet;
    });
  }
}
