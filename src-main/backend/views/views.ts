import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError, badRequest, itemNotFound } from '../errors.ts';
import { actorLabel } from '../audit/audit-log.ts';
import { requestContext } from '../audit/context.ts';
import { allOf, type DeviceFilter } from '../agents/device-filter.ts';
import type { FleetScope } from '../fleets/scope.ts';
import type { FleetService } from '../fleets/fleets.ts';
import type { WhereNode } from '../../../src-shared/contract/where.ts';
import type { AgentSummary, DeviceView } from '../../../src-shared/contract/index.ts';
import type { ViewRepository, ViewRow } from './repository.ts';

export type { ViewRow };

/** What selects devices: an expression, a saved view (name or id), a fleet (name or id); all given must hold. */
export interface DeviceSelection {
  where?: string | undefined;
  view?: string | undefined;
  fleet?: string | undefined;
}

/**
 * Saved device views (dynamic groups): a name and an expression of the --where language, listed
 * with live counts (within the caller's fleet scope), and the one way to turn a selection (where,
 * view, fleet) into devices for the device list, bulk actions and exports.
 */
export class ViewService {
  private readonly store: ViewRepository;
  private readonly filter: DeviceFilter;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly fleets: Pick<FleetService, 'resolve'>;

  constructor(deps: {
    store: ViewRepository;
    filter: DeviceFilter;
    events: EventLog;
    work: UnitOfWork;
    fleets: Pick<FleetService, 'resolve'>;
  }) {
    this.store = deps.store;
    this.fleets = deps.fleets;
    this.filter = deps.filter;
    this.events = deps.events;
    this.work = deps.work;
  }

  async list(entityId = 1): Promise<DeviceView[]> {
    return Promise.all((await this.store.list(entityId)).map((row) => this.toView(row)));
  }

  async get(id: number): Promise<DeviceView> {
    return this.toView(await this.row(id));
  }

  async row(id: number): Promise<ViewRow> {
    const row = await this.store.byId(id);
    if (!row) throw itemNotFound('View not found');
    return row;
  }

  /** A view by name (case-insensitively) or id; a 400 naming it when there is none. */
  async resolve(nameOrId: string, entityId = 1): Promise<ViewRow> {
    const clean = nameOrId.trim();
    const row =
      (await this.store.byName(entityId, clean)) ??
      (/^[1-9]\d{0,15}$/.test(clean) ? await this.store.byId(Number(clean)) : undefined);
    if (!row || row.entity_id !== entityId) throw new ApiError(400, 'ERROR_UNKNOWN_VIEW', `Unknown view "${clean}"`);
    return row;
  }

  /** A view's expression (bulk actions and exports take `--view NAME` through this). */
  async whereOf(nameOrId: string): Promise<string> {
    return (await this.resolve(nameOrId)).where_expr;
  }

  /** The parsed expression of a view (saved expressions were checked when saved). */
  nodeOf(row: ViewRow): WhereNode {
    return this.filter.parse(row.where_expr, `view "${row.name}"`);
  }

  /** A saved view (the policies room's ViewMembership: views as targets of assignments). */
  view(id: number): Promise<ViewRow | undefined> {
    return this.store.byId(id);
  }

  /** The enrolled devices a view selects now, in every fleet (its assignments' members). */
  async memberIds(viewId: number): Promise<number[]> {
    const node = await this.enrolledOf(viewId);
    return node ? (await this.filter.ids(node, null)).map((row) => row.id) : [];
  }

  async isMember(viewId: number, agentId: number): Promise<boolean> {
    const node = await this.enrolledOf(viewId);
    return node !== null && (await this.filter.matches(agentId, node));
  }

  private async enrolledOf(viewId: number): Promise<WhereNode | null> {
    const row = await this.store.byId(viewId);
    if (!row) return null;
    try {
      return allOf(this.nodeOf(row), this.filter.parse('status!=unenrolled'));
    } catch {
      return null; // an expression that no longer parses selects nothing
    }
  }

