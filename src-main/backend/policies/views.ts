import { policyDefinition, taskStatusText, type TaskVerification } from '../../../src-shared/contract/index.ts';
import { itemNotFound } from '../errors.ts';
import type { PolicyContext } from './context.ts';
import type {
  AgentCompliance,
  AgentInScope,
  DeploymentRow,
  DeploymentWithCounts,
  TaskHistoryRow,
  TaskRow,
} from './repository.ts';
import { currentFleetScope, fleetScopeParam, inFleetScope } from '../fleets/scope.ts';
import type { TaskStatus } from './wire.ts';

// What the admin API shows of the assignments: each with its progress, its tasks and their
// history, a device's effective policies, each device's compliance.

export type DeploymentView = Omit<DeploymentWithCounts, 'payload' | 'remove_on_delete' | 'value'> & {
  remove_on_delete: boolean;
  /** Value policies: the value; null for the deployment kinds. */
  value: boolean | number | string | null;
  /** The catalogue's label of the policy. */
  label: string;
  message: Record<string, unknown>;
  /** "37 of 40 done, 2 failed, 1 pending" */
  progress: string;
};

export type TaskView = TaskRow & {
  /** The status as shown ("downloaded, not confirmed" for an open task whose item was downloaded). */
  status_text: string;
  /** Package tasks: the install checked against the device's inventory (verification.ts). */
  verification?: TaskVerification | null;
  history?: TaskHistoryRow[];
  deployment?: { id: number; policy: string; item_name: string; target_name: string; state: string };
};

/** One of a device's tasks of active assignments, and whether its value is the one that applies. */
export interface EffectivePolicy {
  assignment_id: number;
  task_id: number;
  policy: string;
  label: string;
  value: boolean | number | string | null;
  item_name: string;
  /** Where the value comes from: the device's fleet or the device itself. */
  source: 'fleet' | 'device';
  source_name: string;
  status: TaskStatus;
  reason: string | null;
  updated_at: string;
  /** False when another value of the same policy applies (this task is overriden). */
  effective: boolean;
  /** Package tasks: the install checked against the device's inventory. */
  verification: TaskVerification | null;
}

/** A device's compliance: its tasks of active assignments counted, and a one-line summary. */
export interface ComplianceView {
  agent_id: number;
  agent_name: string;
  fleet_id: number;
  total: number;
  done: number;
  pending: number;
  in_progress: number;
  failed: number;
  incompatible: number;
  overriden: number;
  state: 'compliant' | 'pending' | 'failing' | 'none';
  summary: string;
  last_change: string | null;
}

export interface AssignmentFilter {
  fleet_id?: number | undefined;
  agent_id?: number | undefined;
  state?: 'active' | 'removed' | undefined;
  policy?: string | undefined;
  kind?: 'deployment' | 'value' | undefined;
}

export function progressText(counts: {
  total: number;
  done: number;
  failed: number;
  pending: number;
  in_progress: number;
  canceled: number;
  incompatible?: number;
  overriden?: number;
}): string {
  const parts = [`${counts.done} of ${counts.total - counts.canceled} done`];
  if (counts.failed > 0) parts.push(`${counts.failed} failed`);
  if ((counts.incompatible ?? 0) > 0) parts.push(`${counts.incompatible} incompatible`);
  if ((counts.overriden ?? 0) > 0) parts.push(`${counts.overriden} overriden`);
  if (counts.in_progress > 0) parts.push(`${counts.in_progress} in progress`);
  if (counts.pending > 0) parts.push(`${counts.pending} pending`);
  if (counts.canceled > 0) parts.push(`${counts.canceled} canceled`);
  return parts.join(', ');
}

export async function list(ctx: PolicyContext, filter: AssignmentFilter = {}): Promise<DeploymentView[]> {
  return (await ctx.repo.list({ ...filter, fleets: fleetScopeParam() })).map((row) => toView(row));
}

export async function view(ctx: PolicyContext, id: number): Promise<DeploymentView> {
  const row = await ctx.repo.withCounts(id);
  if (!row || !(await visibleAssignment(ctx, row))) throw itemNotFound('Deployment not found');
  return toView(row);
}

/** The device, when the request's fleet scope (fleets/scope.ts) lets it see it. */
export async function visibleAgent(ctx: PolicyContext, agentId: number): Promise<AgentInScope | undefined> {
  const agent = await ctx.repo.agent(agentId);
  return agent && inFleetScope(agent.fleet_id) ? agent : undefined;
}

/**
 * Whether the request may see an assignment: its fleet's, or its device's fleet's, within the
 * scope. Another one answers 404, as if it did not exist.
 */
export async function visibleAssignment(ctx: PolicyContext, row: Pick<DeploymentRow, 'fleet_id' | 'agent_id'>): Promise<boolean> {
  const scope = currentFleetScope();
  if (scope === null) return true;
  if (row.fleet_id !== null) return scope.includes(row.fleet_id);
  return row.agent_id !== null && (await visibleAgent(ctx, row.agent_id)) !== undefined;
}

