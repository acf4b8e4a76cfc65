// The SQL of agents and their computers as the admin side and enrollment see them: identity rows,
// the admin's list, approval and deletion. Reports live in report-repository.ts, the broker's
// lookups in broker-repository.ts.
import type { Sql } from '../db/sql.ts';
import { ENROLL_STATUS, FREED, type EnrollStatus } from './status.ts';
import type { AgentSummary } from '../../../src-shared/contract/index.ts';
import { inFleetsSql } from '../fleets/fleet-repository.ts';

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
  /** What the Flyve agents send at enrollment besides the spec's fields. */
  phone: string | null;
  has_system_permission: number | null;
  notification_type: string | null;
  notification_token: string | null;
  /** From the last inventory the device sent (null until then). */
  model: string | null;
  manufacturer: string | null;
  os_name: string | null;
  os_version: string | null;
  /**
   * The number (sessions.seq) of the session that made the device's current enrollment: a POST
   * PluginMdmAgent through a session numbered at or below it is a replay (enrollment.ts). Null:
   * enrolled before sessions were numbered.
   */
  enrolled_session_seq: number | null;
  created_at: string;
  updated_at: string;
}

/** One row of the admin's device list: the contract's AgentSummary. */
export type { AgentSummary };

export interface ComputerRow {
  id: number;
  entity_id: number;
  name: string;
  serial: string | null;
  uuid: string | null;
  user_id: number | null;
  created_at: string;
  updated_at: string;
}

export interface EntityRow {
  id: number;
  name: string;
  parent_id: number | null;
  created_at: string;
}

/** What an enrollment writes into an agent row, whether new or enrolled again. */
export interface EnrollmentFields {
  fleet_id: number;
  enrolled_by_user_id: number;
  invitation_id: number | null;
  enrollment_code_id: number | null;
  enroll_status: EnrollStatus;
  name: string;
  serial: string | null;
  uuid: string | null;
  version: string;
  type: AgentRow['type'];
  firstname: string | null;
  lastname: string | null;
  topic: string;
  mqtt_login: string;
  /** The enrolling session's number (null: a session from before they were numbered). */
  enrolled_session_seq: number | null;
  now: string;
}

/** Reported by the Flyve agents at enrollment; null keeps what is stored. */
export interface DeviceDetails {
  phone: string | null;
  has_system_permission: 0 | 1 | null;
  notification_type: string | null;
  notification_token: string | null;
}

export interface NewComputer {
  entity_id: number;
  name: string;
  serial: string | null;
  uuid: string | null;
  user_id: number;
  now: string;
}

export interface AgentRepository {
  byId(id: number): Promise<AgentRow | undefined>;
  byAccount(userId: number): Promise<AgentRow | undefined>;
  bySerial(entityId: number, serial: string): Promise<AgentRow | undefined>;
  byUuid(entityId: number, uuid: string): Promise<AgentRow | undefined>;
  /** The agent holding this MQTT login (unique across entities). */
  loginOwner(login: string): Promise<{ id: number; name: string } | undefined>;
  /** The device list; `fleets` (fleets/scope.ts fleetScopeParam): null, every fleet; else a JSON array of fleet ids. */
  summaries(fleets: string | null): Promise<AgentSummary[]>;
  summary(id: number, fleets: string | null): Promise<AgentSummary | undefined>;

  insertComputer(computer: NewComputer): Promise<number>;
  /** The device enrolls again: a serial or uuid it does not send is kept. */
  updateComputer(id: number, computer: Omit<NewComputer, 'entity_id'>): Promise<void>;
  computer(id: number): Promise<ComputerRow | undefined>;
  /** Computers with this uuid, or whose serial starts with this prefix (audits and tests). */
  countComputers(match: { uuid: string } | { serialPrefix: string }): Promise<number>;
  insertAgent(fields: EnrollmentFields & { entity_id: number; computer_id: number; account_user_id: number }): Promise<number>;
  /**
   * The device enrolls again: fresh status, commands cleared, its broker password dropped. Only
   * through a session opened after the one of its current enrollment (or when it was freed, or
   * either session predates their numbering): false, and nothing written, for a replay (the same
   * rule as enrollment.ts's isReplay, decided on the row as it is when written, whichever node
   * enrolled it meanwhile).
   */
  reenroll(id: number, fields: EnrollmentFields): Promise<boolean>;
  setDeviceDetails(id: number, details: DeviceDetails): Promise<void>;
  setPasswordHash(id: number, hash: string, at: string): Promise<void>;
  /** Deletes the agent and its computer when no other agent uses it. */
  remove(agent: Pick<AgentRow, 'id' | 'computer_id'>): Promise<void>;

