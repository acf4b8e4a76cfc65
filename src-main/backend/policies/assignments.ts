import { nowIso } from '../db/database.ts';
import { Value } from 'typebox/value';
import { policyDefinition, policyWireMessage, type PolicyDefinition } from '../../../src-shared/contract/index.ts';
import { ApiError, badRequest, itemNotFound } from '../errors.ts';
import type { PolicyContext } from './context.ts';
import { decide } from './server-decisions.ts';
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

/** A value policy set on a fleet or one device (POST /api/policy-assignments). */
export interface AssignInput {
  policy: string;
  value: unknown;
  fleetId?: number | undefined;
  agentId?: number | undefined;
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
export function deploy(ctx: PolicyContext, input: DeployInput): number {
  if ((input.fleetId === undefined) === (input.agentId === undefined))
    throw badRequest('Give exactly one target: a fleet or an agent');
  const item = ctx.files.get(input.kind, input.itemId);
  if (!item) throw itemNotFound(`${input.kind === 'file' ? 'File' : 'Package'} #${input.itemId} not found`);
  const target = itemTarget(ctx, input, item.entityId);
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
  if (ctx.repo.activeSame({ policy: value.policy, ...base }).length > 0) {
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
  const conflicting = ctx.repo
    .activeSame({ policy: opposite, item_kind: null, item_id: null, fleet_id: target.fleetId, agent_id: target.agentId })
    .find((removal) => (JSON.parse(removal.payload) as Record<string, unknown>)[opposite] === oppositeValue);
  if (conflicting) {
    throw new ApiError(
      409,
      'ERROR_POLICY_CONFLICT',
      `${opposite} "${oppositeValue}" is in force on ${target.name} (assignment #${conflicting.id}): remove it first (DELETE /api/deployments/${conflicting.id})`,
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
 * Sets a value policy on a fleet or one device: validated against the catalogue, refused (409)
 * while the same policy is already set there (the reference's unicity), published retained, one
 * task per device in scope. A device-level value beats its fleet's: that fleet task is overriden.
 * Returns the assignment's id.
 */
export function assign(ctx: PolicyContext, input: AssignInput): number {
  const definition = valuePolicy(input.policy);
  if (!Value.Check(definition.schema, input.value)) throw badRequest(`${definition.symbol}: ${expected(definition)}`);
  const value = input.value as boolean | number | string;
  if ((input.fleetId === undefined) === (input.agentId === undefined))
    throw badRequest('Give exactly one target: a fleet or an agent');
  const target: Target =
    input.fleetId !== undefined
      ? { ...fleetTarget(ctx, input.fleetId), agentId: null }
      : { ...agentTarget(ctx, input.agentId!), fleetId: null };
  const entityId = target.fleetId !== null ? ctx.fleets.get(target.fleetId).entity_id : target.agents[0]!.entity_id;
  const same = {
    policy: definition.symbol,
    item_kind: null,
    item_id: null,
    fleet_id: target.fleetId,
    agent_id: target.agentId,
  };
  const existing = ctx.repo.activeSame(same)[0];
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
      entityId,
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

/** Removes a value policy: its retained message cleared, open tasks canceled. */
export function unassignValue(ctx: PolicyContext, row: DeploymentRow): void {
  if (row.state !== 'active') throw new ApiError(409, 'ERROR_ALREADY_REMOVED', `Assignment #${row.id} was already removed`);
  ctx.outbox.transact(() => retire(ctx, row, null, 'the policy was unset'));
}

/**
 * Removes a deployment: its retained policy is cleared, open tasks canceled, and (remove_on_delete)
 * the removal published. Returns the removal's id, if one was published.
 */
export function undeploy(ctx: PolicyContext, id: number): number | null {
  const row = ctx.repo.byId(id);
  if (!row) throw itemNotFound('Deployment not found');
  if (row.state !== 'active') throw new ApiError(409, 'ERROR_ALREADY_REMOVED', `Deployment #${id} was already removed`);
  return ctx.outbox.transact(() => {
    let removal: number | null = null;
    if (row.remove_on_delete === 1 && (row.policy === 'deployApp' || row.policy === 'deployFile')) {
      const target: Target =
        row.fleet_id !== null
          ? { ...fleetTarget(ctx, row.fleet_id), agentId: null }
          : { ...agentTarget(ctx, row.agent_id!), fleetId: null };
      const message = JSON.parse(row.payload) as Record<string, unknown>;
      const value: PolicyValue =
        row.policy === 'deployApp'
          ? { policy: 'removeApp', value: String(message.deployApp) }
          : { policy: 'removeFile', value: deployedFilePath(String(message.deployFile), row.item_name) };
      removal = create(
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
    retire(ctx, row, removal, 'the deployment was removed');
    return removal;
  });
}

/**
 * Inserts an assignment, its message and a task per device in scope (inside a transaction): pending,
 * or incompatible / overriden where the server already knows. A device-level value of a unique
 * policy makes that device's task of its fleet's value overriden.
 */
function create(
  ctx: PolicyContext,
  entityId: number,
  policy: string,
  messageOf: (taskId: number) => Record<string, unknown>,
  fields: Pick<
    DeploymentRow,
    'value' | 'item_kind' | 'item_id' | 'item_name' | 'fleet_id' | 'agent_id' | 'destination' | 'remove_on_delete'
  >,
  target: { name: string; topic: string; agents: AgentInScope[] },
): number {
  const at = nowIso();
  const id = ctx.repo.insert({
    entity_id: entityId,
    policy,
    target_name: target.name,
    created_at: at,
    ...fields,
  });
  const topic = policyTopic(target.topic, policy, id);
  const payload = JSON.stringify(messageOf(id));
  ctx.repo.setMessage(id, topic, payload);
  const row = ctx.repo.byId(id)!;
  for (const agent of target.agents) {
    const taskId = ctx.repo.openTask(id, agent.id, at)!;
    const decided = decide(ctx, row, agent);
    ctx.repo.setStatus(taskId, decided?.status ?? 'pending', decided?.reason ?? null, 'server', at);
    if (fields.agent_id !== null && policyDefinition(policy)?.unique) {
      const fleetTask = ctx.repo.activeFleetSymbolTask(agent.id, agent.fleet_id, policy);
      if (fleetTask && fleetTask.status !== 'overriden' && fleetTask.status !== 'canceled')
        ctx.setStatus(
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
  ctx.events.record(
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
  ctx.outbox.afterCommit(() => ctx.outbox.publish(topic, payload));
  return id;
}

/** An assignment's value as the audit trail shows it: the policy's value, or the deployed item's name. */
function policyValueOf(fields: Pick<DeploymentRow, 'value' | 'item_name'>): unknown {
  return fields.value !== null ? (JSON.parse(fields.value) as unknown) : fields.item_name;
}

/** Marks removed, cancels open tasks, clears the retained policy (inside a transaction). */
export function retire(ctx: PolicyContext, row: DeploymentRow, replacedBy: number | null, why: string): void {
  const at = nowIso();
  if (!ctx.repo.markRemoved(row.id, at, replacedBy)) return;
  for (const task of ctx.repo.openTasksOf(row.id)) {
    const agent = ctx.repo.agent(task.agent_id);
    if (agent) ctx.setStatus(task.id, row.id, agent, 'canceled', why, 'server', at);
  }
  // A device-level value gone: its fleet's value applies again, and is delivered again.
  if (row.agent_id !== null && policyDefinition(row.policy)?.unique) {
    const agent = ctx.repo.agent(row.agent_id);
    const fleetTask = agent && ctx.repo.activeFleetSymbolTask(agent.id, agent.fleet_id, row.policy);
    if (agent && fleetTask?.status === 'overriden') {
      ctx.setStatus(fleetTask.id, fleetTask.deployment_id, agent, 'pending', `the device's own value was removed`, 'server', at);
      const fleetRow = ctx.repo.byId(fleetTask.deployment_id)!;
      ctx.outbox.afterCommit(() => ctx.outbox.publish(fleetRow.topic, fleetRow.payload));
    }
  }
  ctx.events.record(
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
  ctx.outbox.afterCommit(() => ctx.outbox.publish(row.topic, ''));
}

function itemTarget(ctx: PolicyContext, input: DeployInput, entityId: number): Target {
  if (input.fleetId !== undefined) {
    const target = fleetTarget(ctx, input.fleetId);
    if (ctx.fleets.get(input.fleetId).entity_id !== entityId)
      throw badRequest('The fleet belongs to another entity than the item');
    return { ...target, agentId: null };
  }
  const target = agentTarget(ctx, input.agentId!);
  if (target.agents[0]!.entity_id !== entityId) throw badRequest('The agent belongs to another entity than the item');
  return { ...target, fleetId: null };
}

function fleetTarget(ctx: PolicyContext, fleetId: number) {
  const fleet = ctx.fleets.get(fleetId);
  return {
    fleetId: fleet.id,
    name: `fleet "${fleet.name}"`,
    topic: `/${fleet.entity_id}/fleet/${fleet.id}`,
    agents: ctx.repo.agentsOfFleet(fleet.id),
  };
}

function agentTarget(ctx: PolicyContext, agentId: number) {
  const agent = ctx.repo.agent(agentId);
  if (!agent) throw itemNotFound('Agent not found');
  return { agentId: agent.id, name: agent.name, topic: agent.topic, agents: [agent] };
}

/** The catalogue entry of a value policy, or a 400 naming what is wrong. */
function valuePolicy(symbol: string): PolicyDefinition {
  const definition = policyDefinition(symbol);
  if (!definition)
    throw new ApiError(
      400,
      'ERROR_UNKNOWN_POLICY',
      `Unknown policy "${symbol.slice(0, 64)}": see GET /api/policies for the catalogue`,
    );
  if (definition.type === 'deployment')
    throw badRequest(`${symbol} deploys or removes an item: use POST /api/deployments (or the CLI's deploy command)`);
  return definition;
}

/** What a value policy takes, for its 400. */
function expected(definition: PolicyDefinition): string {
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
      return 'a deployment';
  }
}
