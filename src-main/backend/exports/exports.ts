// Every list as a download (issue 25, item 3): each export reads its list's rows by keyset pages,
// with the list's filters and the caller's fleet scope, and writes them as CSV or JSON lines a page
// at a time (format.ts). The scope is taken when the request arrives and passed in: the pages are
// read later, as the client downloads, outside the request's context.
import type {
  CodeExportQuery,
  CodeUseExportQuery,
  DeviceExportQuery,
  ExportFormat,
  Invitation,
  InvitationExportQuery,
  JobExportQuery,
  JobResultExportQuery,
  JobResultStatus,
  ResultExportQuery,
} from '../../../src-shared/contract/index.ts';
import { JOB_RESULT_STATUSES, policyDefinition, taskStatusText } from '../../../src-shared/contract/index.ts';
import { nowIso } from '../db/database.ts';
import { statusOfCode } from '../codes/codes.ts';
import type { InventorySummary } from '../inventory/fusion-inventory.ts';
import { complianceOf } from '../policies/views.ts';
import { verificationOf } from '../policies/verification.ts';
import { ENROLL_STATUS } from '../agents/status.ts';
import { compileWhere } from '../agents/device-query-repository.ts';
import type { WhereNode } from '../../../src-shared/contract/where.ts';
import {
  CODE_EXPORT,
  CODE_USE_EXPORT,
  DEVICE_EXPORT,
  INVITATION_EXPORT,
  JOB_EXPORT,
  JOB_RESULT_EXPORT,
  RESULT_EXPORT,
  type DeviceExportRow,
  type ResultExportRow,
} from './columns.ts';
import { exportChunks, filterPages, keysetPages, mapPages } from './format.ts';
import type { DeviceRecord, ExportRepository } from './repository.ts';

/** fleets/scope.ts fleetScopeParam of the request: null, every fleet; else a JSON array of fleet ids. */
export type ScopeParam = string | null;

/** What the exports need of the invitations room: its rows presented as its list presents them. */
export interface InvitationViews {
  views(rows: { id: number }[]): Promise<Invitation[]>;
}

/** The devices table's search words (src-renderer/lib/devices.ts searchTerms). */
const wordsOf = (q: string | undefined) => (q ?? '').trim().toLowerCase().split(/\s+/).filter(Boolean);

export class ExportService {
  private readonly repository: ExportRepository;
  /** The invitations room's presentation of its rows (the list's own). */
  private readonly invitationViews: InvitationViews;

  constructor(deps: { repository: ExportRepository; invitations: InvitationViews }) {
    this.repository = deps.repository;
    this.invitationViews = deps.invitations;
  }

  /**
   * The devices the selection (`where`: the list's where, view and fleet, parsed; null for none)
   * and the table's filters match, by id, with their inventory's fields and compliance.
   */
  devices(query: DeviceExportQuery, fleets: ScopeParam, where: WhereNode | null): AsyncGenerator<string> {
    const filter = {
      where: where === null ? undefined : compileWhere(where, Date.now()),
      fleetId: query.fleet_id,
      status: query.status,
      type: query.type,
      online: query.online,
      words: wordsOf(query.q),
    };
    const records = keysetPages<DeviceRecord, number>(
      (after, size) => this.repository.devices(filter, fleets, after, size),
      (row) => row.id,
    );
    let rows = mapPages(records, (page) => this.withCompliance(page));
    const wanted = query.compliance;
    if (wanted !== undefined) rows = filterPages(rows, (row) => row.compliance?.state === wanted);
    return exportChunks(rows, query.format ?? 'csv', DEVICE_EXPORT);
  }

  /** The invitations the list's filters match, newest first, each as the list presents it. */
  invitations(query: InvitationExportQuery, fleets: ScopeParam): AsyncGenerator<string> {
    const filter = { status: query.status, q: query.q, fleetId: query.fleet_id };
    const now = nowIso();
    const ids = keysetPages<{ id: number }, number>(
      (before, size) => this.repository.invitationIds(filter, now, fleets, before, size),
      (row) => row.id,
    );
    return exportChunks(
      mapPages(ids, (page) => this.invitationViews.views([...page])),
      query.format ?? 'csv',
      INVITATION_EXPORT,
    );
  }

  /** The enrollment codes, newest first. */
  codes(query: CodeExportQuery, fleets: ScopeParam): AsyncGenerator<string> {
    const now = Date.now();
    const pages = keysetPages(
      (before: number | undefined, size) => this.repository.codes(query.fleet_id, fleets, before, size),
      (row) => row.id,
    );
    return exportChunks(
      mapPages(pages, (page) => page.map((code) => ({ ...code, status: statusOfCode(code, now) }))),
      query.format ?? 'csv',
      CODE_EXPORT,
    );
  }

