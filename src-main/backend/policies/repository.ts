import { ENROLL_STATUS } from '../agents/status.ts';
import type { Sql } from '../db/sql.ts';
import { dialect } from '../db/dialect.ts';
import type { TaskStatus } from './wire.ts';
import { inFleetsSql } from '../fleets/fleet-repository.ts';

export interface DeploymentRow {
  id: number;
  entity_id: number;
  /** A symbol of the policy catalogue. */
  policy: string;
  /** Value policies: the value as JSON; null for the deployment kinds. */
  value: string | null;
  item_kind: 'file' | 'package' | null;
  item_id: number | null;
  item_name: string;
  fleet_id: number | null;
  agent_id: number | null;
  target_name: string;
  destination: string | null;
  remove_on_delete: number;
  topic: string;
  payload: string;
  state: 'active' | 'removed';
  removed_by: number | null;
  created_at: string;
  removed_at: string | null;
  /** Set on the device-level row that carries a view's assignment to one member device (view-targets.ts). */
  view_assignment_id: number | null;
}

export interface TaskCounts {
  total: number;
  pending: number;
  in_progress: number;
  done: number;
  failed: number;
  canceled: number;
  incompatible: number;
  overriden: number;
}

export type DeploymentWithCounts = DeploymentRow & TaskCounts;

export interface TaskRow {
  id: number;
  deployment_id: number;
  agent_id: number;
  agent_name: string;
  status: TaskStatus;
  reason: string | null;
  created_at: string;
  updated_at: string;
  /** When the device last downloaded the deployed item completely while this task was open. */
  downloaded_at: string | null;
}

export interface TaskHistoryRow {
  task_id: number;
  status: TaskStatus;
  reason: string | null;
  source: 'server' | 'mqtt' | 'http';
  at: string;
}

export interface AgentInScope {
  id: number;
  entity_id: number;
  fleet_id: number;
  name: string;
  topic: string;
  /** From the last inventory (null until one arrived). */
  os_version: string | null;
  /** From the enrollment: 1, 0, or null when the agent did not say. */
  has_system_permission: number | null;
}

/** A task of an active assignment, with what decides its status. */
export interface LiveTask {
  id: number;
  deployment_id: number;
  agent_id: number;
  status: TaskStatus;
  policy: string;
  fleet_id: number | null;
}

/** A device's tasks counted by status (the compliance of one device). */
export interface AgentCompliance extends TaskCounts {
  agent_id: number;
  agent_name: string;
  fleet_id: number;
  last_change: string | null;
}

const COUNTS = `count(t.id) AS total,
  coalesce(sum(CASE WHEN t.status = 'pending' THEN 1 ELSE 0 END), 0) AS pending,
  coalesce(sum(CASE WHEN t.status IN ('received', 'in progress', 'waiting') THEN 1 ELSE 0 END), 0) AS in_progress,
  coalesce(sum(CASE WHEN t.status = 'done' THEN 1 ELSE 0 END), 0) AS done,
  coalesce(sum(CASE WHEN t.status = 'failed' THEN 1 ELSE 0 END), 0) AS failed,
  coalesce(sum(CASE WHEN t.status = 'canceled' THEN 1 ELSE 0 END), 0) AS canceled,
  coalesce(sum(CASE WHEN t.status = 'incompatible' THEN 1 ELSE 0 END), 0) AS incompatible,
  coalesce(sum(CASE WHEN t.status = 'overriden' THEN 1 ELSE 0 END), 0) AS overriden`;

const AGENT_COLUMNS = 'id, entity_id, fleet_id, name, topic, os_version, has_system_permission';
const DEPLOYMENT_KINDS = `('deployApp', 'deployFile', 'removeApp', 'removeFile')`;

/** The target's name as it is now (a fleet or view renamed since), else as it was when deployed. */
const CURRENT_TARGET = `coalesce(
  (SELECT 'view "' || v.name || '" (' || a.name || ')' FROM view_assignments va JOIN device_views v ON v.id = va.view_id
     JOIN agents a ON a.id = d.agent_id WHERE va.id = d.view_assignment_id),
  (SELECT 'fleet "' || f.name || '"' FROM fleets f WHERE f.id = d.fleet_id), (SELECT a.name FROM agents a WHERE a.id = d.agent_id),
  d.target_name) AS target_name`;

