// The SQL of the exports: each list read a keyset page at a time (`id > @after` or `id < @before`,
// never OFFSET), with the list's filters and the caller's fleet scope in the statement. A page
// holds what its columns need and no more (an invitation page, its ids: the invitations room
// presents them as its list does).
import type { CompiledWhere } from '../agents/device-query-repository.ts';
import type { Sql, SqlValue } from '../db/sql.ts';
import { dialect, type Dialect } from '../db/dialect.ts';
import type { TaskStatus } from '../policies/wire.ts';
import type { AgentCompliance } from '../policies/repository.ts';

/** fleets/scope.ts fleetScopeParam: null, every fleet; else a JSON array of the fleets the caller sees. */
type Fleets = string | null;

export interface DeviceFilter {
  /** The device list's selection (where, view, fleet) compiled (agents/device-query-repository.ts): over `a`, `f` and `u`. */
  where?: CompiledWhere | undefined;
  fleetId?: number | undefined;
  status?: string | undefined;
  type?: string | undefined;
  online?: boolean | undefined;
  /** Words (lower case), each of which must appear in one of the searched fields. */
  words?: readonly string[] | undefined;
}

/** A device as an export reads it: the list's row, its last inventory (as stored, JSON) and who enrolled it. */
export interface DeviceRecord {
  id: number;
  name: string;
  serial: string | null;
  uuid: string | null;
  type: string;
  version: string;
  enroll_status: string;
  is_online: number;
  last_contact: string | null;
  last_report: string | null;
  lock: number;
  fleet_id: number;
  fleet: string;
  email: string | null;
  firstname: string | null;
  lastname: string | null;
  invitation_id: number | null;
  enrollment_code: string | null;
  created_at: string;
  model: string | null;
  manufacturer: string | null;
  os_name: string | null;
  os_version: string | null;
  phone: string | null;
  /** The inventory summary as stored (JSON), or null before the first inventory. */
  inventory: string | null;
  inventory_at: string | null;
}

export interface InvitationFilterSql {
  status?: 'pending' | 'done' | 'expired' | 'revoked' | undefined;
  q?: string | undefined;
  fleetId?: number | undefined;
}

export interface CodeRecord {
  id: number;
  name: string;
  fleet_id: number;
  fleet: string | null;
  domains: string;
  max_uses: number | null;
  uses: number;
  approval: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  rotated_at: string | null;
  last_used_at: string | null;
  refused_attempts: number;
  pending_approval: number;
  devices: number;
}

export interface CodeUseRecord {
  id: number;
  at: string;
  code_id: number;
  code_name: string;
  outcome: 'used' | 'refused';
  code: string | null;
  message: string;
  remote_addr: string | null;
  email: string | null;
  serial: string | null;
  uuid: string | null;
  user_id: number | null;
  agent_id: number | null;
  agent_name: string | null;
  enroll_status: string | null;
}

export interface ResultFilter {
  assignmentId?: number | undefined;
  fleetId?: number | undefined;
  agentId?: number | undefined;
  policy?: string | undefined;
  kind?: 'deployment' | 'value' | undefined;
  state?: 'active' | 'removed' | undefined;
  status?: TaskStatus | undefined;
}

/** One device's task of an assignment, with what its verification needs (verification.ts CheckedTask). */
export interface ResultRecord {
  task_id: number;
  assignment_id: number;
  policy: string;
  value: string | null;
  item_name: string;
  target_name: string;
  assignment_state: string;
  agent_id: number;
  agent_name: string;
  agent_serial: string | null;
  fleet: string;
  status: TaskStatus;
  reason: string | null;
  created_at: string;
  updated_at: string;
  downloaded_at: string | null;
  done_at: string | null;
  result: 'verified' | 'not_found' | null;
  detail: string | null;
  inventory_at: string | null;
}

/** A bulk job as its history lists it (jobs/repository.ts JobRow, the columns an export shows). */
export interface JobRecord {
  id: number;
  action: string;
  state: string;
  description: string;
  params: string | null;
  total: number;
  /** JSON array of the fleets its devices were in: who may see the job. */
  fleet_ids: string;
  actor: string | null;
  error: string | null;
  created_at: string;
  finished_at: string | null;
}

/** One device's result in a job, with its job's action and fleets. */
export interface JobResultRecord {
  job_id: number;
  action: string;
  job_fleet_ids: string;
  agent_id: number;
  name: string;
  fleet_id: number | null;
  fleet: string | null;
  status: string;
  reason: string | null;
  at: string;
  answered_at: string | null;
}