  enrollStatusOfAccount(userId: number): Promise<string | undefined>;
  /** Decides a pending agent; false when it was no longer pending. */
  decidePending(id: number, status: EnrollStatus, passwordHash: string | null, at: string): Promise<boolean>;
  pendingApprovalCount(): Promise<number>;

  /** The entity an agent's record links to. */
  entity(id: number): Promise<EntityRow | undefined>;
}

export const SUMMARY_SQL = `
  SELECT a.id, a.name, a.serial, a.uuid, a.type, a.version, a.enroll_status, a.is_online, a.last_contact,
         a.last_report, a.lock, a.wipe, a.fleet_id, f.name AS fleet, u.email, a.firstname, a.lastname,
         a.computer_id, a.invitation_id, a.enrollment_code_id, c.name AS enrollment_code, a.topic, a.entity_id, a.created_at, a.updated_at,
         a.model, a.manufacturer, a.os_name, a.os_version
  FROM agents a
  JOIN fleets f ON f.id = a.fleet_id
  LEFT JOIN users u ON u.id = a.enrolled_by_user_id
  LEFT JOIN enrollment_codes c ON c.id = a.enrollment_code_id`;

export function toSummary(row: AgentSummary & { is_online: number | boolean }): AgentSummary {
  return { ...row, is_online: Boolean(row.is_online) };
}