  /** A selection as one expression: a 400 names the part that is wrong. */
  async selection(selection: DeviceSelection): Promise<WhereNode> {
    const parts: WhereNode[] = [];
    // A fleet the caller may not see, or none of that name: a 400 naming it (ERROR_UNKNOWN_FLEET).
    if (selection.fleet !== undefined)
      parts.push(this.filter.parse(`fleet=${(await this.fleets.resolve(1, selection.fleet)).id}`, 'fleet'));
    if (selection.view !== undefined) parts.push(this.nodeOf(await this.resolve(selection.view)));
    if (selection.where !== undefined) parts.push(this.filter.parse(selection.where));
    return allOf(...parts);
  }

  /** The devices of a selection, within the request's fleet scope. */
  async devices(selection: DeviceSelection): Promise<AgentSummary[]> {
    return this.filter.list(await this.selection(selection));
  }

  /** The ids of a selection's devices, within `scope` (the request's by default). */
  async deviceIds(selection: DeviceSelection, scope?: FleetScope): Promise<number[]> {
    return (await this.filter.ids(await this.selection(selection), scope)).map((row) => row.id);
  }

  async create(input: { name: string; where: string }, entityId = 1): Promise<DeviceView> {
    const name = this.cleanName(input.name);
    const where = input.where.trim();
    this.filter.parse(where);
    if (await this.store.byName(entityId, name))
      throw new ApiError(409, 'ERROR_DUPLICATE', `A view called "${name}" already exists`);
    const actor = requestContext.current()?.actor;
    const id = await this.work.run(async () => {
      const id = await this.store.insert({
        entity_id: entityId,
        name,
        where_expr: where,
        created_by: actor ? actorLabel(actor) : null,
        created_at: nowIso(),
      });
      await this.events.record(
        'view.created',
        `View "${name}" saved: ${where || '(every device)'}`,
        { entityId },
        { view_id: id, name, where, before: null, after: { name, where } },
      );
      return id;
    });
    return this.get(id);
  }

  async update(id: number, patch: { name?: string | undefined; where?: string | undefined }): Promise<DeviceView> {
    const row = await this.row(id);
    const name = patch.name === undefined ? row.name : this.cleanName(patch.name);
    const where = patch.where === undefined ? row.where_expr : patch.where.trim();
    this.filter.parse(where);
    const clash = await this.store.byName(row.entity_id, name);
    if (clash && clash.id !== id) throw new ApiError(409, 'ERROR_DUPLICATE', `A view called "${name}" already exists`);
    await this.work.run(async () => {
      await this.store.update(id, name, where, nowIso());
      const changed = [
        name !== row.name ? `renamed to "${name}"` : '',
        where !== row.where_expr ? `now ${where || '(every device)'}` : '',
      ]
        .filter(Boolean)
        .join(', ');
      await this.events.record(
        'view.updated',
        `View "${row.name}" ${changed || 'saved unchanged'}`,
        { entityId: row.entity_id },
        { view_id: id, name, where, before: { name: row.name, where: row.where_expr }, after: { name, where } },
      );
    });
    return this.get(id);
  }

  async remove(id: number): Promise<void> {
    const row = await this.row(id);
    const n = await this.store.activeAssignments(id);
    if (n > 0)
      throw new ApiError(
        409,
        'ERROR_VIEW_IN_USE',
        `View "${row.name}" has ${n} polic${n === 1 ? 'y or deployment' : 'ies or deployments'} assigned: remove ${n === 1 ? 'it' : 'them'} first`,
      );
    await this.work.run(async () => {
      await this.store.remove(id);
      await this.events.record(
        'view.deleted',
        `View "${row.name}" deleted`,
        { entityId: row.entity_id },
        { view_id: id, name: row.name, where: row.where_expr, before: { name: row.name, where: row.where_expr }, after: null },
      );
    });
  }

  private cleanName(name: string): string {
    const clean = name.trim();
    if (!clean) throw badRequest('A view needs a name');
    return clean;
  }

  private async toView(row: ViewRow): Promise<DeviceView> {
    return {
      id: row.id,
      name: row.name,
      where: row.where_expr,
      count: await this.filter.count(this.nodeOf(row)),
      created_by: row.created_by,
      created_at: row.created_at,
      updated_at: row.updated_at,
      assignments: await this.store.activeAssignments(row.id),
    };
  }
}