/** The SQL of deployments, their per-device tasks and the tasks' history. */
export class DeploymentRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      insert: `INSERT INTO policy_assignments (entity_id, policy, value, item_kind, item_id, item_name, fleet_id, agent_id, target_name, destination,
           remove_on_delete, topic, payload, created_at, view_assignment_id)
         VALUES (@entity_id, @policy, @value, @item_kind, @item_id, @item_name, @fleet_id, @agent_id, @target_name, @destination,
           @remove_on_delete, '', '', @created_at, @view_assignment_id) RETURNING id`,
      setMessage: `UPDATE policy_assignments SET topic = ?, payload = ? WHERE id = ?`,
      byId: `SELECT * FROM policy_assignments WHERE id = ?`,
      withCounts: `SELECT d.*, ${CURRENT_TARGET}, ${COUNTS} FROM policy_assignments d LEFT JOIN policy_tasks t ON t.deployment_id = d.id WHERE d.id = ? GROUP BY d.id`,
      list: `SELECT d.*, ${CURRENT_TARGET}, ${COUNTS} FROM policy_assignments d LEFT JOIN policy_tasks t ON t.deployment_id = d.id
         WHERE (CAST(@fleet_id AS bigint) IS NULL OR d.fleet_id = @fleet_id) AND (CAST(@agent_id AS bigint) IS NULL OR d.agent_id = @agent_id)
           AND (CAST(@state AS text) IS NULL OR d.state = @state) AND (CAST(@policy AS text) IS NULL OR d.policy = @policy)
           AND (CAST(@kind AS text) IS NULL OR (d.policy IN ${DEPLOYMENT_KINDS}) = (@kind = 'deployment'))
           AND (d.view_assignment_id IS NULL OR CAST(@agent_id AS bigint) IS NOT NULL)
           AND ${inFleetsSql(this.sql.engine, 'coalesce(d.fleet_id, (SELECT fleet_id FROM agents WHERE id = d.agent_id))')}
         GROUP BY d.id ORDER BY d.id DESC LIMIT 1000`,
      active: `SELECT * FROM policy_assignments WHERE state = 'active' ORDER BY id`,
      activeForFleet: `SELECT * FROM policy_assignments WHERE state = 'active' AND fleet_id = ? ORDER BY id`,
      activeForAgent: `SELECT * FROM policy_assignments WHERE state = 'active' AND agent_id = ? ORDER BY id`,
      // Set on the target itself: a view's rows on a device are not the device's own (view-targets.ts).
      activeOnTarget: `SELECT * FROM policy_assignments WHERE state = 'active' AND policy = ? AND ${dialect(this.sql.engine).same('fleet_id', '?')} AND ${dialect(this.sql.engine).same('agent_id', '?')} AND view_assignment_id IS NULL
         ORDER BY id`,
      activeSame: `SELECT * FROM policy_assignments WHERE state = 'active' AND policy = @policy AND ${dialect(this.sql.engine).same('item_kind', '@item_kind')} AND ${dialect(this.sql.engine).same('item_id', '@item_id')}
           AND ${dialect(this.sql.engine).same('fleet_id', '@fleet_id')} AND ${dialect(this.sql.engine).same('agent_id', '@agent_id')}`,
      activeViewRows: `SELECT * FROM policy_assignments WHERE state = 'active' AND agent_id = ? AND policy = ? AND view_assignment_id IS NOT NULL ORDER BY id`,
      activeSameOwn: `SELECT * FROM policy_assignments WHERE state = 'active' AND policy = @policy AND ${dialect(this.sql.engine).same('item_kind', '@item_kind')} AND ${dialect(this.sql.engine).same('item_id', '@item_id')}
           AND ${dialect(this.sql.engine).same('fleet_id', '@fleet_id')} AND ${dialect(this.sql.engine).same('agent_id', '@agent_id')} AND view_assignment_id IS NULL`,
      remove: `UPDATE policy_assignments SET state = 'removed', removed_at = ?, removed_by = ? WHERE id = ? AND state = 'active'`,
      agentsOfFleet: `SELECT ${AGENT_COLUMNS} FROM agents WHERE fleet_id = ? AND enroll_status != '${ENROLL_STATUS.unenrolled}' ORDER BY id`,
      agent: `SELECT ${AGENT_COLUMNS} FROM agents WHERE id = ?`,
      agentOfAccount: `SELECT ${AGENT_COLUMNS} FROM agents WHERE account_user_id = ?`,
      liveTasksOfAgent: `SELECT t.id, t.deployment_id, t.agent_id, t.status, d.policy, d.fleet_id FROM policy_tasks t
         JOIN policy_assignments d ON d.id = t.deployment_id WHERE t.agent_id = ? AND d.state = 'active' ORDER BY t.id`,
      activeFleetSymbolTask: `SELECT t.id, t.deployment_id, t.agent_id, t.status, d.policy, d.fleet_id FROM policy_tasks t
         JOIN policy_assignments d ON d.id = t.deployment_id
         WHERE t.agent_id = ? AND d.fleet_id = ? AND d.policy = ? AND d.state = 'active'`,
      compliance: `SELECT a.id AS agent_id, a.name AS agent_name, a.fleet_id, max(t.updated_at) AS last_change, ${COUNTS}
         FROM agents a
         LEFT JOIN policy_tasks t ON t.agent_id = a.id AND t.deployment_id IN (SELECT id FROM policy_assignments WHERE state = 'active')
         WHERE a.enroll_status != '${ENROLL_STATUS.unenrolled}' AND (CAST(@fleet_id AS bigint) IS NULL OR a.fleet_id = @fleet_id)
           AND ${inFleetsSql(this.sql.engine, 'a.fleet_id')}
         GROUP BY a.id ORDER BY a.id LIMIT 10000`,
      insertTask: `INSERT INTO policy_tasks (deployment_id, agent_id, status, reason, created_at, updated_at) VALUES (?, ?, 'pending', NULL, ?, ?)
         ON CONFLICT (deployment_id, agent_id) DO UPDATE SET status = 'pending', reason = NULL, updated_at = excluded.updated_at,
           downloaded_at = NULL
           WHERE policy_tasks.status = 'canceled'
         RETURNING id`,
      task: `SELECT t.*, a.name AS agent_name FROM policy_tasks t JOIN agents a ON a.id = t.agent_id WHERE t.id = ?`,
      taskOf: `SELECT t.*, a.name AS agent_name FROM policy_tasks t JOIN agents a ON a.id = t.agent_id WHERE t.deployment_id = ? AND t.agent_id = ?`,
      tasksOf: `SELECT t.*, a.name AS agent_name FROM policy_tasks t JOIN agents a ON a.id = t.agent_id WHERE t.deployment_id = ? ORDER BY t.id`,
      tasksOfAgent: `SELECT t.*, a.name AS agent_name FROM policy_tasks t JOIN agents a ON a.id = t.agent_id WHERE t.agent_id = ? ORDER BY t.id DESC`,
      openTasksOf: `SELECT id, agent_id FROM policy_tasks WHERE deployment_id = ? AND status IN ('pending', 'received', 'in progress', 'waiting')`,
      // Whether syncAgent has anything to open or cancel: an open task of the device (a superset of
      // openFleetTasksElsewhere's), an active assignment of its fleet or of its own. One statement
      // without a join or ORDER BY: SQLite plans those anew on every run (their bound values weigh
      // in the plan, and better-sqlite3 clears the bindings after each run), which made the three
      // lookups it replaces 3% of an enrollment's CPU.
      anythingToSync: `SELECT CASE WHEN
           EXISTS (SELECT 1 FROM policy_tasks WHERE agent_id = @agent_id
             AND status IN ('pending', 'received', 'in progress', 'waiting', 'incompatible', 'overriden'))
           OR EXISTS (SELECT 1 FROM policy_assignments WHERE state = 'active'
             AND fleet_id = (SELECT fleet_id FROM agents WHERE id = @agent_id))
           OR EXISTS (SELECT 1 FROM policy_assignments WHERE state = 'active' AND agent_id = @agent_id)
         THEN 1 ELSE 0 END`,
      openFleetTasksElsewhere: `SELECT t.id, t.deployment_id, d.target_name FROM policy_tasks t JOIN policy_assignments d ON d.id = t.deployment_id
         WHERE t.agent_id = ? AND d.fleet_id IS NOT NULL AND d.fleet_id != ?
           AND t.status IN ('pending', 'received', 'in progress', 'waiting', 'incompatible', 'overriden')`,
      openTasksOfAgent: `SELECT t.id, t.deployment_id FROM policy_tasks t WHERE t.agent_id = ? AND t.status IN ('pending', 'received', 'in progress', 'waiting')`,
      markDownloaded: `UPDATE policy_tasks SET downloaded_at = @at
         WHERE agent_id = @agent_id AND status IN ('pending', 'received', 'in progress', 'waiting')
           AND deployment_id IN (SELECT id FROM policy_assignments WHERE state = 'active' AND item_kind = @kind AND item_id = @item_id
             AND policy IN ('deployApp', 'deployFile'))
         RETURNING id, deployment_id`,
      setStatus: `UPDATE policy_tasks SET status = ?, reason = ?, updated_at = ? WHERE id = ?`,
      history: `INSERT INTO task_history (task_id, status, reason, source, at) VALUES (?, ?, ?, ?, ?)`,
      historyOf: `SELECT task_id, status, reason, source, at FROM task_history WHERE task_id = ? ORDER BY id`,
      historyOfDeployment: `SELECT h.task_id, h.status, h.reason, h.source, h.at FROM task_history h JOIN policy_tasks t ON t.id = h.task_id
         WHERE t.deployment_id = ? ORDER BY h.id`,
    };
  }

  async insert(
    row: Omit<DeploymentRow, 'id' | 'topic' | 'payload' | 'state' | 'removed_by' | 'removed_at' | 'view_assignment_id'> & {
      view_assignment_id?: number | null | undefined;
    },
  ): Promise<number> {
    return Number(await this.sql.value<number>(this.s.insert, { ...row, view_assignment_id: row.view_assignment_id ?? null }));
  }

  async setMessage(id: number, topic: string, payload: string): Promise<void> {
    await this.sql.run(this.s.setMessage, [topic, payload, id]);
  }

  async byId(id: number): Promise<DeploymentRow | undefined> {
    return (await this.sql.get(this.s.byId, [id])) as DeploymentRow | undefined;
  }

  async withCounts(id: number): Promise<DeploymentWithCounts | undefined> {
    return (await this.sql.get(this.s.withCounts, [id])) as DeploymentWithCounts | undefined;
  }

  async list(filter: {
    fleet_id?: number | undefined;
    agent_id?: number | undefined;
    state?: string | undefined;
    policy?: string | undefined;
    /** Only the deployment kinds, or only the value policies. */
    kind?: 'deployment' | 'value' | undefined;
    /** fleets/scope.ts fleetScopeParam: null, every fleet; else those whose (or whose devices') assignments are listed. */
    fleets?: string | null | undefined;
  }): Promise<DeploymentWithCounts[]> {
    return (await this.sql.all(this.s.list, {
      fleets: filter.fleets ?? null,
      fleet_id: filter.fleet_id ?? null,
      agent_id: filter.agent_id ?? null,
      state: filter.state ?? null,
      policy: filter.policy ?? null,
      kind: filter.kind ?? null,
    })) as DeploymentWithCounts[];
  }

  /** Every task of the device's active assignments. */
  async liveTasksOfAgent(agentId: number): Promise<LiveTask[]> {
    return (await this.sql.all(this.s.liveTasksOfAgent, [agentId])) as LiveTask[];
  }

  /** The device's task of its fleet's active assignment of `policy`, if any. */
  async activeFleetSymbolTask(agentId: number, fleetId: number, policy: string): Promise<LiveTask | undefined> {
    return (await this.sql.get(this.s.activeFleetSymbolTask, [agentId, fleetId, policy])) as LiveTask | undefined;
  }

  /** Each enrolled device's tasks of active assignments, counted by status. */
  async compliance(fleetId: number | null, fleets: string | null = null): Promise<AgentCompliance[]> {
    return (await this.sql.all(this.s.compliance, { fleet_id: fleetId, fleets })) as AgentCompliance[];
  }

  async active(): Promise<DeploymentRow[]> {
    return (await this.sql.all(this.s.active)) as DeploymentRow[];
  }

  async activeForFleet(fleetId: number): Promise<DeploymentRow[]> {
    return (await this.sql.all(this.s.activeForFleet, [fleetId])) as DeploymentRow[];
  }

  async activeForAgent(agentId: number): Promise<DeploymentRow[]> {
    return (await this.sql.all(this.s.activeForAgent, [agentId])) as DeploymentRow[];
  }

  /** Active assignments of `policy` on a fleet (agentId null) or a device (fleetId null). */
  async activeOnTarget(policy: string, fleetId: number | null, agentId: number | null): Promise<DeploymentRow[]> {
    return (await this.sql.all(this.s.activeOnTarget, [policy, fleetId, agentId])) as DeploymentRow[];
  }

  /** Active deployments of the same policy and item on the same target. */
  async activeSame(
    row: Pick<DeploymentRow, 'policy' | 'item_kind' | 'item_id' | 'fleet_id' | 'agent_id'>,
  ): Promise<DeploymentRow[]> {
    return (await this.sql.all(this.s.activeSame, row)) as DeploymentRow[];
  }

  /** The rows carrying views' assignments of `policy` to this device. */
  async activeViewRows(agentId: number, policy: string): Promise<DeploymentRow[]> {
    return (await this.sql.all(this.s.activeViewRows, [agentId, policy])) as DeploymentRow[];
  }

  /** As activeSame, set on the target itself (not a view's row on a device). */
  async activeSameOwn(
    row: Pick<DeploymentRow, 'policy' | 'item_kind' | 'item_id' | 'fleet_id' | 'agent_id'>,
  ): Promise<DeploymentRow[]> {
    return (await this.sql.all(this.s.activeSameOwn, row)) as DeploymentRow[];
  }

  async markRemoved(id: number, at: string, removedBy: number | null): Promise<boolean> {
    return (await this.sql.run(this.s.remove, [at, removedBy, id])).changes > 0;
  }

  async agentsOfFleet(fleetId: number): Promise<AgentInScope[]> {
    return (await this.sql.all(this.s.agentsOfFleet, [fleetId])) as AgentInScope[];
  }

  async agent(id: number): Promise<AgentInScope | undefined> {
    return (await this.sql.get(this.s.agent, [id])) as AgentInScope | undefined;
  }

  async agentOfAccount(userId: number): Promise<AgentInScope | undefined> {
    return (await this.sql.get(this.s.agentOfAccount, [userId])) as AgentInScope | undefined;
  }

  /** A pending task for the agent (new, or a canceled one reopened); undefined when one is already open or closed. */
  async openTask(deploymentId: number, agentId: number, at: string): Promise<number | undefined> {
    const row = (await this.sql.get(this.s.insertTask, [deploymentId, agentId, at, at])) as { id: number } | undefined;
    return row?.id;
  }

  async task(id: number): Promise<TaskRow | undefined> {
    return (await this.sql.get(this.s.task, [id])) as TaskRow | undefined;
  }

  async taskOf(deploymentId: number, agentId: number): Promise<TaskRow | undefined> {
    return (await this.sql.get(this.s.taskOf, [deploymentId, agentId])) as TaskRow | undefined;
  }

  async tasksOf(deploymentId: number): Promise<TaskRow[]> {
    return (await this.sql.all(this.s.tasksOf, [deploymentId])) as TaskRow[];
  }

  async tasksOfAgent(agentId: number): Promise<TaskRow[]> {
    return (await this.sql.all(this.s.tasksOfAgent, [agentId])) as TaskRow[];
  }

  async openTasksOf(deploymentId: number): Promise<{ id: number; agent_id: number }[]> {
    return (await this.sql.all(this.s.openTasksOf, [deploymentId])) as { id: number; agent_id: number }[];
  }

  /** Whether the device has an open task, or its fleet or itself an active assignment (syncAgent's quick check). */
  async anythingToSync(agentId: number): Promise<boolean> {
    return Number(await this.sql.value(this.s.anythingToSync, { agent_id: agentId })) === 1;
  }

  /** Open tasks of fleet deployments other than `fleetId`'s: what a device that left a fleet still has. */
  async openFleetTasksElsewhere(
    agentId: number,
    fleetId: number,
  ): Promise<{ id: number; deployment_id: number; target_name: string }[]> {
    return (await this.sql.all(this.s.openFleetTasksElsewhere, [agentId, fleetId])) as {
      id: number;
      deployment_id: number;
      target_name: string;
    }[];
  }

  /** Every task of the device still waiting for an outcome, whatever its deployment targets. */
  async openTasksOfAgent(agentId: number): Promise<{ id: number; deployment_id: number }[]> {
    return (await this.sql.all(this.s.openTasksOfAgent, [agentId])) as { id: number; deployment_id: number }[];
  }

  /** The device's open tasks of active deployments of this item: downloaded now. */
  async markDownloaded(
    agentId: number,
    kind: 'file' | 'package',
    itemId: number,
    at: string,
  ): Promise<{ id: number; deployment_id: number }[]> {
    return (await this.sql.all(this.s.markDownloaded, { agent_id: agentId, kind, item_id: itemId, at })) as {
      id: number;
      deployment_id: number;
    }[];
  }

  async setStatus(
    taskId: number,
    status: TaskStatus,
    reason: string | null,
    source: TaskHistoryRow['source'],
    at: string,
  ): Promise<void> {
    await this.sql.run(this.s.setStatus, [status, reason, at, taskId]);
    await this.sql.run(this.s.history, [taskId, status, reason, source, at]);
  }

  async historyOf(taskId: number): Promise<TaskHistoryRow[]> {
    return (await this.sql.all(this.s.historyOf, [taskId])) as TaskHistoryRow[];
  }

  async historyOfDeployment(deploymentId: number): Promise<TaskHistoryRow[]> {
    return (await this.sql.all(this.s.historyOfDeployment, [deploymentId])) as TaskHistoryRow[];
  }
}