export class SqliteAgentRepository implements AgentRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      byId: `SELECT * FROM agents WHERE id = ?`,
      byAccount: `SELECT * FROM agents WHERE account_user_id = ?`,
      bySerial: `SELECT * FROM agents WHERE entity_id = ? AND serial = ?`,
      byUuid: `SELECT * FROM agents WHERE entity_id = ? AND uuid = ?`,
      // MQTT logins are unique across all agents and entities (migration 3's unique index).
      loginOwner: `SELECT id, name FROM agents WHERE mqtt_login = ?`,
      summaries: `${SUMMARY_SQL} WHERE ${inFleetsSql(sql.engine, 'a.fleet_id')} ORDER BY a.id DESC`,
      summary: `${SUMMARY_SQL} WHERE a.id = @id AND ${inFleetsSql(sql.engine, 'a.fleet_id')}`,
      insertComputer: `INSERT INTO computers (entity_id, name, serial, uuid, user_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      updateComputer: `UPDATE computers SET name = ?, serial = coalesce(?, serial), uuid = coalesce(?, uuid), user_id = ?, updated_at = ? WHERE id = ?`,
      computer: `SELECT * FROM computers WHERE id = ?`,
      computersWithUuid: `SELECT count(*) AS n FROM computers WHERE uuid = ?`,
      computersWithSerialPrefix: `SELECT count(*) AS n FROM computers WHERE substr(serial, 1, length(@prefix)) = @prefix`,
      insertAgent: `INSERT INTO agents (entity_id, computer_id, fleet_id, account_user_id, enrolled_by_user_id, invitation_id, enrollment_code_id,
           name, serial, uuid, version, type, firstname, lastname, enroll_status, topic, mqtt_login, enrolled_session_seq, created_at, updated_at)
         VALUES (@entity_id, @computer_id, @fleet_id, @account_user_id, @enrolled_by_user_id, @invitation_id, @enrollment_code_id,
           @name, @serial, @uuid, @version, @type, @firstname, @lastname, @enroll_status, @topic, @mqtt_login, @enrolled_session_seq, @now, @now) RETURNING id`,
      reenroll: `UPDATE agents SET fleet_id = @fleet_id, enrolled_by_user_id = @enrolled_by_user_id, invitation_id = @invitation_id,
           enrollment_code_id = @enrollment_code_id, name = @name, serial = @serial, uuid = @uuid, version = @version, type = @type,
           firstname = @firstname, lastname = @lastname, enroll_status = @enroll_status, wipe = 0, lock = 0, topic = @topic, mqtt_login = @mqtt_login,
           mqtt_password_hash = NULL, enrolled_session_seq = @enrolled_session_seq, updated_at = @now
         WHERE id = @id AND (enroll_status IN (${FREED.map((status) => `'${status}'`).join(', ')})
           OR enrolled_session_seq IS NULL OR CAST(@enrolled_session_seq AS BIGINT) IS NULL OR enrolled_session_seq < CAST(@enrolled_session_seq AS BIGINT))`,
      setDeviceDetails: `UPDATE agents SET phone = coalesce(@phone, phone), has_system_permission = coalesce(@has_system_permission, has_system_permission),
           notification_type = coalesce(@notification_type, notification_type), notification_token = coalesce(@notification_token, notification_token)
         WHERE id = @id`,
      setPasswordHash: `UPDATE agents SET mqtt_password_hash = ?, updated_at = ? WHERE id = ?`,
      remove: `DELETE FROM agents WHERE id = ?`,
      removeComputer: `DELETE FROM computers WHERE id = ? AND NOT EXISTS (SELECT 1 FROM agents WHERE computer_id = ?)`,
      statusOfAccount: `SELECT enroll_status FROM agents WHERE account_user_id = ?`,
      decidePending: `UPDATE agents SET enroll_status = ?, mqtt_password_hash = ?, updated_at = ? WHERE id = ? AND enroll_status = '${ENROLL_STATUS.pendingApproval}'`,
      pendingApproval: `SELECT count(*) AS n FROM agents WHERE enroll_status = '${ENROLL_STATUS.pendingApproval}'`,
      entity: `SELECT * FROM entities WHERE id = ?`,
    };
  }

  async byId(id: number): Promise<AgentRow | undefined> {
    return (await this.sql.get(this.s.byId, [id])) as AgentRow | undefined;
  }

  async byAccount(userId: number): Promise<AgentRow | undefined> {
    return (await this.sql.get(this.s.byAccount, [userId])) as AgentRow | undefined;
  }

  async bySerial(entityId: number, serial: string): Promise<AgentRow | undefined> {
    return (await this.sql.get(this.s.bySerial, [entityId, serial])) as AgentRow | undefined;
  }

  async byUuid(entityId: number, uuid: string): Promise<AgentRow | undefined> {
    return (await this.sql.get(this.s.byUuid, [entityId, uuid])) as AgentRow | undefined;
  }

  async loginOwner(login: string): Promise<{ id: number; name: string } | undefined> {
    return (await this.sql.get(this.s.loginOwner, [login])) as { id: number; name: string } | undefined;
  }

  async summaries(fleets: string | null): Promise<AgentSummary[]> {
    return ((await this.sql.all(this.s.summaries, { fleets })) as AgentSummary[]).map(toSummary);
  }

  async summary(id: number, fleets: string | null): Promise<AgentSummary | undefined> {
    const row = (await this.sql.get(this.s.summary, { id, fleets })) as AgentSummary | undefined;
    return row ? toSummary(row) : undefined;
  }

  async insertComputer(c: NewComputer): Promise<number> {
    return Number(
      await this.sql.value<number>(this.s.insertComputer, [c.entity_id, c.name, c.serial, c.uuid, c.user_id, c.now, c.now]),
    );
  }

  async updateComputer(id: number, c: Omit<NewComputer, 'entity_id'>): Promise<void> {
    await this.sql.run(this.s.updateComputer, [c.name, c.serial, c.uuid, c.user_id, c.now, id]);
  }

  async computer(id: number): Promise<ComputerRow | undefined> {
    return (await this.sql.get(this.s.computer, [id])) as ComputerRow | undefined;
  }

  async countComputers(match: { uuid: string } | { serialPrefix: string }): Promise<number> {
    const row =
      'uuid' in match
        ? await this.sql.get(this.s.computersWithUuid, [match.uuid])
        : await this.sql.get(this.s.computersWithSerialPrefix, { prefix: match.serialPrefix });
    return (row as { n: number }).n;
  }

  async insertAgent(
    fields: EnrollmentFields & { entity_id: number; computer_id: number; account_user_id: number },
  ): Promise<number> {
    return Number(await this.sql.value<number>(this.s.insertAgent, { ...fields }));
  }

  async reenroll(id: number, fields: EnrollmentFields): Promise<boolean> {
    return (await this.sql.run(this.s.reenroll, { ...fields, id })).changes > 0;
  }

  async setDeviceDetails(id: number, details: DeviceDetails): Promise<void> {
    await this.sql.run(this.s.setDeviceDetails, { ...details, id });
  }

  async setPasswordHash(id: number, hash: string, at: string): Promise<void> {
    await this.sql.run(this.s.setPasswordHash, [hash, at, id]);
  }

  async remove(agent: Pick<AgentRow, 'id' | 'computer_id'>): Promise<void> {
    await this.sql.run(this.s.remove, [agent.id]);
    await this.sql.run(this.s.removeComputer, [agent.computer_id, agent.computer_id]);
  }

  async enrollStatusOfAccount(userId: number): Promise<string | undefined> {
    return ((await this.sql.get(this.s.statusOfAccount, [userId])) as { enroll_status: string } | undefined)?.enroll_status;
  }

  async decidePending(id: number, status: EnrollStatus, passwordHash: string | null, at: string): Promise<boolean> {
    return (await this.sql.run(this.s.decidePending, [status, passwordHash, at, id])).changes > 0;
  }

  async pendingApprovalCount(): Promise<number> {
    return ((await this.sql.get(this.s.pendingApproval)) as { n: number }).n;
  }

  async entity(id: number): Promise<EntityRow | undefined> {
    return (await this.sql.get(this.s.entity, [id])) as EntityRow | undefined;
  }
}
