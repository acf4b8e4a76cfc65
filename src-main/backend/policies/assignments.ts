import { nowIso } from '../db/database.ts';
import { Value } from 'typebox/value';
import { policyDefinition, policyWireMessage, type PolicyDefinition } from '../../../src-shared/contract/index.ts';
import { ApiError, badRequest, itemNotFound } from '../errors.ts';
import type { PolicyContext } from './context.ts';
import { decide } from './server-decisions.ts';
import { visibleAgent, visibleAssignment } from './views.ts';
import type { AgentInScope, DeploymentRow } from './repository.ts';
import { deployedFilePath, policyMessage, policyTopic, type PolicyValue } from './wire.ts';

// Assigning and removing: a value policy or one of the four deployment kinds on a fleet or one
// device, one row and one task per device in scope, published retained once committed.

export interface DeployInput {
  kind: 'file' | 'package';
  itemId: number;
  fleetId?: number | undefined;
  agentId?: number | undefined;
  /** Files: the folder on the device. */
  destination?: string | undefined;
  /** Removing the deployment also publishes removeApp / removeFile. */
  removeOnDelete?: boolean | undefined;
}

/**
 * Any policy of the catalogue set on a fleet or one device (POST /api/policy-assignments): a value
 * policy's value, or a deployment kind's item (deployApp: a package id; deployFile: a file id;
 * removeApp: an Android package name; removeFile: a path on the device).
 */
export interface AssignInput {
  policy: string;
  value: unknown;
  fleetId?: number | undefined;
  agentId?: number | undefined;
  /** deployFile: the folder on the device. */
  destination?: string | undefined;
  /** deployApp, deployFile: removing the assignment also publishes removeApp / removeFile. */
  removeOnDelete?: boolean | undefined;
}

const DEFAULT_DESTINATION = '%SDCARD%/Download/';

/** A folder on the device as the agents need it: ending in `/`. */
export const folderPath = (folder: string): string => (folder.endsWith('/') ? folder : `${folder}/`);

interface Target {
  fleetId: number | null;
  agentId: number | null;
  name: string;
  topic: string;
  agents: AgentInScope[];
}

/** A file or package deployed to a fleet or a device: deployApp / deployFile. Returns the assignment's id. */
export async function deploy(ctx: PolicyContext, input: DeployInput): Promise<number> {
  if ((input.fleetId === undefined) === (input.agentId === undefined))
    throw badRequest('Give exactly one target: a fleet or an agent');
  const item = await ctx.files.get(input.kind, input.itemId);
  if (!item) throw itemNotFound(`${input.kind === 'file' ? 'File' : 'Package'} #${input.itemId} not found`);
  const target = await itemTarget(ctx, input, item.entityId);
  let value: PolicyValue;
  let destination: string | null = null;
  if (input.kind === 'package') {
    const packageName = item.packageInfo.packageName;
    if (!packageName) {
      throw new ApiError(
        400,
        'ERROR_PACKAGE_NAME_MISSING',
        `Package "${item.name}" has no Android package name: set it (PATCH /api/packages/${item.id}) before deploying`,
      );
    }
    value = { policy: 'deployApp', value: packageName, itemId: item.id, version: item.packageInfo.versionCode };
  } else {
    destination = (input.destination ?? DEFAULT_DESTINATION).trim();
    // eslint-disable-next-line no-control-regex -- a path with control characters in it is refused
    if (destination === '' || destination.length > 1024 || /[\u0000-\u001f]/.test(destination))
      throw badRequest('The destination must be a folder path on the device (1 to 1024 characters)');
    // The agents join folder and name with no separator (`path + fileName`): the folder ends in `/`.
    destination = folderPath(destination);
    value = { policy: 'deployFile', value: destination, itemId: item.id, version: item.version };
  }
  const base = { item_kind: input.kind, item_id: item.id, fleet_id: target.fleetId, agent_id: target.agentId } as const;
  if ((await ctx.repo.activeSameOwn({ policy: value.policy, ...base })).length > 0) {
    throw new ApiError(
      409,
      'ERROR_ALREADY_DEPLOYED',
      `"${item.name}" is already deployed to ${target.name}: remove that deployment first`,
    );
  }
  // The reference's conflict rule: a removal of the same app or file still in force on this target
  // would undo the deployment; it is refused, naming the removal to take away first.
  const opposite = input.kind === 'package' ? 'removeApp' : 'removeFile';
  const oppositeValue = input.kind === 'package' ? value.value : deployedFilePath(value.value, item.name);
  const conflicting = (
    await ctx.repo.activeSameOwn({
      policy: opposite,
      item_kind: null,
      item_id: null,
      fleet_id: target.fleetId,
      agent_id: target.agentId,
    })
  ).find((removal) => (JSON.parse(removal.payload) as Record<string, unknown>)[opposite] === oppositeValue);
  if (conflicting) {
    throw new ApiError(
      409,
      'ERROR_POLICY_CONFLICT',
      `${opposite} "${oppositeValue}" is in force on ${target.name} (assignment #${conflicting.id}): remove it first (DELETE /api/policy-assignments/${conflicting.id})`,
    );
  }
  return ctx.outbox.transact(() =>
    create(
      ctx,
      item.entityId,
      value.policy,
      (id) => policyMessage(value, id),
      { ...base, value: null, item_name: item.name, destination, remove_on_delete: input.removeOnDelete ? 1 : 0 },
      target,
    ),
  );
}

