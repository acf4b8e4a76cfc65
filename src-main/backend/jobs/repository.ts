// The SQL of bulk jobs (migration 24): the jobs, one result row per device, and the command flags
// a job sets on many agents at once. Written in SQL both engines accept: lists of ids are
// expanded into `IN (?, ?, …)` and results inserted as multi-row VALUES, a chunk at a time.
import type { Sql } from '../db/sql.ts';
import type { JobAction, JobResultStatus, JobState } from '../../../src-shared/contract/index.ts';

export interface JobRow {
  id: number;
  action: JobAction;
  state: JobState;
  /** The selection as the request gave it (JSON). */
  selection: string;
  description: string;
  /** JSON, or null. */
  params: string | null;
  total: number;
  /** JSON array of fleet ids. */
  fleet_ids: string;
  account_id: number | null;
  actor: string | null;
  error: string | null;
  created_at: string;
  finished_at: string | null;
  /** The node running it (`serve --node-name`): its death, and only its, interrupts the job. */
  node: string | null;
}

export type NewJob = Omit<JobRow, 'id' | 'state' | 'error' | 'finished_at'>;

export interface JobResultRow {
  agent_id: number;
  name: string;
  fleet_id: number | null;
  status: JobResultStatus;
  reason: string | null;
  at: string;
  answered_at: string | null;
}

export type NewJobResult = Omit<JobResultRow, 'answered_at'>;

export interface JobRepository {
  insert(job: NewJob): Promise<number>;
  byId(id: number): Promise<JobRow | undefined>;
  /** Newest first. */
  list(limit: number): Promise<JobRow[]>;
  finish(id: number, state: JobState, error: string | null, at: string): Promise<void>;
  /**
   * Jobs left running by a stopped server: marked interrupted; how many. `nodes`: only those run by
   * these nodes (and those of no node, older than several nodes); null: every running job.
   */
  interruptRunning(at: string, nodes: readonly string[] | null): Promise<number>;
  /** Jobs running on a node that is not one of `alive` (dead: killed, lost): marked interrupted; how many. */
  interruptOrphans(at: string, alive: readonly string[]): Promise<number>;
  insertResults(jobId: number, results: readonly NewJobResult[]): Promise<void>;
  /** Results of these agents now `status` (with a reason), whatever they were. */
  setResults(
    jobId: number,
    agentIds: readonly number[],
    status: JobResultStatus,
    reason: string | null,
    at: string,
  ): Promise<void>;
  /** Results of these agents still sent or offline become answered; the agents whose result changed. */
  answered(jobId: number, agentIds: readonly number[], at: string): Promise<number>;
  /** How many results at each status; `fleets`: only those of these fleets (and of no fleet). */
  counts(jobId: number, fleets: readonly number[] | null): Promise<Partial<Record<JobResultStatus, number>>>;
  results(jobId: number, status: JobResultStatus | undefined, fleets: readonly number[] | null): Promise<JobResultRow[]>;
  /** Locks or unlocks many agents' records (the flag a single Lock sets), one statement per chunk. */
  setLock(agentIds: readonly number[], lock: boolean, at: string): Promise<void>;
}

/** Rows (or ids) per statement: under every engine's parameter limit, big enough to be few. */
const CHUNK = 500;
const RESULT_COLUMNS = 7;

const placeholders = (count: number, width = 1) =>
  Array.from({ length: count }, () => (width === 1 ? '?' : `(${Array.from({ length: width }, () => '?').join(', ')})`)).join(
    ', ',
  );

function* chunks<T>(items: readonly T[], size = CHUNK): Generator<readonly T[]> {
  for (let start = 0; start < items.length; start += size) yield items.slice(start, start + size);
}

