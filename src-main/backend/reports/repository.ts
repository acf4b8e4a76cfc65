// The SQL of the daily figures (migration 25): counted metrics grown by one as things happen,
// sampled ones overwritten by each sample of the day, the cursor over the events already counted,
// and the reads of a range of days. Written in SQL both SQLite and PostgreSQL accept.
import type { Sql } from '../db/sql.ts';
import { inFleetsSql } from '../fleets/fleet-repository.ts';
import { ENROLL_STATUS } from '../agents/status.ts';

/** What is kept per day, fleet and key. */
export type FigureMetric = 'enrolled' | 'deploy' | 'online' | 'devices' | 'compliance' | 'os' | 'model';

/** Metrics replaced by each sample of the day (the day's last sample stands). */
export const SNAPSHOT_METRICS = ['devices', 'compliance', 'os', 'model'] as const satisfies readonly FigureMetric[];

export interface ReportCursor {
  event_id: number;
  backfilled_at: string;
  sampled_at: string | null;
}

/** An event the figures count: a device enrolled, a task's new status. */
export interface CountedEvent {
  id: number;
  at: string;
  type: 'agent.enrolled' | 'task.status';
  agent_id: number | null;
  data: string | null;
}

export interface FigureRow {
  day: string;
  key: string;
  value: number;
}

/** One fleet's figures at one sample. */
export interface FleetSample {
  fleet_id: number;
  key: string;
  value: number;
}

/** The policies that are deployments (the others are value policies: they count in compliance, not here). */
const DEPLOYMENT_KINDS = `('deployApp', 'deployFile', 'removeApp', 'removeFile')`;

/** Devices the reports count: every device not unenrolled (as the compliance view does). */
const COUNTED_DEVICE = `enroll_status != '${ENROLL_STATUS.unenrolled}'`;

/** A device's compliance state, as policies/views.ts names it, in the words of the reports: done, pending, failed, none. */
const COMPLIANCE_BY_FLEET = `
  SELECT fleet_id, state AS key, count(*) AS value FROM (
    SELECT fleet_id,
      CASE WHEN applicable = 0 THEN 'none' WHEN failing > 0 THEN 'failed' WHEN open > 0 THEN 'pending' ELSE 'done' END AS state
    FROM (
      SELECT a.id, a.fleet_id,
        count(t.id) - sum(CASE WHEN t.status IN ('canceled', 'overriden') THEN 1 ELSE 0 END) AS applicable,
        sum(CASE WHEN t.status IN ('failed', 'incompatible') THEN 1 ELSE 0 END) AS failing,
        sum(CASE WHEN t.status IN ('pending', 'received', 'in progress', 'waiting') THEN 1 ELSE 0 END) AS open
      FROM agents a
      LEFT JOIN policy_tasks t ON t.agent_id = a.id AND t.deployment_id IN (SELECT id FROM policy_assignments WHERE state = 'active')
      WHERE a.${COUNTED_DEVICE}
      GROUP BY a.id, a.fleet_id
    ) per_device
  ) states
  GROUP BY fleet_id, state`;

/** How a device's OS and model are named in the reports (from its latest inventory). */
export const NO_INVENTORY = 'No inventory yet';
export const OS_LABEL = `coalesce(os_name || ' ' || os_version, os_version, os_name, '${NO_INVENTORY}')`;
export const MODEL_LABEL = `coalesce(manufacturer || ' ' || model, model, '${NO_INVENTORY}')`;

