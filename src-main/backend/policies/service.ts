import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog, RecordedEvent } from '../events/event-log.ts';
import type { FileStore, StoredRecord } from '../files/store.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { Value } from 'typebox/value';
import {
  compareAndroidVersions,
  POLICY_CATALOGUE,
  policyDefinition,
  policyWireMessage,
  taskStatusText,
  type PolicyDefinition,
} from '../../../src-shared/contract/index.ts';
import { ApiError, badRequest, itemNotFound } from '../errors.ts';
import {
  deployedFilePath,
  isTaskStatus,
  OPEN_STATUSES,
  policyMessage,
  policyTopic,
  TASK_STATUSES,
  type PolicyValue,
  type TaskStatus,
} from './wire.ts';
import {
  DeploymentRepository,
  type AgentInScope,
  type DeploymentRow,
  type DeploymentWithCounts,
  type LiveTask,
  type TaskHistoryRow,
  type TaskRow,
} from './repository.ts';
import { currentFleetScope, fleetScopeParam, inFleetScope } from '../fleets/scope.ts';

/**
 * Where policies go: retained messages on the broker. The broker module provides it (one small
 * interface, so an external broker can take its place).
 */
export interface PolicyChannel {
  /** Publishes `payload` retained on `topic`; an empty payload clears the retained message. */
  publishRetained(topic: string, payload: string): Promise<void>;
}

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

const CLOSED_FOR_REPORTS: readonly TaskStatus[] = ['canceled'];

export type ReportSource = 'mqtt' | 'http';

const REASON_LIMIT = 1_000;
/** Statuses a device reports once a task is over on it; after them it may only repeat itself. */
const FINISHED_FOR_DEVICE: readonly TaskStatus[] = ['done', 'failed'];
const DEFAULT_DESTINATION = '%SDCARD%/Download/';

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

/**
 * Deployments of files and packages to fleets or single devices: the policies published to the
 * broker, one task per device in scope, and the statuses the devices report (MQTT or REST).
 * Devices that join a fleet get its tasks; devices that leave get their open tasks canceled.
 */
export class PolicyService {
  private readonly repo: DeploymentRepository;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly fleets: FleetService;
  private readonly files: FileStore;
  private channel: PolicyChannel | null = null;
  private pendingPublishes: (() => Promise<void>)[] | null = null;
  private readonly unsubscribe: () => void;

  constructor(deps: { db: Db; events: EventLog; work: UnitOfWork; fleets: FleetService; files: FileStore }) {
    this.repo = new DeploymentRepository(deps.db);
    this.events = deps.events;
    this.work = deps.work;
    this.fleets = deps.fleets;
    this.files = deps.files;
    this.unsubscribe = this.events.subscribe((event) => this.onEvent(event));
  }

  /** Starts publishing through `channel`; every active policy is retained again (a broker keeps them in memory). */
  async attach(channel: PolicyChannel): Promise<number> {
    this.channel = channel;
    const active = this.repo.active();
    for (const row of active) await this.publish(row.topic, row.payload);
    return active.length;
  }

  close(): void {
    this.unsubscribe();
    this.channel = null;
  }

