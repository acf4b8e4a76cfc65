import { unlessDiskFull } from '../db/disk-full.ts';
import type { Sql } from '../db/sql.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FileStore, StoredRecord } from '../files/store.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { itemNotFound } from '../errors.ts';
import { assign, checkedPolicy, undeploy, unassignValue, type AssignInput } from './assignments.ts';
import { PolicyContext, type VerificationSource } from './context.ts';
import { followEvent, syncAgent } from './membership.ts';
import type { PolicyChannel } from './outbox.ts';
import type { AgentInScope, TaskRow } from './repository.ts';
import { downloaded, report, reportByStatusId, searchStatuses, type ReportSource } from './task-reports.ts';
import {
  compliance,
  detail,
  effectiveOf,
  list,
  tasksOfAgent,
  view,
  visibleAssignment,
  type AssignmentFilter,
  type ComplianceView,
  type DeploymentView,
  type EffectivePolicy,
  type TaskView,
} from './views.ts';
import { OPEN_STATUSES } from './wire.ts';
import { assignToView, syncAllViews, unassignView, type ViewAssignInput, type ViewMembership } from './view-targets.ts';
import { policyDefinition, type ViewAssignment } from '../../../src-shared/contract/index.ts';
import type { ViewAssignmentRow } from './view-assignment-repository.ts';

// The policies room's one entry point. Its parts, each in a module of its own:
//   assignments.ts       assigning and removing (value policies and the four deployment kinds)
//   server-decisions.ts  incompatible and overriden, decided by the server
//   membership.ts        tasks following devices and fleets (join, leave, unenroll, delete)
//   task-reports.ts      the devices' status reports and completed downloads
//   views.ts             what the admin API shows (progress, details, effective policies, compliance)
//   outbox.ts            transactions and the retained messages published once they commit
//   context.ts           what they share (the repository, events, fleets, stored items, the outbox)

/**
 * Assignments of the policy catalogue (value policies and the four deployment kinds) to fleets or
 * single devices: the policies published to the broker, one task per device in scope, and the
 * statuses the devices report (MQTT or REST). Devices that join a fleet get its tasks; devices
 * that leave get their open tasks canceled.
 */
export class PolicyService {
  private readonly ctx: PolicyContext;
  private readonly unsubscribe: () => void;

  constructor(deps: {
    db: Sql;
    events: EventLog;
    work: UnitOfWork;
    fleets: FleetService;
    files: FileStore;
    /** Package installs checked against the devices' inventories (verification.ts). */
    verification?: VerificationSource;
    /** Saved views, as targets of assignments (view-targets.ts). */
    views?: ViewMembership;
    /** How often views are evaluated again for their terms of time (last_contact); default a minute. */
    viewSyncMs?: number;
  }) {
    this.ctx = new PolicyContext(deps);
    this.unsubscribe = deps.events.subscribe((event) => followEvent(this.ctx, event));
    this.viewSyncMs = deps.viewSyncMs ?? 60_000;
  }

  private readonly viewSyncMs: number;
  private viewTimer: ReturnType<typeof setInterval> | null = null;

  /**
   * Evaluates the views' members again every `viewSyncMs` (terms of time move devices in and out):
   * the duty `view-sync` (cluster/duties.ts), one node at a time.
   */
  startViewSync(): void {
    if (!this.ctx.views || this.viewTimer) return;
    this.viewTimer = setInterval(() => unlessDiskFull(() => this.syncViews()), this.viewSyncMs);
    this.viewTimer.unref();
  }

  stopViewSync(): void {
    if (this.viewTimer) clearInterval(this.viewTimer);
    this.viewTimer = null;
  }

  /** Assigns a policy or deployment to a saved view: carried to each member device, following membership. */
  async assignToView(viewId: number, input: ViewAssignInput): Promise<ViewAssignment> {
    return this.viewAssignmentOf((await this.ctx.viewAssignments.byId(await assignToView(this.ctx, viewId, input)))!);
  }

  async unassignView(id: number): Promise<ViewAssignment> {
    return this.viewAssignmentOf(await unassignView(this.ctx, id));
  }

  /** A view's assignments, newest first, each with its members' tasks counted. */
  async viewAssignments(viewId: number): Promise<ViewAssignment[]> {
    if (!(await this.ctx.views?.view(viewId))) throw itemNotFound('View not found');
    return Promise.all((await this.ctx.viewAssignments.ofView(viewId)).map((row) => this.viewAssignmentOf(row)));
  }