export class FigureRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      cursor: `SELECT event_id, backfilled_at, sampled_at FROM report_cursor WHERE id = 1`,
      startCursor: `INSERT INTO report_cursor (id, event_id, backfilled_at) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING`,
      advance: `UPDATE report_cursor SET event_id = ? WHERE id = 1 AND event_id < ?`,
      sampledAt: `UPDATE report_cursor SET sampled_at = ? WHERE id = 1`,
      lastEventId: `SELECT coalesce(max(id), 0) FROM events`,
      countedEvents: `SELECT id, at, type, agent_id, data FROM events
         WHERE id > ? AND id <= ? AND type IN ('agent.enrolled', 'task.status') ORDER BY id LIMIT ?`,
      backfillEnrolled: `INSERT INTO daily_figures (day, fleet_id, metric, key, value)
         SELECT substr(created_at, 1, 10), fleet_id, 'enrolled', '', count(*) FROM agents GROUP BY substr(created_at, 1, 10), fleet_id`,
      backfillDeploy: `INSERT INTO daily_figures (day, fleet_id, metric, key, value)
         SELECT substr(h.at, 1, 10), a.fleet_id, 'deploy', h.status, count(*)
         FROM task_history h
         JOIN policy_tasks t ON t.id = h.task_id
         JOIN policy_assignments d ON d.id = t.deployment_id
         JOIN agents a ON a.id = t.agent_id
         WHERE h.status IN ('done', 'failed') AND d.policy IN ${DEPLOYMENT_KINDS}
         GROUP BY substr(h.at, 1, 10), a.fleet_id, h.status`,
      fleetOfAgent: `SELECT fleet_id FROM agents WHERE id = ?`,
      deploymentTask: `SELECT a.fleet_id FROM policy_tasks t
         JOIN policy_assignments d ON d.id = t.deployment_id
         JOIN agents a ON a.id = t.agent_id
         WHERE t.id = ? AND d.policy IN ${DEPLOYMENT_KINDS}`,
      add: `INSERT INTO daily_figures (day, fleet_id, metric, key, value) VALUES (@day, @fleet_id, @metric, @key, @value)
         ON CONFLICT (day, fleet_id, metric, key) DO UPDATE SET value = daily_figures.value + excluded.value`,
      put: `INSERT INTO daily_figures (day, fleet_id, metric, key, value) VALUES (@day, @fleet_id, @metric, @key, @value)
         ON CONFLICT (day, fleet_id, metric, key) DO UPDATE SET value = excluded.value`,
      clearDay: `DELETE FROM daily_figures WHERE day = ? AND metric = ?`,
      presence: `SELECT fleet_id, count(*) AS devices, sum(CASE WHEN is_online = 1 THEN 1 ELSE 0 END) AS online
         FROM agents WHERE ${COUNTED_DEVICE} GROUP BY fleet_id`,
      compliance: COMPLIANCE_BY_FLEET,
      osByFleet: `SELECT fleet_id, ${OS_LABEL} AS key, count(*) AS value FROM agents WHERE ${COUNTED_DEVICE} GROUP BY 1, 2`,
      modelByFleet: `SELECT fleet_id, ${MODEL_LABEL} AS key, count(*) AS value FROM agents WHERE ${COUNTED_DEVICE} GROUP BY 1, 2`,
      osNow: `SELECT ${OS_LABEL} AS key, count(*) AS devices FROM agents WHERE ${COUNTED_DEVICE} AND ${inFleetsSql('fleet_id')}
         GROUP BY 1 ORDER BY 2 DESC, 1`,
      modelNow: `SELECT ${MODEL_LABEL} AS key, count(*) AS devices FROM agents WHERE ${COUNTED_DEVICE} AND ${inFleetsSql('fleet_id')}
         GROUP BY 1 ORDER BY 2 DESC, 1`,
      range: `SELECT day, key, sum(value) AS value FROM daily_figures
         WHERE metric = @metric AND day >= @from AND day <= @to AND ${inFleetsSql('fleet_id')}
         GROUP BY day, key ORDER BY day, key`,
    };
  }

  async cursor(): Promise<ReportCursor | undefined> {
    return (await this.sql.get(this.s.cursor)) as ReportCursor | undefined;
  }

  async lastEventId(): Promise<number> {
    return (await this.sql.value<number>(this.s.lastEventId))!;
  }

  /**
   * The first start with reports: what the existing rows tell (devices by the day they enrolled,
   * deployment tasks by the day they reported done or failed), and the cursor after every event
   * so far (those are in the rows already). Call inside a transaction.
   */
  async backfill(at: string): Promise<void> {
    await this.sql.run(this.s.backfillEnrolled);
    await this.sql.run(this.s.backfillDeploy);
    await this.sql.run(this.s.startCursor, [await this.lastEventId(), at]);
  }

  /** Events to count after `afterId`, up to `uptoId`, oldest first. */
  async countedEvents(afterId: number, uptoId: number, limit: number): Promise<CountedEvent[]> {
    return (await this.sql.all(this.s.countedEvents, [afterId, uptoId, limit])) as CountedEvent[];
  }

  async advance(eventId: number): Promise<void> {
    await this.sql.run(this.s.advance, [eventId, eventId]);
  }

  async fleetOfAgent(agentId: number): Promise<number | undefined> {
    return ((await this.sql.get(this.s.fleetOfAgent, [agentId])) as { fleet_id: number } | undefined)?.fleet_id;
  }

  /** The device's fleet, when the task is one of a deployment (not a value policy's). */
  async fleetOfDeploymentTask(taskId: number): Promise<number | undefined> {
    return ((await this.sql.get(this.s.deploymentTask, [taskId])) as { fleet_id: number } | undefined)?.fleet_id;
  }

  async add(day: string, fleetId: number, metric: FigureMetric, key: string, by = 1): Promise<void> {
    await this.sql.run(this.s.add, { day, fleet_id: fleetId, metric, key, value: by });
  }

  /**
   * One sample of the devices now, for `day` and its `hour` ("00" to "23"): each fleet's online
   * count for that hour, and the day's devices, compliance, OS versions and models replaced by
   * what they are now. Call inside a transaction.
   */
  async sample(day: string, hour: string, at: string): Promise<void> {
    const presence = (await this.sql.all(this.s.presence)) as { fleet_id: number; devices: number; online: number }[];
    for (const row of presence)
      await this.sql.run(this.s.put, { day, fleet_id: row.fleet_id, metric: 'online', key: hour, value: row.online });
    for (const metric of SNAPSHOT_METRICS) await this.sql.run(this.s.clearDay, [day, metric]);
    for (const row of presence)
      await this.sql.run(this.s.put, { day, fleet_id: row.fleet_id, metric: 'devices', key: '', value: row.devices });
    const snapshots: [FigureMetric, FleetSample[]][] = [
      ['compliance', (await this.sql.all(this.s.compliance)) as FleetSample[]],
      ['os', (await this.sql.all(this.s.osByFleet)) as FleetSample[]],
      ['model', (await this.sql.all(this.s.modelByFleet)) as FleetSample[]],
    ];
    for (const [metric, rows] of snapshots)
      for (const row of rows)
        await this.sql.run(this.s.put, { day, fleet_id: row.fleet_id, metric, key: row.key, value: row.value });
    await this.sql.run(this.s.sampledAt, [at]);
  }

  /** A metric's values from `from` to `to` (days, both included), summed over the fleets (`fleets`: null, all; else a JSON array). */
  async range(metric: FigureMetric, from: string, to: string, fleets: string | null): Promise<FigureRow[]> {
    return (await this.sql.all(this.s.range, { metric, from, to, fleets })) as FigureRow[];
  }

  /** The devices by OS version or model now, most common first. */
  current(what: 'os' | 'model', fleets: string | null): Promise<{ key: string; devices: number }[]> {
    return this.sql.all<{ key: string; devices: number }>(what === 'os' ? this.s.osNow : this.s.modelNow, { fleets });
  }
}