  deploy(input: DeployInput): DeploymentView {
    if ((input.fleetId === undefined) === (input.agentId === undefined))
      throw badRequest('Give exactly one target: a fleet or an agent');
    const item = this.files.get(input.kind, input.itemId);
    if (!item) throw itemNotFound(`${input.kind === 'file' ? 'File' : 'Package'} #${input.itemId} not found`);
    const target = this.target(input, item.entityId);
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
    if (this.repo.activeSame({ policy: value.policy, ...base }).length > 0) {
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
    const conflicting = this.repo
      .activeSame({ policy: opposite, item_kind: null, item_id: null, fleet_id: target.fleetId, agent_id: target.agentId })
      .find((removal) => (JSON.parse(removal.payload) as Record<string, unknown>)[opposite] === oppositeValue);
    if (conflicting) {
      throw new ApiError(
        409,
        'ERROR_POLICY_CONFLICT',
        `${opposite} "${oppositeValue}" is in force on ${target.name} (assignment #${conflicting.id}): remove it first (DELETE /api/deployments/${conflicting.id})`,
      );
    }
    const id = this.transact(() => {
      return this.create(
        item.entityId,
        value.policy,
        (id) => policyMessage(value, id),
        { ...base, value: null, item_name: item.name, destination, remove_on_delete: input.removeOnDelete ? 1 : 0 },
        target,
      );
    });
    return this.view(id);
  }

  list(
    filter: {
      fleet_id?: number | undefined;
      agent_id?: number | undefined;
      state?: 'active' | 'removed' | undefined;
      policy?: string | undefined;
      kind?: 'deployment' | 'value' | undefined;
    } = {},
  ): DeploymentView[] {
    return this.repo.list({ ...filter, fleets: fleetScopeParam() }).map((row) => this.toView(row));
  }

  /**
   * Sets a value policy on a fleet or one device: validated against the catalogue, refused (409)
   * while the same policy is already set there (the reference's unicity), published retained, one
   * task per device in scope. A device-level value beats its fleet's: that fleet task is overriden.
   */
  assign(input: AssignInput): DeploymentView {
    const definition = this.valuePolicy(input.policy);
    if (!Value.Check(definition.schema, input.value)) throw badRequest(`${definition.symbol}: ${expected(definition)}`);
    const value = input.value as boolean | number | string;
    if ((input.fleetId === undefined) === (input.agentId === undefined))
      throw badRequest('Give exactly one target: a fleet or an agent');
    const target =
      input.fleetId !== undefined
        ? { ...this.fleetTarget(input.fleetId), agentId: null }
        : { ...this.agentTarget(input.agentId!), fleetId: null };
    const entityId = target.fleetId !== null ? this.fleets.get(target.fleetId).entity_id : target.agents[0]!.entity_id;
    const same = {
      policy: definition.symbol,
      item_kind: null,
      item_id: null,
      fleet_id: target.fleetId,
      agent_id: target.agentId,
    };
    const existing = this.repo.activeSame(same)[0];
    if (existing) {
      throw new ApiError(
        409,
        'ERROR_POLICY_ALREADY_SET',
        `${definition.symbol} is already set on ${target.name} to ${existing.value ?? '?'} (assignment #${existing.id}): unset it first`,
      );
    }
    const id = this.transact(() =>
      this.create(
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
    return this.view(id);
  }

  /** Removes any assignment: a value policy's retained message is cleared; a deployment is undeployed. */
  unassign(id: number): { removed: DeploymentView; removal: DeploymentView | null } {
    const row = this.repo.byId(id);
    if (!row || !this.visible(row)) throw itemNotFound('Assignment not found');
    if (row.value === null) return this.undeploy(id);
    if (row.state !== 'active') throw new ApiError(409, 'ERROR_ALREADY_REMOVED', `Assignment #${id} was already removed`);
    this.transact(() => this.retire(row, null, 'the policy was unset'));
    return { removed: this.view(id), removal: null };
  }

  /** The device's tasks of active assignments, with where each value comes from and which applies. */
  effectiveOf(agentId: number): EffectivePolicy[] {
    if (!this.visibleAgent(agentId)) throw itemNotFound('Agent not found');
    return this.repo.tasksOfAgent(agentId).flatMap((task) => {
      const row = this.repo.byId(task.deployment_id);
      if (!row || row.state !== 'active') return [];
      return [
        {
          assignment_id: row.id,
          task_id: task.id,
          policy: row.policy,
          label: policyDefinition(row.policy)?.label ?? row.policy,
          value: parseValue(row.value),
          item_name: row.item_name,
          source: row.agent_id !== null ? ('device' as const) : ('fleet' as const),
          source_name: this.repo.withCounts(row.id)?.target_name ?? row.target_name,
          status: task.status,
          reason: task.reason,
          updated_at: task.updated_at,
          effective: task.status !== 'overriden' && task.status !== 'canceled',
        },
      ];
    });
  }

  /** Every enrolled device (of one fleet, or all) with its tasks of active assignments counted. */
  compliance(fleetId: number | null): ComplianceView[] {
    if (fleetId !== null) this.fleets.get(fleetId);
    return this.repo.compliance(fleetId, fleetScopeParam()).map((row) => {
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
    });
  }

  /** One deployment with its tasks and each task's history. */
  detail(id: number): DeploymentView & { tasks: TaskView[] } {
    const view = this.view(id);
    const history = new Map<number, TaskHistoryRow[]>();
    for (const entry of this.repo.historyOfDeployment(id)) {
      let list = history.get(entry.task_id);
      if (!list) history.set(entry.task_id, (list = []));
      list.push(entry);
    }
    return {
      ...view,
      tasks: this.repo
        .tasksOf(id)
        .map((task) => ({ ...task, status_text: taskStatusText(task), history: history.get(task.id) ?? [] })),
    };
  }

  /** Removes a deployment: its retained policy is cleared, open tasks canceled, and (remove_on_delete) the removal published. */
  undeploy(id: number): { removed: DeploymentView; removal: DeploymentView | null } {
    const row = this.repo.byId(id);
    if (!row || !this.visible(row)) throw itemNotFound('Deployment not found');
    if (row.state !== 'active') throw new ApiError(409, 'ERROR_ALREADY_REMOVED', `Deployment #${id} was already removed`);
    const removalId = this.transact(() => {
      let removal: number | null = null;
      if (row.remove_on_delete === 1 && (row.policy === 'deployApp' || row.policy === 'deployFile')) {
        const target =
          row.fleet_id !== null
            ? { ...this.fleetTarget(row.fleet_id), agentId: null }
            : { ...this.agentTarget(row.agent_id!), fleetId: null };
        const message = JSON.parse(row.payload) as Record<string, unknown>;
        const value: PolicyValue =
          row.policy === 'deployApp'
            ? { policy: 'removeApp', value: String(message.deployApp) }
            : { policy: 'removeFile', value: deployedFilePath(String(message.deployFile), row.item_name) };
        removal = this.create(
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
      this.retire(row, removal, 'the deployment was removed');
      return removal;
    });
    return { removed: this.view(id), removal: removalId === null ? null : this.view(removalId) };
  }

  tasksOfAgent(agentId: number): TaskView[] {
    if (!this.visibleAgent(agentId)) throw itemNotFound('Agent not found');
    return this.repo.tasksOfAgent(agentId).map((task) => {
      const deployment = this.repo.byId(task.deployment_id)!;
      return {
        ...task,
        status_text: taskStatusText(task),
        history: this.repo.historyOf(task.id),
        deployment: {
          id: deployment.id,
          policy: deployment.policy,
          item_name: deployment.item_name,
          target_name: deployment.target_name,
          state: deployment.state,
        },
      };
    });
  }

  /**
   * A status report of a device for the task `taskId` (a deployment id) of its own. Refused when the
   * device has no task there (another device's, or a fleet it is not in), or the task is closed.
   */
  report(agentId: number, taskId: number, body: unknown, source: ReportSource): TaskRow {
    const task = this.repo.taskOf(taskId, agentId);
    if (!task) throw new ApiError(404, 'ERROR_ITEM_NOT_FOUND', `Task ${taskId} is not a task of this device`);
    return this.applyReport(task, body, source);
  }

  /** PUT PluginMdmTaskstatus/<id>: the status row `statusId`, which must belong to the session's device. */
  reportByStatusId(agentId: number, statusId: number, body: unknown): TaskRow {
    const task = this.repo.task(statusId);
    // Another device's row is answered as an unknown one: a device learns nothing about others.
    if (!task || task.agent_id !== agentId) throw itemNotFound();
    return this.applyReport(task, body, 'http');
  }

  /**
   * A device's session was sent the whole of a file or package (files/download.ts): its open tasks
   * deploying that item note it, so they read "downloaded, not confirmed" until the device reports.
   * A session that is not a device's (its own account, or the person's that enrolled it) changes nothing.
   */
  downloaded(session: { userId: number; enrolledAgentId: number | null }, kind: 'file' | 'package', itemId: number): void {
    try {
      const agent =
        this.repo.agentOfAccount(session.userId) ??
        (session.enrolledAgentId === null ? undefined : this.repo.agent(session.enrolledAgentId));
      if (!agent) return;
      const at = nowIso();
      const tasks = this.transact(() => this.repo.markDownloaded(agent.id, kind, itemId, at));
      for (const task of tasks) {
        const deployment = this.repo.byId(task.deployment_id)!;
        this.events.record(
          'task.downloaded',
          `${agent.name}: ${deployment.policy} "${deployment.item_name}" downloaded, not confirmed yet`,
          { entityId: agent.entity_id, agentId: agent.id },
          { deployment_id: deployment.id, task_id: task.id, fleet_id: deployment.fleet_id },
        );
      }
    } catch (error) {
      // A download that was served is never undone by the bookkeeping (a full disk, say).
      this.events.record(
        'deployment.error',
        `A completed download could not be noted: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  /** The device behind an agent-API session (its own account), or null for a person's session. */
  agentOfAccount(userId: number): AgentInScope | undefined {
    return this.repo.agentOfAccount(userId);
  }

  /** search/PluginMdmTaskstatus as the reference agent asks it: its agent id and the task id. */
  searchStatuses(agentId: number, criteria: { agentId?: number | undefined; taskId?: number | undefined }): TaskRow[] {
    // A device only ever sees its own rows, whatever agent id it names.
    if (criteria.agentId !== undefined && criteria.agentId !== agentId) return [];
    if (criteria.taskId !== undefined) {
      const task = this.repo.taskOf(criteria.taskId, agentId);
      return task ? [task] : [];
    }
    return this.repo.tasksOfAgent(agentId);
  }

  /** Fleet membership changed (enrolled, enrolled again, moved): tasks of the new fleet opened, of the old one canceled. */
  syncAgent(agentId: number): void {
    const agent = this.repo.agent(agentId);
    if (!agent) return;
    const fleet = this.fleets.byId(agent.fleet_id);
    this.transact(() => {
      const at = nowIso();
      for (const task of this.repo.openFleetTasksElsewhere(agent.id, agent.fleet_id)) {
        this.setStatus(task.id, task.deployment_id, agent, 'canceled', `the device left ${task.target_name}`, 'server', at);
      }
      for (const deployment of this.repo.activeForFleet(agent.fleet_id)) {
        const taskId = this.repo.openTask(deployment.id, agent.id, at);
        if (taskId !== undefined) {
          const decided = this.decide(deployment, agent) ?? {
            status: 'pending' as const,
            reason: `the device joined fleet "${fleet?.name ?? agent.fleet_id}"`,
          };
          this.setStatus(taskId, deployment.id, agent, decided.status, decided.reason, 'server', at);
        }
      }
      // Its own deployments too: tasks canceled when it was unenrolled open again on re-enrollment.
      for (const deployment of this.repo.activeForAgent(agent.id)) {
        const taskId = this.repo.openTask(deployment.id, agent.id, at);
        if (taskId !== undefined) {
          const decided = this.decide(deployment, agent) ?? { status: 'pending' as const, reason: 'the device enrolled again' };
          this.setStatus(taskId, deployment.id, agent, decided.status, decided.reason, 'server', at);
        }
      }
    });
  }

  /** The device is no longer managed (unenrolled, rejected): nothing will report its open tasks. */
  private cancelOpenTasks(agentId: number, why: string): void {
    const agent = this.repo.agent(agentId);
    if (!agent) return;
    this.transact(() => {
      const at = nowIso();
      for (const task of this.repo.openTasksOfAgent(agentId))
        this.setStatus(task.id, task.deployment_id, agent, 'canceled', why, 'server', at);
    });
  }

  private onEvent(event: RecordedEvent): void {
    try {
      if (event.agent_id !== null && ['agent.enrolled', 'agent.reenrolled', 'agent.fleet_changed'].includes(event.type))
        this.syncAgent(event.agent_id);
      if (event.type === 'agent.inventory' && event.agent_id !== null) this.reassess(event.agent_id);
      if (event.type === 'fleet.created') this.clearFleetTopics(Number(event.data?.fleet_id));
      if (event.type === 'fleet.deleted') {
        const fleetId = Number(event.data?.fleet_id);
        for (const row of this.repo.activeForFleet(fleetId)) this.transact(() => this.retire(row, null, 'its fleet was deleted'));
      }
      if (event.type === 'agent.unenrolled' && event.agent_id !== null)
        this.cancelOpenTasks(event.agent_id, 'the device was unenrolled');
      if (event.type === 'agent.rejected' && event.agent_id !== null)
        this.cancelOpenTasks(event.agent_id, 'the device was rejected');
      if (event.type === 'agent.deleted' && event.agent_id !== null) {
        for (const row of this.repo.activeForAgent(event.agent_id))
          this.transact(() => this.retire(row, null, 'its device was deleted'));
      }
    } catch (error) {
      this.events.record(
        'deployment.error',
        `Deployments could not follow ${event.type}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  private applyReport(task: TaskRow, body: unknown, source: ReportSource): TaskRow {
    const input = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : null;
    const status = input?.status;
    if (!isTaskStatus(status) || status === 'overriden') {
      throw new ApiError(
        400,
        'ERROR_BAD_REQUEST',
        `Unknown task status ${JSON.stringify(status ?? null).slice(0, 60)}: expected one of ${TASK_STATUSES.filter((s) => s !== 'overriden').join(', ')}`,
      );
    }
    const rawReason = input?.reason ?? input?.message ?? null;
    const reason = typeof rawReason === 'string' && rawReason.trim() !== '' ? rawReason.trim().slice(0, REASON_LIMIT) : null;
    const deployment = this.repo.byId(task.deployment_id)!;
    if (deployment.state !== 'active')
      throw new ApiError(409, 'ERROR_TASK_CLOSED', `Task ${deployment.id} was removed: its status can no longer change`);
    // The device applies every message it receives; which value applies is the server's decision.
    if (task.status === 'overriden') return task;
    if (CLOSED_FOR_REPORTS.includes(task.status))
      throw new ApiError(
        409,
        'ERROR_TASK_CLOSED',
        `Task ${deployment.id} was canceled for this device: its status can no longer change`,
      );
    // A finished status (done, failed) is final for the device: it cannot take back what it reported
    // (done → pending would hide a delivered file or run the task again); deploying again does.
    if (FINISHED_FOR_DEVICE.includes(task.status)) {
      if (task.status === status) return task; // the same report again (QoS 1 redelivery, a retry) changes nothing
      throw new ApiError(
        409,
        'ERROR_TASK_CLOSED',
        `Task ${deployment.id} is already ${task.status} on this device: a finished status is final (deploy again to run it again)`,
      );
    }
    const agent = this.repo.agent(task.agent_id)!;
    if (task.status === status && task.reason === reason) return task; // a repeated report (QoS 1 redelivery) changes nothing
    this.transact(() => this.setStatus(task.id, deployment.id, agent, status, reason, source, nowIso()));
    return this.repo.task(task.id)!;
  }

  private setStatus(
    taskId: number,
    deploymentId: number,
    agent: AgentInScope,
    status: TaskStatus,
    reason: string | null,
    source: TaskHistoryRow['source'],
    at: string,
  ): void {
    this.repo.setStatus(taskId, status, reason, source, at);
    const deployment = this.repo.byId(deploymentId)!;
    this.events.record(
      'task.status',
      `${agent.name}: ${deployment.policy} "${deployment.item_name}" ${status}${reason ? ` (${reason})` : ''}`,
      { entityId: agent.entity_id, agentId: agent.id },
      { deployment_id: deploymentId, task_id: taskId, status, reason, source, fleet_id: deployment.fleet_id },
    );
  }

  /**
   * Inserts an assignment, its message and a task per device in scope (inside a transaction): pending,
   * or incompatible / overriden where the server already knows. A device-level value of a unique
   * policy makes that device's task of its fleet's value overriden.
   */
  private create(
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
    const id = this.repo.insert({
      entity_id: entityId,
      policy,
      target_name: target.name,
      created_at: at,
      ...fields,
    });
    const topic = policyTopic(target.topic, policy, id);
    const payload = JSON.stringify(messageOf(id));
    this.repo.setMessage(id, topic, payload);
    const row = this.repo.byId(id)!;
    for (const agent of target.agents) {
      const taskId = this.repo.openTask(id, agent.id, at)!;
      const decided = this.decide(row, agent);
      this.repo.setStatus(taskId, decided?.status ?? 'pending', decided?.reason ?? null, 'server', at);
      if (fields.agent_id !== null && policyDefinition(policy)?.unique) {
        const fleetTask = this.repo.activeFleetSymbolTask(agent.id, agent.fleet_id, policy);
        if (fleetTask && fleetTask.status !== 'overriden' && fleetTask.status !== 'canceled')
          this.setStatus(
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
    this.events.record(
      'deployment.created',
      `${policy} "${fields.item_name}" published to ${target.name} (${target.agents.length} device${target.agents.length === 1 ? '' : 's'})`,
      { entityId, agentId: fields.agent_id },
      { deployment_id: id, policy, fleet_id: fields.fleet_id, topic, devices: target.agents.length },
    );
    this.afterCommit(() => this.publish(topic, payload));
    return id;
  }

  /**
   * What the server knows before the device says anything: incompatible (Android version from its
   * inventory below the policy's minimum; a system-only policy on an agent that reported no system
   * permission), overriden (a fleet value where the device has its own), else nothing.
   */
  private decide(row: DeploymentRow, agent: AgentInScope): { status: TaskStatus; reason: string } | null {
    const definition = policyDefinition(row.policy);
    if (!definition) return null;
    const incompatible = incompatibility(definition, agent);
    if (incompatible) return { status: 'incompatible', reason: incompatible };
    if (row.fleet_id !== null && definition.unique) {
      const own = this.repo.activeSame({
        policy: row.policy,
        item_kind: null,
        item_id: null,
        fleet_id: null,
        agent_id: agent.id,
      })[0];
      if (own) return { status: 'overriden', reason: `the device's own value applies (assignment #${own.id})` };
    }
    return null;
  }

  /** A new inventory may change what the device can apply: pending tasks become incompatible, or the reverse. */
  private reassess(agentId: number): void {
    const agent = this.repo.agent(agentId);
    if (!agent) return;
    const changes: { task: LiveTask; status: TaskStatus; reason: string }[] = [];
    for (const task of this.repo.liveTasksOfAgent(agentId)) {
      const definition = policyDefinition(task.policy);
      if (!definition) continue;
      const incompatible = incompatibility(definition, agent);
      if (incompatible && task.status === 'pending') changes.push({ task, status: 'incompatible', reason: incompatible });
      if (!incompatible && task.status === 'incompatible' && this.repo.historyOf(task.id).at(-1)?.source === 'server')
        changes.push({ task, status: 'pending', reason: 'the device can now apply it (new inventory)' });
    }
    if (changes.length === 0) return;
    this.transact(() => {
      const at = nowIso();
      for (const change of changes)
        this.setStatus(change.task.id, change.task.deployment_id, agent, change.status, change.reason, 'server', at);
    });
  }

  /** A new fleet: no stale retained policy of an earlier fleet of that id survives (the reference does the same). */
  private clearFleetTopics(fleetId: number): void {
    const fleet = this.fleets.byId(fleetId);
    if (!fleet) return;
    for (const policy of POLICY_CATALOGUE) void this.publish(`/${fleet.entity_id}/fleet/${fleet.id}/Policy/${policy.symbol}`, '');
  }

  /** The catalogue entry of a value policy, or a 400 naming what is wrong. */
  private valuePolicy(symbol: string): PolicyDefinition {
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

  /** Marks removed, cancels open tasks, clears the retained policy (inside a transaction). */
  private retire(row: DeploymentRow, replacedBy: number | null, why: string): void {
    const at = nowIso();
    if (!this.repo.markRemoved(row.id, at, replacedBy)) return;
    for (const task of this.repo.openTasksOf(row.id)) {
      const agent = this.repo.agent(task.agent_id);
      if (agent) this.setStatus(task.id, row.id, agent, 'canceled', why, 'server', at);
    }
    // A device-level value gone: its fleet's value applies again, and is delivered again.
    if (row.agent_id !== null && policyDefinition(row.policy)?.unique) {
      const agent = this.repo.agent(row.agent_id);
      const fleetTask = agent && this.repo.activeFleetSymbolTask(agent.id, agent.fleet_id, row.policy);
      if (agent && fleetTask?.status === 'overriden') {
        this.setStatus(
          fleetTask.id,
          fleetTask.deployment_id,
          agent,
          'pending',
          `the device's own value was removed`,
          'server',
          at,
        );
        const fleetRow = this.repo.byId(fleetTask.deployment_id)!;
        this.afterCommit(() => this.publish(fleetRow.topic, fleetRow.payload));
      }
    }
    this.events.record(
      'deployment.removed',
      `${row.policy} "${row.item_name}" removed from ${row.target_name}: ${why}`,
      { entityId: row.entity_id, agentId: row.agent_id },
      {
        deployment_id: row.id,
        fleet_id: row.fleet_id,
        removal_id: replacedBy,
      },
    );
    this.afterCommit(() => this.publish(row.topic, ''));
  }

  private target(
    input: DeployInput,
    entityId: number,
  ): { fleetId: number | null; agentId: number | null; name: string; topic: string; agents: AgentInScope[] } {
    if (input.fleetId !== undefined) {
      const target = this.fleetTarget(input.fleetId);
      if (this.fleets.get(input.fleetId).entity_id !== entityId)
        throw badRequest('The fleet belongs to another entity than the item');
      return { ...target, agentId: null };
    }
    const target = this.agentTarget(input.agentId!);
    if (target.agents[0]!.entity_id !== entityId) throw badRequest('The agent belongs to another entity than the item');
    return { ...target, fleetId: null };
  }

  private fleetTarget(fleetId: number) {
    const fleet = this.fleets.get(fleetId);
    return {
      fleetId: fleet.id,
      name: `fleet "${fleet.name}"`,
      topic: `/${fleet.entity_id}/fleet/${fleet.id}`,
      agents: this.repo.agentsOfFleet(fleet.id),
    };
  }

  private agentTarget(agentId: number) {
    const agent = this.visibleAgent(agentId);
    if (!agent) throw itemNotFound('Agent not found');
    return { agentId: agent.id, name: agent.name, topic: agent.topic, agents: [agent] };
  }

  private view(id: number): DeploymentView {
    const row = this.repo.withCounts(id);
    if (!row || !this.visible(row)) throw itemNotFound('Deployment not found');
    return this.toView(row);
  }

  /** The agent, when the request's fleet scope (fleets/scope.ts) lets it see it. */
  private visibleAgent(agentId: number): AgentInScope | undefined {
    const agent = this.repo.agent(agentId);
    return agent && inFleetScope(agent.fleet_id) ? agent : undefined;
  }

  /**
   * Whether the request may see an assignment: its fleet's, or its device's fleet's, within the
   * scope. Another one answers 404, as if it did not exist.
   */
  private visible(row: Pick<DeploymentRow, 'fleet_id' | 'agent_id'>): boolean {
    const scope = currentFleetScope();
    if (scope === null) return true;
    if (row.fleet_id !== null) return scope.includes(row.fleet_id);
    return row.agent_id !== null && this.visibleAgent(row.agent_id) !== undefined;
  }

  private toView(row: DeploymentWithCounts): DeploymentView {
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

  /** A transaction whose policy messages go out once it has committed (a rolled-back one publishes nothing). */
  private transact<T>(work: () => T): T {
    const outer = this.pendingPublishes === null;
    if (outer) this.pendingPublishes = [];
    try {
      const result = this.work.run(work);
      if (outer) for (const publish of this.pendingPublishes!) void publish();
      return result;
    } finally {
      if (outer) this.pendingPublishes = null;
    }
  }

  private afterCommit(work: () => Promise<void>): void {
    if (this.pendingPublishes) this.pendingPublishes.push(work);
    else void work();
  }

  private async publish(topic: string, payload: string): Promise<void> {
    if (!this.channel) return;
    try {
      await this.channel.publishRetained(topic, payload);
    } catch (error) {
      this.events.record(
        'deployment.publish_failed',
        `Policy on ${topic} not published: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
}

/** A folder on the device as the agents need it: ending in `/`. */
export const folderPath = (folder: string): string => (folder.endsWith('/') ? folder : `${folder}/`);

const parseValue = (json: string | null): boolean | number | string | null =>
  json === null ? null : (JSON.parse(json) as boolean | number | string);

/** Why the device cannot apply the policy, as far as the server knows; null when it can (or it does not know). */
export function incompatibility(
  definition: Pick<PolicyDefinition, 'androidMinVersion' | 'systemOnly'>,
  agent: Pick<AgentInScope, 'os_version' | 'has_system_permission'>,
): string | null {
  const version = agent.os_version?.trim() ?? '';
  if (/^\d+(\.\d+)*$/.test(version) && compareAndroidVersions(version, definition.androidMinVersion) < 0)
    return `Android ${version} is older than ${definition.androidMinVersion}, the minimum of this policy`;
  if (definition.systemOnly && agent.has_system_permission === 0)
    return 'this policy needs an agent with system permission, and this one reported none';
  return null;
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

export { OPEN_STATUSES, type StoredRecord };