/**
 * Sets any policy of the catalogue on a fleet or one device: the one way in for value policies and
 * the four deployment kinds alike. Validated against the catalogue; a value policy is refused (409)
 * while the same policy is already set there (the reference's unicity), published retained, one
 * task per device in scope. A device-level value beats its fleet's: that fleet task is overriden.
 * Returns the assignment's id.
 */
export async function assign(ctx: PolicyContext, input: AssignInput): Promise<number> {
  const definition = checkedPolicy(input.policy, input.value);
  if ((input.fleetId === undefined) === (input.agentId === undefined))
    throw badRequest('Give exactly one target: a fleet or an agent');
  if (input.destination !== undefined && definition.symbol !== 'deployFile')
    throw badRequest(`destination is for deployFile only, not ${definition.symbol}`);
  if (input.removeOnDelete !== undefined && definition.symbol !== 'deployApp' && definition.symbol !== 'deployFile')
    throw badRequest(`remove_on_delete is for deployApp and deployFile only, not ${definition.symbol}`);
  switch (definition.symbol) {
    case 'deployApp':
    case 'deployFile':
      return deploy(ctx, {
        kind: definition.symbol === 'deployApp' ? 'package' : 'file',
        itemId: input.value as number,
        fleetId: input.fleetId,
        agentId: input.agentId,
        destination: input.destination,
        removeOnDelete: input.removeOnDelete,
      });
    case 'removeApp':
    case 'removeFile':
      return removeItem(ctx, definition.symbol, input.value as string, await targetOf(ctx, input.fleetId, input.agentId));
  }
  const value = input.value as boolean | number | string;
  const target = await targetOf(ctx, input.fleetId, input.agentId);
  const same = {
    policy: definition.symbol,
    item_kind: null,
    item_id: null,
    fleet_id: target.fleetId,
    agent_id: target.agentId,
  };
  const existing = (await ctx.repo.activeSameOwn(same))[0];
  if (existing) {
    throw new ApiError(
      409,
      'ERROR_POLICY_ALREADY_SET',
      `${definition.symbol} is already set on ${target.name} to ${existing.value ?? '?'} (assignment #${existing.id}): unset it first`,
    );
  }
  return ctx.outbox.transact(() =>
    create(
      ctx,
      target.entityId,
      definition.symbol,
      (taskId) => policyWireMessage(definition, value, taskId),
      {
        value: JSON.stringify(value),
        item_kind: null,
        item_id: null,
        item_name: String(value),
        fleet_id: target.fleetId,
        agent_id: target.agentId,
        destination: null,
        remove_on_delete: 0,
      },
      target,
    ),
  );
}

/**
 * removeApp (an Android package name) or removeFile (a path on the device) assigned directly, as the
 * reference does: refused while the same removal is in force there (unicity), or while a deployment
 * of that app or file is (the reference's conflict rule, the other way round).
 */
