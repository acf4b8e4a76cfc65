// The SQL of install verification: which package tasks a device's inventory is checked against,
// and the latest check of each task.
import type { Sql } from '../db/sql.ts';
import type { TaskStatus } from './wire.ts';

/** A package task of an active deployment, with what the check needs. */
export interface PackageTask {
  task_id: number;
  deployment_id: number;
  entity_id: number;
  agent_name: string;
  fleet_id: number | null;
  item_id: number | null;
  item_name: string;
  /** The retained message: `deployApp` (the package name) and `versionCode`. */
  payload: string;
  status: TaskStatus;
  downloaded_at: string | null;
  /** When the task last became done (null: never). */
  done_at: string | null;
}

/** A package task and its latest check, if any. */
export interface CheckedTask {
  task_id: number;
  status: TaskStatus;
  downloaded_at: string | null;
  done_at: string | null;
  result: 'verified' | 'not_found' | null;
  detail: string | null;
  inventory_at: string | null;
}

const OPEN = `('pending', 'received', 'in progress', 'waiting')`;
const DONE_AT = `(SELECT max(h.at) FROM task_history h WHERE h.task_id = t.id AND h.status = 'done') AS done_at`;
const CHECKED = `SELECT t.id AS task_id, t.status, t.downloaded_at, ${DONE_AT}, v.result, v.detail, v.inventory_at
  FROM policy_tasks t JOIN policy_assignments d ON d.id = t.deployment_id LEFT JOIN task_verifications v ON v.task_id = t.id
  WHERE d.policy = 'deployApp'`;

export class VerificationRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      /** Tasks that may be checked: done, or still open with their package downloaded. */
      candidates: `SELECT t.id AS task_id, t.deployment_id, d.entity_id, a.name AS agent_name, d.fleet_id, d.item_id, d.item_name, d.payload, t.status,
           t.downloaded_at, ${DONE_AT}
         FROM policy_tasks t JOIN policy_assignments d ON d.id = t.deployment_id JOIN agents a ON a.id = t.agent_id
         WHERE t.agent_id = ? AND d.state = 'active' AND d.policy = 'deployApp'
           AND (t.status = 'done' OR (t.status IN ${OPEN} AND t.downloaded_at IS NOT NULL))
         ORDER BY t.id`,
      save: `INSERT INTO task_verifications (task_id, result, detail, inventory_at, checked_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (task_id) DO UPDATE SET result = excluded.result, detail = excluded.detail,
           inventory_at = excluded.inventory_at, checked_at = excluded.checked_at`,
      ofDeployment: `${CHECKED} AND t.deployment_id = ?`,
      ofAgent: `${CHECKED} AND t.agent_id = ?`,
      ofTask: `${CHECKED} AND t.id = ?`,
    };
  }

  async candidates(agentId: number): Promise<PackageTask[]> {
    return (await this.sql.all(this.s.candidates, [agentId])) as PackageTask[];
  }

  async save(taskId: number, result: 'verified' | 'not_found', detail: string, inventoryAt: string, at: string): Promise<void> {
    await this.sql.run(this.s.save, [taskId, result, detail, inventoryAt, at]);
  }

  async ofDeployment(deploymentId: number): Promise<CheckedTask[]> {
    return (await this.sql.all(this.s.ofDeployment, [deploymentId])) as CheckedTask[];
  }

  async ofAgent(agentId: number): Promise<CheckedTask[]> {
    return (await this.sql.all(this.s.ofAgent, [agentId])) as CheckedTask[];
  }

  async ofTask(taskId: number): Promise<CheckedTask | undefined> {
    return (await this.sql.get(this.s.ofTask, [taskId])) as CheckedTask | undefined;
  }
}