const DEPLOYMENT_KINDS = `('deployApp', 'deployFile', 'removeApp', 'removeFile')`;
const count = (condition: string) => `coalesce(sum(CASE WHEN ${condition} THEN 1 ELSE 0 END), 0)`;
/** `%word%` for LIKE … ESCAPE '\', the word's own % _ \ taken literally. */
const containing = (word: string) => `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
const where = (clauses: string[]) => (clauses.length ? `WHERE ${clauses.join(' AND ')}` : '');

/** The text the devices table searches (src-renderer/lib/devices.ts searchText), lower case. */
const DEVICE_SEARCH_TEXT = `lower(${[
  'a.name',
  'a.serial',
  'a.uuid',
  'u.email',
  'a.firstname',
  'a.lastname',
  'f.name',
  'a.type',
  'a.version',
  'a.enroll_status',
]
  .map((column) => `coalesce(${column}, '')`)
  .join(` || ' ' || `)})`;

export class ExportRepository {
  private readonly sql: Sql;
  /** What SQLite and PostgreSQL write differently (the fleet scope, a JSON list of ids). */
  private readonly d: Dialect;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.d = dialect(sql.engine);
    this.s = {
      compliance: `SELECT t.agent_id, max(t.updated_at) AS last_change, count(t.id) AS total,
           ${count(`t.status = 'pending'`)} AS pending,
           ${count(`t.status IN ('received', 'in progress', 'waiting')`)} AS in_progress,
           ${count(`t.status = 'done'`)} AS done,
           ${count(`t.status = 'failed'`)} AS failed,
           ${count(`t.status = 'canceled'`)} AS canceled,
           ${count(`t.status = 'incompatible'`)} AS incompatible,
           ${count(`t.status = 'overriden'`)} AS overriden
         FROM policy_tasks t
         WHERE t.agent_id IN ${this.d.jsonIds('@ids')}
           AND t.deployment_id IN (SELECT id FROM policy_assignments WHERE state = 'active')
         GROUP BY t.agent_id`,
    };
  }

  /** The page of devices after `after` (by id), filtered, within `fleets`. */
  async devices(filter: DeviceFilter, fleets: Fleets, after: number | undefined, limit: number): Promise<DeviceRecord[]> {
    const clauses = [this.d.inFleets('a.fleet_id')];
    const params: Record<string, SqlValue> = { fleets, limit };
    if (after !== undefined) {
      clauses.push('a.id > @after');
      params.after = after;
    }
    if (filter.fleetId !== undefined) {
      clauses.push('a.fleet_id = @fleet_id');
      params.fleet_id = filter.fleetId;
    }
    if (filter.where !== undefined) {
      clauses.push(`(${filter.where.sql})`);
      Object.assign(params, filter.where.params);
    }
    if (filter.status !== undefined) {
      clauses.push('a.enroll_status = @status');
      params.status = filter.status;
    }
    if (filter.type !== undefined) {
      clauses.push('a.type = @type');
      params.type = filter.type;
    }
    if (filter.online !== undefined) {
      clauses.push('a.is_online = @online');
      params.online = filter.online ? 1 : 0;
    }
    (filter.words ?? []).forEach((word, i) => {
      clauses.push(`${DEVICE_SEARCH_TEXT} LIKE @word${i} ESCAPE '\\'`);
      params[`word${i}`] = containing(word);
    });
    return (await this.sql.all(
      `SELECT a.id, a.name, a.serial, a.uuid, a.type, a.version, a.enroll_status, a.is_online, a.last_contact, a.last_report,
           a.lock, a.fleet_id, f.name AS fleet, u.email, a.firstname, a.lastname, a.invitation_id, c.name AS enrollment_code,
           a.created_at, a.model, a.manufacturer, a.os_name, a.os_version, a.phone, i.summary AS inventory, i.received_at AS inventory_at
         FROM agents a
         JOIN fleets f ON f.id = a.fleet_id
         LEFT JOIN users u ON u.id = a.enrolled_by_user_id
         LEFT JOIN enrollment_codes c ON c.id = a.enrollment_code_id
         LEFT JOIN agent_inventories i ON i.agent_id = a.id
         ${where(clauses)} ORDER BY a.id LIMIT @limit`,
      params,
    )) as DeviceRecord[];
  }

  /** These devices' tasks of active assignments, counted (policies/repository.ts compliance, for a page's ids). */
  async complianceOf(ids: readonly number[]): Promise<Omit<AgentCompliance, 'agent_name' | 'fleet_id'>[]> {
    if (ids.length === 0) return [];
    return (await this.sql.all(this.s.compliance, { ids: JSON.stringify(ids) })) as Omit<
      AgentCompliance,
      'agent_name' | 'fleet_id'
    >[];
  }

  /** The ids of the page of invitations before `before` (newest first), filtered as the list filters them at `now`. */
  async invitationIds(
    filter: InvitationFilterSql,
    now: string,
    fleets: Fleets,
    before: number | undefined,
    limit: number,
  ): Promise<{ id: number }[]> {
    const clauses = [this.d.inFleets('i.fleet_id')];
    const params: Record<string, SqlValue> = { fleets, limit };
    if (before !== undefined) {
      clauses.push('i.id < @before');
      params.before = before;
    }
    switch (filter.status) {
      case 'pending':
        clauses.push(`i.status = 'pending' AND i.expires_at > @now`);
        params.now = now;
        break;
      case 'expired':
        clauses.push(`i.status = 'pending' AND i.expires_at <= @now`);
        params.now = now;
        break;
      case 'done':
      case 'revoked':
        clauses.push('i.status = @status');
        params.status = filter.status;
        break;
      case undefined:
        break;
    }
    if (filter.q?.trim()) {
      clauses.push(`(i.email LIKE @q ESCAPE '\\' OR i.firstname LIKE @q ESCAPE '\\' OR i.lastname LIKE @q ESCAPE '\\')`);
      params.q = containing(filter.q.trim());
    }
    if (filter.fleetId !== undefined) {
      clauses.push('i.fleet_id = @fleet_id');
      params.fleet_id = filter.fleetId;
    }
    return (await this.sql.all(`SELECT i.id FROM invitations i ${where(clauses)} ORDER BY i.id DESC LIMIT @limit`, params)) as {
      id: number;
    }[];
  }

  /** The page of codes before `before` (newest first). */
  async codes(fleetId: number | undefined, fleets: Fleets, before: number | undefined, limit: number): Promise<CodeRecord[]> {
    const clauses = [this.d.inFleets('c.fleet_id')];
    const params: Record<string, SqlValue> = { fleets, limit };
    if (before !== undefined) {
      clauses.push('c.id < @before');
      params.before = before;
    }
    if (fleetId !== undefined) {
      clauses.push('c.fleet_id = @fleet_id');
      params.fleet_id = fleetId;
    }
    return (await this.sql.all(
      `SELECT c.id, c.name, c.fleet_id, f.name AS fleet, c.domains, c.max_uses, c.uses, c.approval, c.created_at, c.expires_at,
           c.revoked_at, c.rotated_at, c.last_used_at,
           (SELECT count(*) FROM enrollment_code_log l WHERE l.code_id = c.id AND l.outcome = 'refused') AS refused_attempts,
           (SELECT count(*) FROM agents a WHERE a.enrollment_code_id = c.id AND a.enroll_status = 'pending_approval') AS pending_approval,
           (SELECT count(*) FROM agents a WHERE a.enrollment_code_id = c.id) AS devices
         FROM enrollment_codes c LEFT JOIN fleets f ON f.id = c.fleet_id
         ${where(clauses)} ORDER BY c.id DESC LIMIT @limit`,
      params,
    )) as CodeRecord[];
  }

  /** The page of code log entries before `before` (newest first), of the codes the caller sees. */
  async codeUses(
    filter: { codeId?: number | undefined; outcome?: 'used' | 'refused' | undefined },
    fleets: Fleets,
    before: number | undefined,
    limit: number,
  ): Promise<CodeUseRecord[]> {
    const clauses = [this.d.inFleets('c.fleet_id')];
    const params: Record<string, SqlValue> = { fleets, limit };
    if (before !== undefined) {
      clauses.push('l.id < @before');
      params.before = before;
    }
    if (filter.codeId !== undefined) {
      clauses.push('l.code_id = @code_id');
      params.code_id = filter.codeId;
    }
    if (filter.outcome !== undefined) {
      clauses.push('l.outcome = @outcome');
      params.outcome = filter.outcome;
    }
    return (await this.sql.all(
      `SELECT l.id, l.at, l.code_id, c.name AS code_name, l.outcome, l.code, l.message, l.remote_addr, l.email, l.serial, l.uuid,
           l.user_id, l.agent_id, a.name AS agent_name, a.enroll_status
         FROM enrollment_code_log l JOIN enrollment_codes c ON c.id = l.code_id LEFT JOIN agents a ON a.id = l.agent_id
         ${where(clauses)} ORDER BY l.id DESC LIMIT @limit`,
      params,
    )) as CodeUseRecord[];
  }

  /** The page of tasks after `after` (by id) of the assignments the caller sees, filtered. */
  async results(filter: ResultFilter, fleets: Fleets, after: number | undefined, limit: number): Promise<ResultRecord[]> {
    const clauses = [this.d.inFleets('coalesce(d.fleet_id, (SELECT fleet_id FROM agents WHERE id = d.agent_id))')];
    const params: Record<string, SqlValue> = { fleets, limit };
    const equal = (column: string, name: string, value: SqlValue | undefined) => {
      if (value === undefined) return;
      clauses.push(`${column} = @${name}`);
      params[name] = value;
    };
    if (after !== undefined) {
      clauses.push('t.id > @after');
      params.after = after;
    }
    equal('t.deployment_id', 'assignment_id', filter.assignmentId);
    equal('d.fleet_id', 'fleet_id', filter.fleetId);
    equal('t.agent_id', 'agent_id', filter.agentId);
    equal('d.policy', 'policy', filter.policy);
    equal('d.state', 'state', filter.state);
    equal('t.status', 'status', filter.status);
    if (filter.kind !== undefined) clauses.push(`d.policy ${filter.kind === 'deployment' ? '' : 'NOT '}IN ${DEPLOYMENT_KINDS}`);
    return (await this.sql.all(
      `SELECT t.id AS task_id, t.deployment_id AS assignment_id, d.policy, d.value, d.item_name,
           coalesce((SELECT 'fleet "' || tf.name || '"' FROM fleets tf WHERE tf.id = d.fleet_id),
             (SELECT ta.name FROM agents ta WHERE ta.id = d.agent_id), d.target_name) AS target_name,
           d.state AS assignment_state, t.agent_id, a.name AS agent_name, a.serial AS agent_serial, f.name AS fleet,
           t.status, t.reason, t.created_at, t.updated_at, t.downloaded_at,
           CASE WHEN d.policy = 'deployApp'
             THEN (SELECT max(h.at) FROM task_history h WHERE h.task_id = t.id AND h.status = 'done') END AS done_at,
           v.result, v.detail, v.inventory_at
         FROM policy_tasks t
         JOIN policy_assignments d ON d.id = t.deployment_id
         JOIN agents a ON a.id = t.agent_id
         JOIN fleets f ON f.id = a.fleet_id
         LEFT JOIN task_verifications v ON v.task_id = t.id
         ${where(clauses)} ORDER BY t.id LIMIT @limit`,
      params,
    )) as ResultRecord[];
  }

  /** The page of jobs before `before` (newest first). */
  async jobs(before: number | undefined, limit: number): Promise<JobRecord[]> {
    return (await this.sql.all(
      `SELECT id, action, state, description, params, total, fleet_ids, actor, error, created_at, finished_at FROM jobs
         ${before === undefined ? '' : 'WHERE id < @before'} ORDER BY id DESC LIMIT @limit`,
      before === undefined ? { limit } : { before, limit },
    )) as JobRecord[];
  }

  /** These jobs' results counted by status, those of devices in `fleets` (and of no fleet) only. */
  async jobCounts(ids: readonly number[], fleets: Fleets): Promise<{ job_id: number; status: string; n: number }[]> {
    if (ids.length === 0) return [];
    return (await this.sql.all(
      `SELECT r.job_id, r.status, count(*) AS n FROM job_results r
         WHERE r.job_id IN ${this.d.jsonIds('@ids')} AND (r.fleet_id IS NULL OR ${this.d.inFleets('r.fleet_id')})
         GROUP BY r.job_id, r.status`,
      { ids: JSON.stringify(ids), fleets },
    )) as { job_id: number; status: string; n: number }[];
  }

  /**
   * The page of job results after `after` (newest job first, then by device id), those of devices
   * in `fleets` (and of no fleet: the caller checks the job is theirs).
   */
  async jobResults(
    filter: { jobId?: number | undefined; status?: string | undefined },
    fleets: Fleets,
    after: { job: number; agent: number } | undefined,
    limit: number,
  ): Promise<JobResultRecord[]> {
    const clauses = [`(r.fleet_id IS NULL OR ${this.d.inFleets('r.fleet_id')})`];
    const params: Record<string, SqlValue> = { fleets, limit };
    if (after !== undefined) {
      clauses.push('(r.job_id < @job OR (r.job_id = @job AND r.agent_id > @agent))');
      Object.assign(params, after);
    }
    if (filter.jobId !== undefined) {
      clauses.push('r.job_id = @job_id');
      params.job_id = filter.jobId;
    }
    if (filter.status !== undefined) {
      clauses.push('r.status = @status');
      params.status = filter.status;
    }
    return (await this.sql.all(
      `SELECT r.job_id, j.action, j.fleet_ids AS job_fleet_ids, r.agent_id, r.name, r.fleet_id, f.name AS fleet, r.status, r.reason,
           r.at, r.answered_at
         FROM job_results r JOIN jobs j ON j.id = r.job_id LEFT JOIN fleets f ON f.id = r.fleet_id
         ${where(clauses)} ORDER BY r.job_id DESC, r.agent_id LIMIT @limit`,
      params,
    )) as JobResultRecord[];
  }
}
