import { nowIso } from '../db/database.ts';
import { requestContext } from '../audit/context.ts';
import { ApiError, badRequest, itemNotFound } from '../errors.ts';
import { policyDefinition, policyWireMessage } from '../../../src-shared/contract/index.ts';
import { checkedPolicy, create, folderPath, retire, undeploy, unassignValue } from './assignments.ts';
import type { PolicyContext } from './context.ts';
export type { ViewMembership } from './context.ts';
import type { ViewAssignmentRow } from './view-assignment-repository.ts';
import type { DeploymentRow } from './repository.ts';
import { policyMessage, type PolicyValue } from './wire.ts';

// Policies and deployments assigned to saved views (dynamic groups). A view is no MQTT topic: its
// assignment is carried to each member device on the device's own topic, by a device-level row of
// policy_assignments tied to it (view_assignment_id), opened when the device enters the view and
// retired (open tasks canceled, retained message cleared) when it leaves, as with fleets.
//
// Rank, for a policy a device can hold one value of (the catalogue's unique policies):
//   the device's own value  >  a view's value  >  its fleet's value.
// A view's value travels on the device's topic, which the agent prefers to its fleet's: the fleet's
// task is marked overriden, as for a device's own value. The device's own value beats every view's:
// a view's value is not carried to a device that has its own (and is retired when one is set); of
// two views with the same policy, the assignment made first wins. When what ranked above goes away,
// the next evaluation carries the view's value. Deployments (apps, files) are not exclusive: each
// view's is carried.
//
// Membership is evaluated when a device's inventory, status, presence or fleet changes, when a view
// changes, when a device's own value is removed, and on a timer (time terms: last_contact).

export interface ViewAssignInput {
  policy: string;
  value: unknown;
  destination?: string | undefined;
  removeOnDelete?: boolean | undefined;
}

const DEFAULT_DESTINATION = '%SDCARD%/Download/';

/** Assigns a policy or a deployment to a view: carried at once to its members. Returns its id. */
export async function assignToView(ctx: PolicyContext, viewId: number, input: ViewAssignInput): Promise<number> {
  const views = membership(ctx);
  const view = await views.view(viewId);
  if (!view) throw itemNotFound('View not found');
  const definition = checkedPolicy(input.policy, input.value);
  const symbol = definition.symbol;
  if (input.destination !== undefined && symbol !== 'deployFile')
    throw badRequest(`destination is for deployFile only, not ${symbol}`);
  if (input.removeOnDelete !== undefined && symbol !== 'deployApp' && symbol !== 'deployFile')
    throw badRequest(`remove_on_delete is for deployApp and deployFile only, not ${symbol}`);
  const base = { entity_id: view.entity_id, view_id: view.id, policy: symbol, remove_on_delete: input.removeOnDelete ? 1 : 0 };
  let fields: Omit<ViewAssignmentRow, 'id' | 'state' | 'removed_at' | 'created_at' | keyof typeof base>;
  if (symbol === 'deployApp' || symbol === 'deployFile') {
    const kind = symbol === 'deployApp' ? 'package' : 'file';
    const item = await ctx.files.get(kind, input.value as number);
    if (!item) throw itemNotFound(`${kind === 'file' ? 'File' : 'Package'} #${String(input.value)} not found`);
    if (kind === 'package' && !item.packageInfo.packageName)
      throw new ApiError(
        400,
        'ERROR_PACKAGE_NAME_MISSING',
        `Package "${item.name}" has no Android package name: set it (PATCH /api/packages/${item.id}) before deploying`,
      );
    let destination: string | null = null;
    if (kind === 'file') {
      destination = (input.destination ?? DEFAULT_DESTINATION).trim();
      // eslint-disable-next-line no-control-regex -- a path with control characters in it is refused
      if (destination === '' || destination.length > 1024 || /[\u0000-\u001f]/.test(destination))
        throw badRequest('The destination must be a folder path on the device (1 to 1024 characters)');
      destination = folderPath(destination);
    }
    fields = { value: null, item_kind: kind, item_id: item.id, item_name: item.name, destination };
  } else if (symbol === 'removeApp' || symbol === 'removeFile') {
    const value = String(input.value).trim();
    // eslint-disable-next-line no-control-regex -- a name or path with control characters in it is refused
    if (value === '' || /[\u0000-\u001f]/.test(value))
      throw badRequest(`${symbol}: expected ${symbol === 'removeApp' ? 'an Android package name' : 'a path on the device'}`);
    fields = { value: JSON.stringify(value), item_kind: null, item_id: null, item_name: value, destination: null };
  } else {
    fields = {
      value: JSON.stringify(input.value),
      item_kind: null,
      item_id: null,
      item_name: String(input.value),
      destination: null,
    };
  }
  const same = await ctx.viewAssignments.activeSame({
    view_id: view.id,
    policy: symbol,
    item_kind: fields.item_kind,
    item_id: fields.item_id,
    value: definition.unique ? null : fields.value,
  });
  const clash = definition.unique
    ? (await ctx.viewAssignments.activeOfView(view.id)).find((row) => row.policy === symbol)
    : same[0];
  if (clash)
    throw new ApiError(
      409,
      'ERROR_POLICY_ALREADY_SET',
      `${symbol} is already assigned to view "${view.name}" (${clash.item_name}, #${clash.id}): remove it first`,
    );
  return ctx.outbox.transact(async () => {
    const id = await ctx.viewAssignments.insert({ ...base, ...fields, created_at: nowIso() });
    await ctx.events.record(
      'view.assigned',
      `${symbol} "${fields.item_name}" assigned to view "${view.name}"`,
      { entityId: view.entity_id },
      {
        view_id: view.id,
        view_assignment_id: id,
        policy: symbol,
        name: view.name,
        before: null,
        after: { [symbol]: fields.value === null ? fields.item_name : (JSON.parse(fields.value) as unknown), view: view.name },
      },
    );
    await syncViewAssignment(ctx, (await ctx.viewAssignments.byId(id))!);
    return id;
  });
}