  /** Every view assignment's members evaluated again (the timer does this; terms of time move devices in and out). */
  async syncViews(): Promise<void> {
    try {
      await syncAllViews(this.ctx);
    } catch (error) {
      await this.ctx.events.record(
        'deployment.error',
        `Views could not be evaluated: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  private async viewAssignmentOf(row: ViewAssignmentRow): Promise<ViewAssignment> {
    const counts = await this.ctx.viewAssignments.counts(row.id);
    return {
      id: row.id,
      view_id: row.view_id,
      view: (await this.ctx.views?.view(row.view_id))?.name ?? '',
      policy: row.policy,
      label: policyDefinition(row.policy)?.label ?? row.policy,
      value: row.value === null ? null : (JSON.parse(row.value) as boolean | number | string),
      item_name: row.item_name,
      state: row.state,
      created_at: row.created_at,
      removed_at: row.removed_at,
      devices: counts.devices,
      done: counts.done,
      pending: counts.pending,
      failed: counts.failed,
      overriden: counts.overriden,
    };
  }

  /** Starts publishing through `channel` (each node publishes the changes it makes). */
  attach(channel: PolicyChannel): void {
    this.ctx.outbox.attach(channel);
  }

  /**
   * Every active policy retained again (a broker may have lost them: the embedded broker keeps them
   * in memory, an external one may have restarted): the duty `policy-republish`, done by the node
   * that takes it (at start on a single node), so several nodes do not each publish them all.
   */
  /** Every active policy's retained message: what a broker that lost them must be given again. */
  async activePolicies(): Promise<Array<{ topic: string; payload: string }>> {
    return (await this.ctx.repo.active()).map((row) => ({ topic: row.topic, payload: row.payload }));
  }

  async republishAll(): Promise<number> {
    const active = await this.ctx.repo.active();
    for (const row of active) await this.ctx.outbox.publish(row.topic, row.payload);
    return active.length;
  }

  close(): void {
    this.stopViewSync();
    this.unsubscribe();
    this.ctx.outbox.attach(null);
  }

  list(filter: AssignmentFilter = {}): Promise<DeploymentView[]> {
    return list(this.ctx, filter);
  }

  /** Sets any policy (a value, or a deployment kind) on a fleet or one device (see assignments.ts `assign`). */
  async assign(input: AssignInput): Promise<DeploymentView> {
    return view(this.ctx, await assign(this.ctx, input));
  }

  /** Checks a policy and its value against the catalogue (400 when unknown or not taken), as `assign` does first. */
  checkValue(policy: string, value: unknown): void {
    checkedPolicy(policy, value);
  }

  /** Removes any assignment: a value policy's retained message is cleared; a deployment is undeployed. */
  async unassign(id: number): Promise<{ removed: DeploymentView; removal: DeploymentView | null }> {
    const row = await this.ctx.repo.byId(id);
    if (!row || !(await visibleAssignment(this.ctx, row))) throw itemNotFound('Assignment not found');
    if (row.value === null) return this.undeploy(id);
    await unassignValue(this.ctx, row);
    return { removed: await view(this.ctx, id), removal: null };
  }

  /** The device's tasks of active assignments, with where each value comes from and which applies. */
  effectiveOf(agentId: number): Promise<EffectivePolicy[]> {
    return effectiveOf(this.ctx, agentId);
  }

  /** Every enrolled device (of one fleet, or all) with its tasks of active assignments counted. */
  compliance(fleetId: number | null): Promise<ComplianceView[]> {
    return compliance(this.ctx, fleetId);
  }

  /** One assignment with its tasks and each task's history. */
  detail(id: number): Promise<DeploymentView & { tasks: TaskView[] }> {
    return detail(this.ctx, id);
  }

  /** Removes a deployment: its retained policy is cleared, open tasks canceled, and (remove_on_delete) the removal published. */
  async undeploy(id: number): Promise<{ removed: DeploymentView; removal: DeploymentView | null }> {
    const removal = await undeploy(this.ctx, id);
    return { removed: await view(this.ctx, id), removal: removal === null ? null : await view(this.ctx, removal) };
  }

  tasksOfAgent(agentId: number): Promise<TaskView[]> {
    return tasksOfAgent(this.ctx, agentId);
  }

  /** A status report of a device for the task `taskId` (an assignment id) of its own. */
  report(agentId: number, taskId: number, body: unknown, source: ReportSource): Promise<TaskRow> {
    return report(this.ctx, agentId, taskId, body, source);
  }

  /** PUT PluginMdmTaskstatus/<id>: the status row `statusId`, which must belong to the session's device. */
  reportByStatusId(agentId: number, statusId: number, body: unknown): Promise<TaskRow> {
    return reportByStatusId(this.ctx, agentId, statusId, body);
  }

  /** A device's session was sent the whole of a file or package: its open tasks of that item note it. */
  async downloaded(
    session: { userId: number; enrolledAgentId: number | null },
    kind: 'file' | 'package',
    itemId: number,
  ): Promise<void> {
    await downloaded(this.ctx, session, kind, itemId);
  }

  /** The device behind an agent-API session (its own account), or null for a person's session. */
  agentOfAccount(userId: number): Promise<AgentInScope | undefined> {
    return this.ctx.repo.agentOfAccount(userId);
  }

  /** search/PluginMdmTaskstatus as the reference agent asks it: its agent id and the task id. */
  searchStatuses(agentId: number, criteria: { agentId?: number | undefined; taskId?: number | undefined }): Promise<TaskRow[]> {
    return searchStatuses(this.ctx, agentId, criteria);
  }

  /** Fleet membership changed (enrolled, enrolled again, moved): tasks of the new fleet opened, of the old one canceled. */
  async syncAgent(agentId: number): Promise<void> {
    await syncAgent(this.ctx, agentId);
  }
}

export { folderPath } from './assignments.ts';
export { incompatibility } from './server-decisions.ts';
export { progressText } from './views.ts';
export type { AssignInput, DeployInput } from './assignments.ts';
export type { PolicyChannel } from './outbox.ts';
export type { ReportSource } from './task-reports.ts';
export type { ComplianceView, DeploymentView, EffectivePolicy, TaskView } from './views.ts';
export { OPEN_STATUSES, type StoredRecord };