async function removeItem(
  ctx: PolicyContext,
  policy: 'removeApp' | 'removeFile',
  raw: string,
  target: Target & { entityId: number },
): Promise<number> {
  const value = raw.trim();
  // eslint-disable-next-line no-control-regex -- a name or path with control characters in it is refused
  if (value === '' || /[\u0000-\u001f]/.test(value))
    throw badRequest(`${policy}: expected ${policy === 'removeApp' ? 'an Android package name' : 'a path on the device'}`);
  const same = (await ctx.repo.activeOnTarget(policy, target.fleetId, target.agentId)).find(
    (row) => (JSON.parse(row.payload) as Record<string, unknown>)[policy] === value,
  );
  if (same)
    throw new ApiError(
      409,
      'ERROR_POLICY_ALREADY_SET',
      `${policy} "${value}" is already in force on ${target.name} (assignment #${same.id}): unset it first`,
    );
  const deployment = policy === 'removeApp' ? 'deployApp' : 'deployFile';
  const conflicting = (await ctx.repo.activeOnTarget(deployment, target.fleetId, target.agentId)).find((row) => {
    const message = JSON.parse(row.payload) as Record<string, unknown>;
    return policy === 'removeApp'
      ? message.deployApp === value
      : deployedFilePath(String(message.deployFile), row.item_name) === value;
  });
  if (conflicting)
    throw new ApiError(
      409,
      'ERROR_POLICY_CONFLICT',
      `${deployment} "${conflicting.item_name}" is in force on ${target.name} (assignment #${conflicting.id}): remove it first (DELETE /api/policy-assignments/${conflicting.id})`,
    );
  const removal: PolicyValue = { policy, value };
  return ctx.outbox.transact(() =>
    create(
      ctx,
      target.entityId,
      policy,
      (taskId) => policyMessage(removal, taskId),
      {
        value: null,
        item_kind: null,
        item_id: null,
        item_name: value,
        fleet_id: target.fleetId,
        agent_id: target.agentId,
        destination: null,
        remove_on_delete: 0,
      },
      target,
    ),
  );
}

/** Removes a value policy: its retained message cleared, open tasks canceled. */
export async function unassignValue(ctx: PolicyContext, row: DeploymentRow): Promise<void> {
  if (row.state !== 'active') throw new ApiError(409, 'ERROR_ALREADY_REMOVED', `Assignment #${row.id} was already removed`);
  await ctx.outbox.transact(() => retire(ctx, row, null, 'the policy was unset'));
}

/**
 * Removes a deployment: its retained policy is cleared, open tasks canceled, and (remove_on_delete)
 * the removal published. Returns the removal's id, if one was published.
 */
export async function undeploy(ctx: PolicyContext, id: number): Promise<number | null> {
  const row = await ctx.repo.byId(id);
  if (!row || !(await visibleAssignment(ctx, row))) throw itemNotFound('Deployment not found');
  if (row.state !== 'active') throw new ApiError(409, 'ERROR_ALREADY_REMOVED', `Deployment #${id} was already removed`);
  return ctx.outbox.transact(async () => {
    let removal: number | null = null;
    if (row.remove_on_delete === 1 && (row.policy === 'deployApp' || row.policy === 'deployFile')) {
      const target: Target =
        row.fleet_id !== null
          ? { ...(await fleetTarget(ctx, row.fleet_id)), agentId: null }
          : { ...(await agentTarget(ctx, row.agent_id!)), fleetId: null };
      const message = JSON.parse(row.payload) as Record<string, unknown>;
      const value: PolicyValue =
        row.policy === 'deployApp'
          ? { policy: 'removeApp', value: String(message.deployApp) }
          : { policy: 'removeFile', value: deployedFilePath(String(message.deployFile), row.item_name) };
      removal = await create(
        ctx,
        row.entity_id,
        value.policy,
        (taskId) => policyMessage(value, taskId),
        {
          value: null,
          item_kind: null,
          item_id: null,
          item_name: row.item_name,
          fleet_id: row.fleet_id,
          agent_id: row.agent_id,
          destination: null,
          remove_on_delete: 0,
        },
        target,
      );
    }
    await retire(ctx, row, removal, 'the deployment was removed');
    return removal;
  });
}

