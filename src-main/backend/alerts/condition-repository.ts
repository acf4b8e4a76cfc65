import type { Sql } from '../db/sql.ts';

/** The most subjects one rule tracks at once (a fleet-wide outage of more is one incident per device up to this). */
export const MAX_SUBJECTS = 100_000;

export interface SilentDevice {
  id: number;
  name: string;
  serial: string | null;
  seen_at: string;
}
export interface FailedTask {
  id: number;
  agent_id: number;
  agent_name: string;
  policy: string;
  item_name: string;
  reason: string | null;
  updated_at: string;
}
export interface WaitingDevice {
  id: number;
  name: string;
  serial: string | null;
  created_at: string;
}
export interface FailingDevice {
  id: number;
  name: string;
  failing: number;
}
export interface ExpiringInvitation {
  id: number;
  email: string;
  expires_at: string;
}

/**
 * What the alert conditions read of devices, tasks and invitations: each query answers the subjects
 * for which a condition holds now, in one fleet (`fleet_id`) or all (null). Times are ISO strings
 * computed by the caller (the alert clock).
 */
export interface ConditionRepository {
  /** Enrolled devices offline whose last contact (or enrollment) is before `before`. */
  silentDevices(before: string, fleetId: number | null): Promise<SilentDevice[]>;
  /** Tasks of active assignments that failed. */
  failedTasks(fleetId: number | null): Promise<FailedTask[]>;
  /** Devices waiting for approval since before `before`. */
  waitingDevices(before: string, fleetId: number | null): Promise<WaitingDevice[]>;
  /** Devices with a failed or incompatible task of an active assignment (the console's "failing" compliance). */
  failingDevices(fleetId: number | null): Promise<FailingDevice[]>;
  /** Pending invitations expiring after `now` and by `until`. */
  expiringInvitations(now: string, until: string, fleetId: number | null): Promise<ExpiringInvitation[]>;
}

export class SqliteConditionRepository implements ConditionRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      silent: `SELECT a.id, a.name, a.serial, coalesce(a.last_contact, a.created_at) AS seen_at FROM agents a
         WHERE a.enroll_status = 'enrolled' AND a.is_online = 0 AND coalesce(a.last_contact, a.created_at) < @before
           AND (@fleet_id IS NULL OR a.fleet_id = @fleet_id)
         ORDER BY a.id LIMIT ${MAX_SUBJECTS}`,
      failedTasks: `SELECT t.id, t.agent_id, a.name AS agent_name, d.policy, d.item_name, t.reason, t.updated_at
         FROM policy_tasks t JOIN policy_assignments d ON d.id = t.deployment_id JOIN agents a ON a.id = t.agent_id
         WHERE d.state = 'active' AND t.status = 'failed' AND a.enroll_status != 'unenrolled'
           AND (@fleet_id IS NULL OR a.fleet_id = @fleet_id)
         ORDER BY t.id LIMIT ${MAX_SUBJECTS}`,
      waiting: `SELECT a.id, a.name, a.serial, a.created_at FROM agents a
         WHERE a.enroll_status = 'pending_approval' AND a.created_at < @before AND (@fleet_id IS NULL OR a.fleet_id = @fleet_id)
         ORDER BY a.id LIMIT ${MAX_SUBJECTS}`,
      failing: `SELECT a.id, a.name, count(*) AS failing
         FROM agents a JOIN policy_tasks t ON t.agent_id = a.id JOIN policy_assignments d ON d.id = t.deployment_id
         WHERE d.state = 'active' AND t.status IN ('failed', 'incompatible') AND a.enroll_status != 'unenrolled'
           AND (@fleet_id IS NULL OR a.fleet_id = @fleet_id)
         GROUP BY a.id, a.name ORDER BY a.id LIMIT ${MAX_SUBJECTS}`,
      expiring: `SELECT i.id, i.email, i.expires_at FROM invitations i
         WHERE i.status = 'pending' AND i.expires_at > @now AND i.expires_at <= @until
           AND (@fleet_id IS NULL OR i.fleet_id = @fleet_id)
         ORDER BY i.id LIMIT ${MAX_SUBJECTS}`,
    };
  }

  async silentDevices(before: string, fleetId: number | null): Promise<SilentDevice[]> {
    return (await this.sql.all(this.s.silent, { before, fleet_id: fleetId })) as SilentDevice[];
  }

  async failedTasks(fleetId: number | null): Promise<FailedTask[]> {
    return (await this.sql.all(this.s.failedTasks, { fleet_id: fleetId })) as FailedTask[];
  }

  async waitingDevices(before: string, fleetId: number | null): Promise<WaitingDevice[]> {
    return (await this.sql.all(this.s.waiting, { before, fleet_id: fleetId })) as WaitingDevice[];
  }

  async failingDevices(fleetId: number | null): Promise<FailingDevice[]> {
    return (await this.sql.all(this.s.failing, { fleet_id: fleetId })) as FailingDevice[];
  }

  async expiringInvitations(now: string, until: string, fleetId: number | null): Promise<ExpiringInvitation[]> {
    return (await this.sql.all(this.s.expiring, { now, until, fleet_id: fleetId })) as ExpiringInvitation[];
  }
}
