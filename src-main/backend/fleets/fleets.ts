import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { FleetRepository, FleetRow, FleetView } from './fleet-repository.ts';
import { currentFleetScope, inFleetScope } from './scope.ts';

export type { FleetRow, FleetView };

/** Who is scoped to a fleet (the accounts room's account_fleets and token_fleets). */
export interface FleetScopes {
  scopedBy(fleetId: number): Promise<{ accounts: { id: number; name: string }[]; tokens: { id: number; name: string }[] }>;
}

/** Fleets group agents; each entity has exactly one default fleet. */
export class FleetService {
  private readonly store: FleetRepository;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly scopes: FleetScopes | undefined;

  constructor(deps: { store: FleetRepository; events: EventLog; work: UnitOfWork; scopes?: FleetScopes }) {
    this.store = deps.store;
    this.events = deps.events;
    this.work = deps.work;
    this.scopes = deps.scopes;
  }

  /** The entity's fleets a scoped request may see (all of them otherwise). */
  async list(entityId = 1): Promise<FleetView[]> {
    const scope = currentFleetScope();
    const all = await this.store.list(entityId);
    return scope === null ? all : all.filter((fleet) => scope.includes(fleet.id));
  }

  /** Any fleet, whatever the request's scope (names in messages, internal lookups). */
  byId(id: number): Promise<FleetRow | undefined> {
    return this.store.byId(id);
  }

  /** A fleet the request may see: another one answers 404, as if it did not exist. */
  async get(id: number): Promise<FleetRow> {
    const fleet = await this.byId(id);
    if (!fleet || !inFleetScope(fleet.id)) throw itemNotFound('Fleet not found');
    return fleet;
  }

  async defaultOf(entityId: number): Promise<FleetRow> {
    return (await this.store.defaultOf(entityId))!;
  }

  /**
   * The fleet called `name` or, failing that, whose id it is (the CLI's `--fleet NAME|ID`; a fleet
   * named "2" wins over fleet #2), or the default when none is given; unknown ones are refused.
   */
  async resolve(entityId: number, name: string | null | undefined): Promise<FleetRow> {
    const scope = currentFleetScope();
    if (!name?.trim()) {
      const fallback = await this.defaultOf(entityId);
      if (scope === null || scope.includes(fallback.id)) return fallback;
      // A scoped request without a fleet: its only fleet, else it must choose (never one it cannot see).
      const mine = await this.list(entityId);
      if (mine.length === 1) return mine[0]!;
      throw new ApiError(
        400,
        'ERROR_UNKNOWN_FLEET',
        `Name a fleet: you are scoped to ${mine.map((fleet) => `"${fleet.name}"`).join(', ') || 'no fleet'}`,
      );
    }
    const clean = name.trim();
    const fleet =
      (await this.store.byName(entityId, clean)) ??
      (/^[1-9]\d{0,15}$/.test(clean) ? await this.store.byId(Number(clean)) : undefined);
    if (!fleet || fleet.entity_id !== entityId || !inFleetScope(fleet.id, scope)) {
      throw new ApiError(400, 'ERROR_UNKNOWN_FLEET', `Unknown fleet "${clean}"`);
    }
    return fleet;
  }

  async create(name: string, entityId = 1): Promise<FleetRow> {
    const clean = name.trim();
    if (!clean) throw new ApiError(400, 'ERROR_BAD_REQUEST', 'A fleet needs a name');
    if (await this.store.byName(entityId, clean)) {
      throw new ApiError(409, 'ERROR_DUPLICATE', `A fleet called "${clean}" already exists`);
    }
    return this.work.run(async () => {
      const id = await this.store.insert(entityId, clean, nowIso());
      await this.events.record(
        'fleet.created',
        `Fleet "${clean}" created`,
        { entityId },
        { fleet_id: id, name: clean, before: null, after: { name: clean } },
      );
      return (await this.byId(id))!;
    });
  }

  async rename(id: number, name: string): Promise<FleetRow> {
    const fleet = await this.get(id);
    const clean = name.trim();
    if (!clean) throw new ApiError(400, 'ERROR_BAD_REQUEST', 'A fleet needs a name');
    const clash = await this.store.byName(fleet.entity_id, clean);
    if (clash && clash.id !== id) throw new ApiError(409, 'ERROR_DUPLICATE', `A fleet called "${clean}" already exists`);
    return this.work.run(async () => {
      await this.store.rename(id, clean);
      await this.events.record(
        'fleet.renamed',
        `Fleet "${fleet.name}" renamed to "${clean}"`,
        { entityId: fleet.entity_id },
        { fleet_id: id, name: clean, before: { name: fleet.name }, after: { name: clean } },
      );
      return (await this.byId(id))!;
    });
  }

  /**
   * Deletes an empty fleet (never the default one). Invitations that named it enroll into the
   * default fleet from now on; its deployments are removed (deployments.ts follows fleet.deleted).
   */
  async remove(id: number): Promise<FleetRow> {
    const fleet = await this.get(id);
    if (fleet.is_default === 1) throw new ApiError(409, 'ERROR_DEFAULT_FLEET', 'The default fleet cannot be deleted');
    const n = await this.store.agentCount(id);
    if (n > 0)
      throw new ApiError(
        409,
        'ERROR_FLEET_NOT_EMPTY',
        `Fleet "${fleet.name}" still has ${n} device${n === 1 ? '' : 's'}: move them to another fleet first`,
      );
    // An operator or observer scoped to it would otherwise lose their only fleet (or, scoped to
    // none left, see nothing): the admin changes their scope first, knowingly.
    const scoped = await this.scopes?.scopedBy(id);
    if (scoped && scoped.accounts.length + scoped.tokens.length > 0) {
      const who = [
        ...scoped.accounts.map((account) => account.name),
        ...scoped.tokens.map((token) => `API token "${token.name}"`),
      ];
      throw new ApiError(
        409,
        'ERROR_FLEET_SCOPES_ADMINS',
        `Fleet "${fleet.name}" scopes ${who.join(', ')}: change their fleet scope (or revoke the token) first`,
      );
    }
    return this.work.run(async () => {
      const fallback = await this.defaultOf(fleet.entity_id);
      const moved = await this.store.remove(id, fallback.id);
      await this.events.record(
        'fleet.deleted',
        `Fleet "${fleet.name}" deleted${moved > 0 ? `; its ${moved} invitation(s) now enroll into "${fallback.name}"` : ''}`,
        { entityId: fleet.entity_id },
        { fleet_id: id, name: fleet.name, before: { name: fleet.name }, after: null },
      );
      return fleet;
    });
  }
}