/**
 * Inserts an assignment, its message and a task per device in scope (inside a transaction): pending,
 * or incompatible / overriden where the server already knows. A device-level value of a unique
 * policy makes that device's task of its fleet's value overriden.
 */
export async function create(
  ctx: PolicyContext,
  entityId: number,
  policy: string,
  messageOf: (taskId: number) => Record<string, unknown>,
  fields: Pick<
    DeploymentRow,
    'value' | 'item_kind' | 'item_id' | 'item_name' | 'fleet_id' | 'agent_id' | 'destination' | 'remove_on_delete'
  > & { view_assignment_id?: number | null },
  target: { name: string; topic: string; agents: AgentInScope[] },
): Promise<number> {
  const at = nowIso();
  // The device's own value of a unique policy beats a view's (view-targets.ts): the view's row on it is retired.
  if (fields.agent_id !== null && !fields.view_assignment_id && policyDefinition(policy)?.unique) {
    for (const row of await ctx.repo.activeViewRows(fields.agent_id, policy))
      await retire(ctx, row, null, "the device's own value applies");
  }
  const id = await ctx.repo.insert({
    entity_id: entityId,
    policy,
    target_name: target.name,
    created_at: at,
    ...fields,
  });
  const topic = policyTopic(target.topic, policy, id);
  const payload = JSON.stringify(messageOf(id));
  await ctx.repo.setMessage(id, topic, payload);
  const row = (await ctx.repo.byId(id))!;
  for (const agent of target.agents) {
    const taskId = (await ctx.repo.openTask(id, agent.id, at))!;
    const decided = await decide(ctx, row, agent);
    await ctx.repo.setStatus(taskId, decided?.status ?? 'pending', decided?.reason ?? null, 'server', at);
    if (fields.agent_id !== null && policyDefinition(policy)?.unique) {
      const fleetTask = await ctx.repo.activeFleetSymbolTask(agent.id, agent.fleet_id, policy);
      if (fleetTask && fleetTask.status !== 'overriden' && fleetTask.status !== 'canceled')
        await ctx.setStatus(
          fleetTask.id,
          fleetTask.deployment_id,
          agent,
          'overriden',
          `the device's own value applies (assignment #${id})`,
          'server',
          at,
        );
    }
  }
  await ctx.events.record(
    'deployment.created',
    `${policy} "${fields.item_name}" published to ${target.name} (${target.agents.length} device${target.agents.length === 1 ? '' : 's'})`,
    { entityId, agentId: fields.agent_id },
    {
      deployment_id: id,
      policy,
      fleet_id: fields.fleet_id,
      topic,
      devices: target.agents.length,
      before: null,
      after: { [policy]: policyValueOf(fields), target: target.name },
    },
  );
  await ctx.outbox.afterCommit(() => ctx.outbox.publish(topic, payload));
  return id;
}

/** An assignment's value as the audit trail shows it: the policy's value, or the deployed item's name. */
function policyValueOf(fields: Pick<DeploymentRow, 'value' | 'item_name'>): unknown {
  return fields.value !== null ? (JSON.parse(fields.value) as unknown) : fields.item_name;
}

/** Marks removed, cancels open tasks, clears the retained policy (inside a transaction). */
export async function retire(ctx: PolicyContext, row: DeploymentRow, replacedBy: number | null, why: string): Promise<void> {
  const at = nowIso();
  if (!(await ctx.repo.markRemoved(row.id, at, replacedBy))) return;
  for (const task of await ctx.repo.openTasksOf(row.id)) {
    const agent = await ctx.repo.agent(task.agent_id);
    if (agent) await ctx.setStatus(task.id, row.id, agent, 'canceled', why, 'server', at);
  }
  // Cleared first: a device that reads the empty message as "back to my default" then receives its
  // fleet's value, delivered again just below, and keeps it.
  await ctx.outbox.afterCommit(() => ctx.outbox.publish(row.topic, ''));
  // A device-level value gone: its fleet's value applies again, and is delivered again.
  if (row.agent_id !== null && policyDefinition(row.policy)?.unique) {
    const agent = await ctx.repo.agent(row.agent_id);
    const fleetTask = agent && (await ctx.repo.activeFleetSymbolTask(agent.id, agent.fleet_id, row.policy));
    if (agent && fleetTask?.status === 'overriden') {
      await ctx.setStatus(
        fleetTask.id,
        fleetTask.deployment_id,
        agent,
        'pending',
        `the device's own value was removed`,
        'server',
        at,
      );
      const fleetRow = (await ctx.repo.byId(fleetTask.deployment_id))!;
      await ctx.outbox.afterCommit(() => ctx.outbox.publish(fleetRow.topic, fleetRow.payload));
    }
  }
  await ctx.events.record(
    'deployment.removed',
    `${row.policy} "${row.item_name}" removed from ${row.target_name}: ${why}`,
    { entityId: row.entity_id, agentId: row.agent_id },
    {
      deployment_id: row.id,
      fleet_id: row.fleet_id,
      removal_id: replacedBy,
      before: { [row.policy]: policyValueOf(row), target: row.target_name },
      after: null,
    },
  );
}

