import type { Db } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { itemNotFound } from '../errors.ts';
import type { UserRepository } from '../sessions/users.ts';
import type { AgentSummary } from '../../../src-shared/contract/index.ts';

export interface AgentRow {
  id: number;
  entity_id: number;
  computer_id: number;
  fleet_id: number;
  account_user_id: number;
  enrolled_by_user_id: number | null;
  invitation_id: number | null;
  enrollment_code_id: number | null;
  name: string;
  serial: string | null;
  uuid: string | null;
  version: string;
  type: 'android' | 'apple';
  firstname: string | null;
  lastname: string | null;
  enroll_status: string;
  wipe: number;
  lock: number;
  is_online: number;
  last_report: string | null;
  last_contact: string | null;
  certificate: string;
  topic: string;
  mqtt_login: string;
  mqtt_password_hash: string | null;
  created_at: string;
  updated_at: string;
}

/** One row of the admin's device list: the contract's AgentSummary. */
export type { AgentSummary };

const SUMMARY_SQL = `
  SELECT a.id, a.name, a.serial, a.uuid, a.type, a.version, a.enroll_status, a.is_online, a.last_contact,
         a.last_report, a.lock, a.wipe, a.fleet_id, f.name AS fleet, u.email, a.firstname, a.lastname,
         a.computer_id, a.invitation_id, a.enrollment_code_id, c.name AS enrollment_code, a.topic, a.entity_id, a.created_at, a.updated_at,
         a.model, a.manufacturer, a.os_name, a.os_version
  FROM agents a
  JOIN fleets f ON f.id = a.fleet_id
  LEFT JOIN users u ON u.id = a.enrolled_by_user_id
  LEFT JOIN enrollment_codes c ON c.id = a.enrollment_code_id`;

function toSummary(row: AgentSummary & { is_online: number | boolean }): AgentSummary {
  return { ...row, is_online: Boolean(row.is_online) };
}

/** Enrolled agents as the admin side sees them: list, read, delete. */
export class AgentService {
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly users: UserRepository;
  private readonly statements;

  constructor(deps: { db: Db; events: EventLog; work: UnitOfWork; users: UserRepository }) {
    this.events = deps.events;
    this.work = deps.work;
    this.users = deps.users;
    const db = deps.db;
    this.statements = {
      byId: db.prepare(`SELECT * FROM agents WHERE id = ?`),
      summaries: db.prepare(`${SUMMARY_SQL} ORDER BY a.id DESC`),
      summary: db.prepare(`${SUMMARY_SQL} WHERE a.id = ?`),
      remove: db.prepare(`DELETE FROM agents WHERE id = ?`),
      removeComputer: db.prepare(`DELETE FROM computers WHERE id = ? AND NOT EXISTS (SELECT 1 FROM agents WHERE computer_id = ?)`),
    };
  }

  row(id: number): AgentRow | undefined {
    return this.statements.byId.get(id) as AgentRow | undefined;
  }

  get(id: number): AgentRow {
    const row = this.row(id);
    if (!row) throw itemNotFound('Agent not found');
    return row;
  }

  list(): AgentSummary[] {
    return (this.statements.summaries.all() as AgentSummary[]).map(toSummary);
  }

  summary(id: number): AgentSummary {
    const row = this.statements.summary.get(id) as AgentSummary | undefined;
    if (!row) throw itemNotFound('Agent not found');
    return toSummary(row);
  }

  /** Deletes the agent, its computer and its account (so its api_token stops working). */
  remove(id: number): AgentRow {
    const agent = this.get(id);
    this.work.run(() => {
      this.statements.remove.run(id);
      this.statements.removeComputer.run(agent.computer_id, agent.computer_id);
      this.users.remove(agent.account_user_id); // its sessions go with it (ON DELETE CASCADE)
      this.events.record('agent.deleted', `Agent ${agent.name} deleted`, { entityId: agent.entity_id, agentId: id });
    });
    return agent;
  }
}