/** Ends a view's assignment: every member's row removed (a deployment's removal published with remove_on_delete). */
export async function unassignView(ctx: PolicyContext, id: number): Promise<ViewAssignmentRow> {
  const row = await ctx.viewAssignments.byId(id);
  if (!row) throw itemNotFound('View assignment not found');
  if (row.state !== 'active') throw new ApiError(409, 'ERROR_ALREADY_REMOVED', `View assignment #${id} was already removed`);
  const view = await membership(ctx).view(row.view_id);
  await ctx.outbox.transact(async () => {
    await ctx.viewAssignments.markRemoved(id, nowIso());
    await ctx.events.record(
      'view.unassigned',
      `${row.policy} "${row.item_name}" removed from view "${view?.name ?? row.view_id}"`,
      { entityId: row.entity_id },
      {
        view_id: row.view_id,
        view_assignment_id: id,
        policy: row.policy,
        name: view?.name ?? '',
        before: { [row.policy]: row.value === null ? row.item_name : (JSON.parse(row.value) as unknown), view: view?.name ?? '' },
        after: null,
      },
    );
    await asServer(async () => {
      for (const member of await ctx.viewAssignments.members(id)) {
        if (member.policy === 'deployApp' || member.policy === 'deployFile') await undeploy(ctx, member.id);
        else await unassignValue(ctx, member);
      }
    });
  });
  return (await ctx.viewAssignments.byId(id))!;
}

/** Brings one view assignment's members up to date: devices that entered get it, those that left lose it. */
export async function syncViewAssignment(ctx: PolicyContext, row: ViewAssignmentRow): Promise<void> {
  const views = membership(ctx);
  const view = await views.view(row.view_id);
  if (!view || row.state !== 'active') return;
  const members = new Set(await views.memberIds(row.view_id));
  await ctx.outbox.transact(() =>
    asServer(async () => {
      for (const member of await ctx.viewAssignments.members(row.id))
        if (!members.has(member.agent_id!)) await leave(ctx, member, view.name);
      for (const agentId of members) await enter(ctx, row, view.name, agentId);
    }),
  );
}

/** One device changed (inventory, status, presence, fleet, its own values): the views it entered or left. */
export async function syncAgentViews(ctx: PolicyContext, agentId: number): Promise<void> {
  if (!ctx.views) return;
  const views = ctx.views;
  const active = await ctx.viewAssignments.active();
  if (active.length === 0) return;
  const inView = new Map<number, boolean>();
  await ctx.outbox.transact(() =>
    asServer(async () => {
      for (const row of active) {
        const view = await views.view(row.view_id);
        if (!view) continue;
        let member = inView.get(row.view_id);
        if (member === undefined) inView.set(row.view_id, (member = await views.isMember(row.view_id, agentId)));
        const carried = await ctx.viewAssignments.member(row.id, agentId);
        if (member && !carried) await enter(ctx, row, view.name, agentId);
        if (!member && carried) await leave(ctx, carried, view.name);
      }
    }),
  );
}