async function itemTarget(ctx: PolicyContext, input: DeployInput, entityId: number): Promise<Target> {
  if (input.fleetId !== undefined) {
    const target = await fleetTarget(ctx, input.fleetId);
    if ((await ctx.fleets.get(input.fleetId)).entity_id !== entityId)
      throw badRequest('The fleet belongs to another entity than the item');
    return { ...target, agentId: null };
  }
  const target = await agentTarget(ctx, input.agentId!);
  if (target.agents[0]!.entity_id !== entityId) throw badRequest('The agent belongs to another entity than the item');
  return { ...target, fleetId: null };
}

/** A fleet or one device, with the entity the assignment belongs to. */
async function targetOf(
  ctx: PolicyContext,
  fleetId: number | undefined,
  agentId: number | undefined,
): Promise<Target & { entityId: number }> {
  if (fleetId !== undefined)
    return { ...(await fleetTarget(ctx, fleetId)), agentId: null, entityId: (await ctx.fleets.get(fleetId)).entity_id };
  const target = await agentTarget(ctx, agentId!);
  return { ...target, fleetId: null, entityId: target.agents[0]!.entity_id };
}

async function fleetTarget(ctx: PolicyContext, fleetId: number) {
  const fleet = await ctx.fleets.get(fleetId);
  return {
    fleetId: fleet.id,
    name: `fleet "${fleet.name}"`,
    topic: `/${fleet.entity_id}/fleet/${fleet.id}`,
    agents: await ctx.repo.agentsOfFleet(fleet.id),
  };
}

async function agentTarget(ctx: PolicyContext, agentId: number) {
  const agent = await visibleAgent(ctx, agentId);
  if (!agent) throw itemNotFound('Agent not found');
  return { agentId: agent.id, name: agent.name, topic: agent.topic, agents: [agent] };
}

/** The catalogue's entry of `symbol`, `value` checked against it: 400 for an unknown policy or a value it does not take. */
export function checkedPolicy(symbol: string, value: unknown): PolicyDefinition {
  const definition = knownPolicy(symbol);
  if (!Value.Check(definition.schema, value)) throw badRequest(`${definition.symbol}: ${expected(definition)}`);
  return definition;
}

/** The catalogue entry of a policy, or a 400 naming what is wrong. */
function knownPolicy(symbol: string): PolicyDefinition {
  const definition = policyDefinition(symbol);
  if (!definition)
    throw new ApiError(
      400,
      'ERROR_UNKNOWN_POLICY',
      `Unknown policy "${symbol.slice(0, 64)}": see GET /api/policies for the catalogue`,
    );
  return definition;
}

/** What a policy takes, for its 400. */
export function expected(definition: PolicyDefinition): string {
  switch (definition.type) {
    case 'bool':
      return 'expected true or false';
    case 'int': {
      const schema = definition.schema as { minimum?: number; maximum?: number };
      return `expected an integer from ${schema.minimum} to ${schema.maximum}${definition.unit ? ` (${definition.unit})` : ''}`;
    }
    case 'dropdown':
      return `expected one of ${definition.choices!.map((choice) => choice.value).join(', ')}`;
    case 'deployment':
      return `expected ${(definition.schema as { description?: string }).description ?? 'an item'}`;
  }
}
