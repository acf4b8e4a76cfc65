// The SQL of bulk jobs (migration 24): the jobs, one result row per device, and the command flags
// a job sets on many agents at once. Written in SQL both engines accept: lists of ids are
// expanded into `IN (?, ?, …)` and results inserted as multi-row VALUES, a chunk at a time.
import type { Db } from '../db/database.ts';
import type { Statement } from 'better-sqlite3';
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
  insert(job: NewJob): number;
  byId(id: number): JobRow | undefined;
  /** Newest first. */
  list(limit: number): JobRow[];
  finish(id: number, state: JobState, error: string | null, at: string): void;
  /** Jobs left running by a stopped server: marked interrupted; how many. */
  interruptRunning(at: string): number;
  insertResults(jobId: number, results: readonly NewJobResult[]): void;
  /** Results of these agents now `status` (with a reason), whatever they were. */
  setResults(jobId: number, agentIds: readonly number[], status: JobResultStatus, reason: string | null, at: string): void;
  /** Results of these agents still sent or offline become answered; the agents whose result changed. */
  answered(jobId: number, agentIds: readonly number[], at: string): number;
  /** How many results at each status; `fleets`: only those of these fleets (and of no fleet). */
  counts(jobId: number, fleets: readonly number[] | null): Partial<Record<JobResultStatus, number>>;
  results(jobId: number, status: JobResultStatus | undefined, fleets: readonly number[] | null): JobResultRow[];
  /** Locks or unlocks many agents' records (the flag a single Lock sets), one statement per chunk. */
  setLock(agentIds: readonly number[], lock: boolean, at: string): void;
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
  private readonly db: Db;
  private readonly s;
  /** Statements of a list of n ids or rows, prepared once per n. */
  private readonly sized = new Map<string, Statement>();

  constructor(db: Db) {
    this.db = db;
    this.s = {
      insert: db.prepare(
        `INSERT INTO jobs (action, state, selection, description, params, total, fleet_ids, account_id, actor, created_at)
         VALUES (@action, 'running', @selection, @description, @params, @total, @fleet_ids, @account_id, @actor, @created_at)
         RETURNING id`,
      ),
      byId: db.prepare(`SELECT * FROM jobs WHERE id = ?`),
      list: db.prepare(`SELECT * FROM jobs ORDER BY id DESC LIMIT ?`),
      finish: db.prepare(`UPDATE jobs SET state = ?, error = ?, finished_at = ? WHERE id = ?`),
      interrupt: db.prepare(
        `UPDATE jobs SET state = 'interrupted', error = 'The server stopped while it ran', finished_at = ? WHERE state = 'running'`,
      ),
      counts: db.prepare(`SELECT status, count(*) AS n FROM job_results WHERE job_id = ? GROUP BY status`),
      results: db.prepare(
        `SELECT agent_id, name, fleet_id, status, reason, at, answered_at FROM job_results
         WHERE job_id = @job AND (@status IS NULL OR status = @status) ORDER BY agent_id`,
      ),
    };
  }

  private statement(key: string, count: number, sql: (count: number) => string): Statement {
    const name = `${key}:${count}`;
    let statement = this.sized.get(name);
    if (!statement) {
      statement = this.db.prepare(sql(count));
      // Full chunks recur; the odd remainders are few, kept as well (at most one per size).
      this.sized.set(name, statement);
    }
    return statement;
  }

  insert(job: NewJob): number {
    return (this.s.insert.get(job) as { id: number }).id;
  }

  byId(id: number): JobRow | undefined {
    return this.s.byId.get(id) as JobRow | undefined;
  }

  list(limit: number): JobRow[] {
    return this.s.list.all(limit) as JobRow[];
  }

  finish(id: number, state: JobState, error: string | null, at: string): void {
    this.s.finish.run(state, error, at, id);
  }

  interruptRunning(at: string): number {
    return this.s.interrupt.run(at).changes;
  }

  insertResults(jobId: number, results: readonly NewJobResult[]): void {
    for (const chunk of chunks(results)) {
      const statement = this.statement(
        'results',
        chunk.length,
        (n) =>
          `INSERT INTO job_results (job_id, agent_id, name, fleet_id, status, reason, at) VALUES ${placeholders(n, RESULT_COLUMNS)}`,
      );
      statement.run(chunk.flatMap((r) => [jobId, r.agent_id, r.name, r.fleet_id, r.status, r.reason, r.at]));
    }
  }

  setResults(jobId: number, agentIds: readonly number[], status: JobResultStatus, reason: string | null, at: string): void {
    for (const chunk of chunks(agentIds)) {
      this.statement(
        'set',
        chunk.length,
        (n) => `UPDATE job_results SET status = ?, reason = ?, at = ? WHERE job_id = ? AND agent_id IN (${placeholders(n)})`,
      ).run(status, reason, at, jobId, ...chunk);
    }
  }

  answered(jobId: number, agentIds: readonly number[], at: string): number {
    let changed = 0;
    for (const chunk of chunks(agentIds)) {
      changed += this.statement(
        'answered',
        chunk.length,
        (n) =>
          `UPDATE job_results SET status = 'answered', answered_at = ?
           WHERE job_id = ? AND status IN ('sent', 'offline') AND agent_id IN (${placeholders(n)})`,
      ).run(at, jobId, ...chunk).changes;
    }
    return changed;
  }

  counts(jobId: number, fleets: readonly number[] | null): Partial<Record<JobResultStatus, number>> {
    const rows =
      fleets === null
        ? (this.s.counts.all(jobId) as { status: JobResultStatus; n: number }[])
        : fleets.length === 0
          ? []
          : (this.statement(
              'scopedCounts',
              fleets.length,
              (n) =>
                `SELECT status, count(*) AS n FROM job_results
                 WHERE job_id = ? AND (fleet_id IS NULL OR fleet_id IN (${placeholders(n)})) GROUP BY status`,
            ).all(jobId, ...fleets) as { status: JobResultStatus; n: number }[]);
    return Object.fromEntries(rows.map((row) => [row.status, row.n]));
  }

  results(jobId: number, status: JobResultStatus | undefined, fleets: readonly number[] | null): JobResultRow[] {
    const rows = this.s.results.all({ job: jobId, status: status ?? null }) as JobResultRow[];
    return fleets === null ? rows : rows.filter((row) => row.fleet_id === null || fleets.includes(row.fleet_id));
  }

  setLock(agentIds: readonly number[], lock: boolean, at: string): void {
    for (const chunk of chunks(agentIds)) {
      this.statement(
        'lock',
        chunk.length,
        (n) => `UPDATE agents SET lock = ?, updated_at = ? WHERE id IN (${placeholders(n)})`,
      ).run(lock ? 1 : 0, at, ...chunk);
    }
  }
}