  /** The codes' logs, newest first: each use and refusal. */
  codeUses(query: CodeUseExportQuery, fleets: ScopeParam): AsyncGenerator<string> {
    const filter = { codeId: query.code_id, outcome: query.outcome };
    const pages = keysetPages(
      (before: number | undefined, size) => this.repository.codeUses(filter, fleets, before, size),
      (row) => row.id,
    );
    return exportChunks(pages, query.format ?? 'csv', CODE_USE_EXPORT);
  }

  /** Each device's task of the assignments the filters match, by task id, with its verification. */
  results(query: ResultExportQuery, fleets: ScopeParam): AsyncGenerator<string> {
    const filter = {
      assignmentId: query.assignment_id,
      fleetId: query.fleet_id,
      agentId: query.agent_id,
      policy: query.policy,
      kind: query.kind,
      state: query.state,
      status: query.status,
    };
    const pages = keysetPages(
      (after: number | undefined, size) => this.repository.results(filter, fleets, after, size),
      (row) => row.task_id,
    );
    const rows = mapPages(pages, (page) =>
      page.map(({ value, ...task }): ResultExportRow => ({
        ...task,
        value: value === null ? null : (JSON.parse(value) as boolean | number | string),
        label: policyDefinition(task.policy)?.label ?? task.policy,
        status_text: taskStatusText(task),
        verification: task.policy === 'deployApp' ? verificationOf(task) : null,
      })),
    );
    return exportChunks(rows, query.format ?? 'csv', RESULT_EXPORT);
  }

  /** The bulk jobs the caller sees (acting on a device of its fleets), newest first, their results counted within its fleets. */
  jobs(query: JobExportQuery, fleets: ScopeParam): AsyncGenerator<string> {
    const scope = scopeOf(fleets);
    const pages = filterPages(
      keysetPages(
        (before: number | undefined, size) => this.repository.jobs(before, size),
        (row) => row.id,
      ),
      (job) => jobVisible(job.fleet_ids, scope),
    );
    const rows = mapPages(pages, async (page) => {
      const counted = new Map<number, Record<JobResultStatus, number>>();
      for (const { job_id, status, n } of await this.repository.jobCounts(
        page.map((job) => job.id),
        fleets,
      )) {
        const counts = counted.get(job_id) ?? noResults();
        counts[status as JobResultStatus] = n;
        counted.set(job_id, counts);
      }
      return page.map((job) => {
        const counts = counted.get(job.id) ?? noResults();
        return { ...job, counts, processed: Object.values(counts).reduce((total, n) => total + n, 0) };
      });
    });
    return exportChunks(rows, query.format ?? 'csv', JOB_EXPORT);
  }

  /** Each device's result in the jobs the caller sees (one job's, one status's), newest job first. */
  jobResults(query: JobResultExportQuery, fleets: ScopeParam): AsyncGenerator<string> {
    const scope = scopeOf(fleets);
    const filter = { jobId: query.job_id, status: query.status };
    const pages = keysetPages(
      (after: { job: number; agent: number } | undefined, size) => this.repository.jobResults(filter, fleets, after, size),
      (row) => ({ job: row.job_id, agent: row.agent_id }),
    );
    return exportChunks(
      filterPages(pages, (row) => jobVisible(row.job_fleet_ids, scope)),
      query.format ?? 'csv',
      JOB_RESULT_EXPORT,
    );
  }

  /** A page of devices with their inventory read and their compliance counted (one statement for the page). */
  private async withCompliance(page: readonly DeviceRecord[]): Promise<DeviceExportRow[]> {
    const counted = new Map((await this.repository.complianceOf(page.map((d) => d.id))).map((c) => [c.agent_id, c]));
    return page.map((device) => {
      const counts = counted.get(device.id);
      const compliance =
        device.enroll_status === ENROLL_STATUS.unenrolled
          ? null
          : complianceOf({
              agent_id: device.id,
              agent_name: device.name,
              fleet_id: device.fleet_id,
              last_change: counts?.last_change ?? null,
              total: counts?.total ?? 0,
              pending: counts?.pending ?? 0,
              in_progress: counts?.in_progress ?? 0,
              done: counts?.done ?? 0,
              failed: counts?.failed ?? 0,
              canceled: counts?.canceled ?? 0,
              incompatible: counts?.incompatible ?? 0,
              overriden: counts?.overriden ?? 0,
            });
      return {
        ...device,
        summary: device.inventory === null ? null : (JSON.parse(device.inventory) as InventorySummary),
        compliance,
      };
    });
  }
}

/** Each status at zero. */
const noResults = () => Object.fromEntries(JOB_RESULT_STATUSES.map((status) => [status, 0])) as Record<JobResultStatus, number>;

/** The scope as fleet ids (null: every fleet). */
const scopeOf = (fleets: ScopeParam): number[] | null => (fleets === null ? null : (JSON.parse(fleets) as number[]));

/** Whether a client of `scope` sees a job: one acting on a device of its fleets (jobs/jobs.ts). */
const jobVisible = (fleetIds: string, scope: number[] | null) =>
  scope === null || (JSON.parse(fleetIds) as number[]).some((id) => scope.includes(id));

export type { ExportFormat };