/** Every active view assignment evaluated again (the timer: terms of time such as last_contact>7d). */
export async function syncAllViews(ctx: PolicyContext): Promise<void> {
  if (!ctx.views) return;
  for (const row of await ctx.viewAssignments.active()) await syncViewAssignment(ctx, row);
}

/** The device entered the view: the assignment carried to it, unless something ranks above (see the top). */
async function enter(ctx: PolicyContext, row: ViewAssignmentRow, viewName: string, agentId: number): Promise<void> {
  if (await ctx.viewAssignments.member(row.id, agentId)) return;
  const agent = await ctx.repo.agent(agentId);
  if (!agent) return;
  if (policyDefinition(row.policy)?.unique) {
    if ((await ctx.viewAssignments.rankedAbove(agentId, row.policy, row.id)) !== undefined) return;
    // A later view's value of the same policy gives way to this one.
    for (const later of await ctx.repo.activeViewRows(agentId, row.policy))
      if (later.view_assignment_id! > row.id) await retire(ctx, later, null, `view "${viewName}" was assigned it first`);
  }
  const messageOf = await memberMessage(ctx, row);
  if (!messageOf) return;
  await create(
    ctx,
    row.entity_id,
    row.policy,
    messageOf,
    {
      value: row.item_kind === null ? row.value : null,
      item_kind: row.item_kind,
      item_id: row.item_id,
      item_name: row.item_name,
      fleet_id: null,
      agent_id: agent.id,
      destination: row.destination,
      remove_on_delete: row.remove_on_delete,
      view_assignment_id: row.id,
    },
    { name: `${agent.name} (view "${viewName}")`, topic: agent.topic, agents: [agent] },
  );
}

async function leave(ctx: PolicyContext, member: DeploymentRow, viewName: string): Promise<void> {
  await retire(ctx, member, null, `the device left view "${viewName}"`);
  // Its fleet's value of the policy applies again: delivered again after the view's is cleared (the
  // device may have reported the fleet's task meanwhile, so it is not always marked overriden).
  const agent = policyDefinition(member.policy)?.unique ? await ctx.repo.agent(member.agent_id!) : undefined;
  const fleetRow = agent && (await ctx.repo.activeOnTarget(member.policy, agent.fleet_id, null))[0];
  if (fleetRow) await ctx.outbox.afterCommit(() => ctx.outbox.publish(fleetRow.topic, fleetRow.payload));
}

/** The message a member device receives for this assignment, or null when its item is gone. */
async function memberMessage(
  ctx: PolicyContext,
  row: ViewAssignmentRow,
): Promise<((taskId: number) => Record<string, unknown>) | null> {
  if (row.policy === 'deployApp' || row.policy === 'deployFile') {
    const item = row.item_kind && row.item_id !== null ? await ctx.files.get(row.item_kind, row.item_id) : undefined;
    if (!item) return null;
    const value: PolicyValue =
      row.policy === 'deployApp'
        ? {
            policy: 'deployApp',
            value: item.packageInfo.packageName ?? '',
            itemId: item.id,
            version: item.packageInfo.versionCode,
          }
        : { policy: 'deployFile', value: row.destination ?? DEFAULT_DESTINATION, itemId: item.id, version: item.version };
    if (value.value === '') return null;
    return (taskId) => policyMessage(value, taskId);
  }
  if (row.policy === 'removeApp' || row.policy === 'removeFile') {
    const value: PolicyValue = { policy: row.policy, value: JSON.parse(row.value ?? '""') as string };
    return (taskId) => policyMessage(value, taskId);
  }
  const definition = policyDefinition(row.policy);
  if (!definition || row.value === null) return null;
  const value = JSON.parse(row.value) as boolean | number | string;
  return (taskId) => policyWireMessage(definition, value, taskId);
}

/**
 * Membership changes are the server's doing, whoever's request triggered them: the per-device rows
 * are not audited one by one (the view's assignment is), and they see every fleet.
 */
function asServer<T>(work: () => T): T {
  return requestContext.run({ actor: null, address: null, audited: false, fleets: null }, work);
}

function membership(ctx: PolicyContext) {
  if (!ctx.views) throw new ApiError(501, 'ERROR_NOT_AVAILABLE', 'Saved views are not available here');
  return ctx.views;
}