export class SqliteJobRepository implements JobRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      insert: `INSERT INTO jobs (action, state, selection, description, params, total, fleet_ids, account_id, actor, created_at, node)
         VALUES (@action, 'running', @selection, @description, @params, @total, @fleet_ids, @account_id, @actor, @created_at, @node)
         RETURNING id`,
      byId: `SELECT * FROM jobs WHERE id = ?`,
      list: `SELECT * FROM jobs ORDER BY id DESC LIMIT ?`,
      finish: `UPDATE jobs SET state = ?, error = ?, finished_at = ? WHERE id = ?`,
      interrupt: `UPDATE jobs SET state = 'interrupted', error = 'The server stopped while it ran', finished_at = ? WHERE state = 'running'`,
      counts: `SELECT status, count(*) AS n FROM job_results WHERE job_id = ? GROUP BY status`,
      results: `SELECT agent_id, name, fleet_id, status, reason, at, answered_at FROM job_results
         WHERE job_id = @job AND (CAST(@status AS text) IS NULL OR status = @status) ORDER BY agent_id`,
    };
  }

  /** The text of a statement over a list of n ids or rows: the driver prepares each text once (full chunks recur; the odd remainders are few). */
  private statement(_key: string, count: number, sql: (count: number) => string): string {
    return sql(count);
  }

  async insert(job: NewJob): Promise<number> {
    return ((await this.sql.get(this.s.insert, job)) as { id: number }).id;
  }

  async byId(id: number): Promise<JobRow | undefined> {
    return (await this.sql.get(this.s.byId, [id])) as JobRow | undefined;
  }

  async list(limit: number): Promise<JobRow[]> {
    return (await this.sql.all(this.s.list, [limit])) as JobRow[];
  }

  async finish(id: number, state: JobState, error: string | null, at: string): Promise<void> {
    await this.sql.run(this.s.finish, [state, error, at, id]);
  }

  async interruptRunning(at: string, nodes: readonly string[] | null): Promise<number> {
    if (nodes === null) return (await this.sql.run(this.s.interrupt, [at])).changes;
    const of = nodes.length === 0 ? '' : ` OR node IN (${placeholders(nodes.length)})`;
    const text = `UPDATE jobs SET state = 'interrupted', error = 'The server stopped while it ran', finished_at = ?
       WHERE state = 'running' AND (node IS NULL${of})`;
    return (await this.sql.run(text, [at, ...nodes])).changes;
  }

  async interruptOrphans(at: string, alive: readonly string[]): Promise<number> {
    const orphan = alive.length === 0 ? '' : ` AND (node IS NULL OR node NOT IN (${placeholders(alive.length)}))`;
    const text = `UPDATE jobs SET state = 'interrupted', error = 'The node running it stopped', finished_at = ?
       WHERE state = 'running'${orphan}`;
    return (await this.sql.run(text, [at, ...alive])).changes;
  }

  async insertResults(jobId: number, results: readonly NewJobResult[]): Promise<void> {
    for (const chunk of chunks(results)) {
      const statement = this.statement(
        'results',
        chunk.length,
        (n) =>
          `INSERT INTO job_results (job_id, agent_id, name, fleet_id, status, reason, at) VALUES ${placeholders(n, RESULT_COLUMNS)}`,
      );
      await this.sql.run(
        statement,
        chunk.flatMap((r) => [jobId, r.agent_id, r.name, r.fleet_id, r.status, r.reason, r.at]),
      );
    }
  }

  async setResults(
    jobId: number,
    agentIds: readonly number[],
    status: JobResultStatus,
    reason: string | null,
    at: string,
  ): Promise<void> {
    for (const chunk of chunks(agentIds)) {
      await this.sql.run(
        this.statement(
          'set',
          chunk.length,
          (n) => `UPDATE job_results SET status = ?, reason = ?, at = ? WHERE job_id = ? AND agent_id IN (${placeholders(n)})`,
        ),
        [status, reason, at, jobId, ...chunk],
      );
    }
  }

  async answered(jobId: number, agentIds: readonly number[], at: string): Promise<number> {
    let changed = 0;
    for (const chunk of chunks(agentIds)) {
      changed += (
        await this.sql.run(
          this.statement(
            'answered',
            chunk.length,
            (n) =>
              `UPDATE job_results SET status = 'answered', answered_at = ?
           WHERE job_id = ? AND status IN ('sent', 'offline') AND agent_id IN (${placeholders(n)})`,
          ),
          [at, jobId, ...chunk],
        )
      ).changes;
    }
    return changed;
  }

  async counts(jobId: number, fleets: readonly number[] | null): Promise<Partial<Record<JobResultStatus, number>>> {
    const rows =
      fleets === null
        ? ((await this.sql.all(this.s.counts, [jobId])) as { status: JobResultStatus; n: number }[])
        : fleets.length === 0
          ? []
          : ((await this.sql.all(
              this.statement(
                'scopedCounts',
                fleets.length,
                (n) =>
                  `SELECT status, count(*) AS n FROM job_results
                 WHERE job_id = ? AND (fleet_id IS NULL OR fleet_id IN (${placeholders(n)})) GROUP BY status`,
              ),
              [jobId, ...fleets],
            )) as { status: JobResultStatus; n: number }[]);
    return Object.fromEntries(rows.map((row) => [row.status, row.n]));
  }

  async results(jobId: number, status: JobResultStatus | undefined, fleets: readonly number[] | null): Promise<JobResultRow[]> {
    const rows = (await this.sql.all(this.s.results, { job: jobId, status: status ?? null })) as JobResultRow[];
    return fleets === null ? rows : rows.filter((row) => row.fleet_id === null || fleets.includes(row.fleet_id));
  }

  async setLock(agentIds: readonly number[], lock: boolean, at: string): Promise<void> {
    for (const chunk of chunks(agentIds)) {
      await this.sql.run(
        this.statement(
          'lock',
          chunk.length,
          (n) => `UPDATE agents SET lock = ?, updated_at = ? WHERE id IN (${placeholders(n)})`,
        ),
        [lock ? 1 : 0, at, ...chunk],
      );
    }
  }
}
