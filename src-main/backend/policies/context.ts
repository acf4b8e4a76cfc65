import type { Sql } from '../db/sql.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FileStore } from '../files/store.ts';
import type { FleetService } from '../fleets/fleets.ts';
import type { TaskVerification } from '../../../src-shared/contract/index.ts';
import { PolicyOutbox } from './outbox.ts';
import { DeploymentRepository, type AgentInScope, type TaskHistoryRow } from './repository.ts';
import type { TaskStatus } from './wire.ts';
import { ViewAssignmentRepository } from './view-assignment-repository.ts';

/** Each package task's check against the device's inventory, by task id (verification.ts). */
export interface VerificationSource {
  ofDeployment(deploymentId: number): Promise<Map<number, TaskVerification | null>>;
  ofAgent(agentId: number): Promise<Map<number, TaskVerification | null>>;
}

/** What the policies room needs to know of saved views (the views room implements it). */
export interface ViewMembership {
  view(id: number): Promise<{ id: number; entity_id: number; name: string; where_expr: string } | undefined>;
  /** The enrolled devices the view selects now, in every fleet. */
  memberIds(viewId: number): Promise<number[]>;
  /** Whether one device is in the view now. */
  isMember(viewId: number, agentId: number): Promise<boolean>;
}

/** What every part of the policies room works with: the SQL, the events, fleets, stored items, the outbox. */
export class PolicyContext {
  readonly repo: DeploymentRepository;
  readonly events: EventLog;
  readonly fleets: FleetService;
  readonly files: FileStore;
  readonly outbox: PolicyOutbox;
  /** Package installs checked against the devices' inventories (absent: not checked). */
  readonly verification: VerificationSource | undefined;
  /** Saved views as targets (view-targets.ts); absent: no view can be a target. */
  readonly views: ViewMembership | undefined;
  readonly viewAssignments: ViewAssignmentRepository;

  constructor(deps: {
    db: Sql;
    events: EventLog;
    work: UnitOfWork;
    fleets: FleetService;
    files: FileStore;
    verification?: VerificationSource | undefined;
    views?: ViewMembership | undefined;
  }) {
    this.repo = new DeploymentRepository(deps.db);
    this.events = deps.events;
    this.fleets = deps.fleets;
    this.files = deps.files;
    this.outbox = new PolicyOutbox(deps.work, deps.events);
    this.verification = deps.verification;
    this.views = deps.views;
    this.viewAssignments = new ViewAssignmentRepository(deps.db);
  }

  /** A task's new status: written with its history line, and told as a `task.status` event. */
  async setStatus(
    taskId: number,
    deploymentId: number,
    agent: AgentInScope,
    status: TaskStatus,
    reason: string | null,
    source: TaskHistoryRow['source'],
    at: string,
  ): Promise<void> {
    await this.repo.setStatus(taskId, status, reason, source, at);
    const deployment = (await this.repo.byId(deploymentId))!;
    await this.events.record(
      'task.status',
      `${agent.name}: ${deployment.policy} "${deployment.item_name}" ${status}${reason ? ` (${reason})` : ''}`,
      { entityId: agent.entity_id, agentId: agent.id },
      { deployment_id: deploymentId, task_id: taskId, status, reason, source, fleet_id: deployment.fleet_id },
    );
  }
}