/** One assignment with its tasks and each task's history. */
export async function detail(ctx: PolicyContext, id: number): Promise<DeploymentView & { tasks: TaskView[] }> {
  const shown = await view(ctx, id);
  const history = new Map<number, TaskHistoryRow[]>();
  for (const entry of await ctx.repo.historyOfDeployment(id)) {
    let entries = history.get(entry.task_id);
    if (!entries) history.set(entry.task_id, (entries = []));
    entries.push(entry);
  }
  const verified = await ctx.verification?.ofDeployment(id);
  return {
    ...shown,
    tasks: (await ctx.repo.tasksOf(id)).map((task) => ({
      ...task,
      status_text: taskStatusText(task),
      verification: verified?.get(task.id) ?? null,
      history: history.get(task.id) ?? [],
    })),
  };
}

/** Every task of a device, each with its history and the assignment it belongs to. */
export async function tasksOfAgent(ctx: PolicyContext, agentId: number): Promise<TaskView[]> {
  if (!(await visibleAgent(ctx, agentId))) throw itemNotFound('Agent not found');
  const verified = await ctx.verification?.ofAgent(agentId);
  const views: TaskView[] = [];
  for (const task of await ctx.repo.tasksOfAgent(agentId)) {
    const deployment = (await ctx.repo.byId(task.deployment_id))!;
    views.push({
      ...task,
      status_text: taskStatusText(task),
      verification: verified?.get(task.id) ?? null,
      history: await ctx.repo.historyOf(task.id),
      deployment: {
        id: deployment.id,
        policy: deployment.policy,
        item_name: deployment.item_name,
        target_name: deployment.target_name,
        state: deployment.state,
      },
    });
  }
  return views;
}

/** The device's tasks of active assignments, with where each value comes from and which applies. */
export async function effectiveOf(ctx: PolicyContext, agentId: number): Promise<EffectivePolicy[]> {
  if (!(await visibleAgent(ctx, agentId))) throw itemNotFound('Agent not found');
  const verified = await ctx.verification?.ofAgent(agentId);
  const effective: EffectivePolicy[] = [];
  for (const task of await ctx.repo.tasksOfAgent(agentId)) {
    const row = await ctx.repo.byId(task.deployment_id);
    if (!row || row.state !== 'active') continue;
    effective.push({
      assignment_id: row.id,
      task_id: task.id,
      policy: row.policy,
      label: policyDefinition(row.policy)?.label ?? row.policy,
      value: parseValue(row.value),
      item_name: row.item_name,
      source: row.agent_id !== null ? ('device' as const) : ('fleet' as const),
      source_name: (await ctx.repo.withCounts(row.id))?.target_name ?? row.target_name,
      status: task.status,
      reason: task.reason,
      updated_at: task.updated_at,
      effective: task.status !== 'overriden' && task.status !== 'canceled',
      verification: verified?.get(task.id) ?? null,
    });
  }
  return effective;
}

/** Every enrolled device (of one fleet, or all) with its tasks of active assignments counted. */
export async function compliance(ctx: PolicyContext, fleetId: number | null): Promise<ComplianceView[]> {
  if (fleetId !== null) await ctx.fleets.get(fleetId);
  return (await ctx.repo.compliance(fleetId, fleetScopeParam())).map(complianceOf);
}

/** A device's compliance from its tasks counted: its state and one-line summary (the list's and the exports'). */
export function complianceOf(row: AgentCompliance): ComplianceView {
  const failing = row.failed + row.incompatible;
  const open = row.pending + row.in_progress;
  const parts: string[] = [];
  if (row.failed > 0) parts.push(`${row.failed} failed`);
  if (row.incompatible > 0) parts.push(`${row.incompatible} incompatible`);
  if (open > 0) parts.push(`${open} pending`);
  const applicable = row.total - row.canceled - row.overriden;
  return {
    agent_id: row.agent_id,
    agent_name: row.agent_name,
    fleet_id: row.fleet_id,
    total: applicable,
    done: row.done,
    pending: row.pending,
    in_progress: row.in_progress,
    failed: row.failed,
    incompatible: row.incompatible,
    overriden: row.overriden,
    state: applicable === 0 ? 'none' : failing > 0 ? 'failing' : open > 0 ? 'pending' : 'compliant',
    summary: applicable === 0 ? 'no policy' : parts.length === 0 ? `all ${row.done} done` : parts.join(', '),
    last_change: row.last_change,
  };
}

function toView(row: DeploymentWithCounts): DeploymentView {
  const { payload, remove_on_delete, value, ...rest } = row;
  return {
    ...rest,
    value: parseValue(value),
    label: policyDefinition(row.policy)?.label ?? row.policy,
    remove_on_delete: remove_on_delete === 1,
    message: JSON.parse(payload) as Record<string, unknown>,
    progress: progressText(row),
  };
}

const parseValue = (json: string | null): boolean | number | string | null =>
  json === null ? null : (JSON.parse(json) as boolean | number | string);
