import { unlessDiskFull } from '../db/disk-full.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog, RecordedEvent } from '../events/event-log.ts';
import type { EventFeed } from '../cluster/feed.ts';
import type { AgentService, AgentSummary } from '../agents/agents.ts';
import type { FleetService } from '../fleets/fleets.ts';
import type { PolicyService } from '../policies/service.ts';
import type { ViewService } from '../views/views.ts';
import { commandRefusal, isLiveOnlyCommand, type AgentCommands } from '../broker/commands.ts';
import { requestContext, type RequestContext } from '../audit/context.ts';
import { currentFleetScope, type FleetScope } from '../fleets/scope.ts';
import { ApiError, badRequest, itemNotFound } from '../errors.ts';
import { isServerEvent } from '../../../src-shared/contract/event-stream.ts';
import type { JobRepository, JobRow, NewJobResult } from './repository.ts';
import {
  describeDeviceFilter,
  isDestructiveJobAction,
  JOB_ACTION_LABELS,
  JOB_RESULT_STATUSES,
  matchesDeviceFilter,
  type AgentCommand,
  type DeviceFilter,
  type Job,
  type JobAction,
  type JobBody,
  type JobCounts,
  type JobDetail,
  type JobResultStatus,
  type JobSelection,
} from '../../../src-shared/contract/index.ts';

// Bulk jobs (issue 25): one admin request acts on many devices. The selection is resolved at once,
// in the caller's fleets (a device of another fleet is never touched), the job answered with its
// id, and the work done afterwards at the broker's pace: commands are one publish per device, the
// records they change and the per-device results written a chunk at a time (never one database
// round trip per device on that path). The devices' answers (a ping's reply, an inventory, a
// position, an unenrollment confirmed) turn their results to "answered" as they come.

/** What the job does besides the action: resolved and checked when the job is made. */
type Plan =
  | { kind: 'command'; command: AgentCommand }
  | { kind: 'move'; fleetId: number }
  | { kind: 'assign'; policy: string; value: unknown; destination?: string | undefined; removeOnDelete?: boolean | undefined }
  | { kind: 'delete' };

/** A device the job acts on: its row as the device list shows it. */
type Target = AgentSummary;
/** One device's result, as the action gives it. */
type Outcome = { status: JobResultStatus; reason: string | null };

/** Devices a chunk holds: their results are written together. */
const COMMAND_CHUNK = 500;
const DEVICE_CHUNK = 100;
/** At most one progress event per job in this time. */
const PROGRESS_INTERVAL_MS = 1_000;
/** Answers are written together, this long after the first of a batch. */
const ANSWER_FLUSH_MS = 250;
/** How long a sent command's answer is awaited (a retained one reaches a device when it connects). */
const DEFAULT_ANSWER_WINDOW_MS = 15 * 60_000;

/** What counts as a device's answer to each action: the events its reply is recorded as. */
type AnswerKind = 'ping' | 'inventory' | 'geolocation' | 'unenrolled';
const ANSWERS: Partial<Record<JobAction, AnswerKind>> = {
  ping: 'ping',
  // The reference agent answers a Lock as it answers a Ping (its Lock case falls through).
  lock: 'ping',
  unlock: 'ping',
  inventory: 'inventory',
  geolocate: 'geolocation',
  unenroll: 'unenrolled',
};

/** The events a device's answer is recorded as, by the kind of answer they are. */
const ANSWER_EVENTS: Partial<Record<RecordedEvent['type'], AnswerKind>> = {
  'agent.ping_reply': 'ping',
  'agent.inventory': 'inventory',
  'agent.geolocation': 'geolocation',
  'agent.unenrolled': 'unenrolled',
};

function answerKindOf(event: RecordedEvent): AnswerKind | null {
  // A pong that no single ping awaited is noted as a status (the reference agent's answer to a Lock).
  if (isServerEvent(event, 'agent.status')) return event.data?.topic === 'Status/Ping' ? 'ping' : null;
  return ANSWER_EVENTS[event.type] ?? null;
}

const ZERO: JobCounts = { sent: 0, answered: 0, offline: 0, done: 0, refused: 0, failed: 0 };
const plural = (n: number) => `${n.toLocaleString('en-US')} device${n === 1 ? '' : 's'}`;
const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 500);

export interface JobServiceDeps {
  store: JobRepository;
  agents: AgentService;
  fleets: FleetService;
  events: EventLog;
  /**
   * Every node's events (cluster/feed.ts; default the local ones): behind a load balancer, a
   * device's answer (an MQTT report, an HTTP report) often reaches another node than the one
   * running the job, which records it as an event; the job's node sees it here.
   */
  feed?: EventFeed | undefined;
  work: UnitOfWork;
  commands: AgentCommands;
  /** Policies and deployments (assign_policy, deploy) and the compliance filter. */
  policies?: PolicyService | undefined;
  /** The filter language and saved views (`where`, `view` of a filter). */
  views?: Pick<ViewService, 'devices'> | undefined;
  /** How long answers are awaited after a command was sent (tests shorten it). */
  answerWindowMs?: number;
  /** This node's name (`serve --node-name`), written on the jobs it runs. */
  nodeName?: string | undefined;
  /**
   * The only node there can be (SQLite): every job left running is this server's last run's. Else
   * only the jobs of this node's name (its last run) are marked interrupted at start; those of
   * other nodes are left to `interruptOrphans` (the duty `jobs-sweeper`), once their node is dead.
   */
  sole?: boolean | undefined;
}

export class JobService {
  private readonly store: JobRepository;
  private readonly agents: AgentService;
  private readonly fleets: FleetService;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly commands: AgentCommands;
  private readonly policies: PolicyService | undefined;
  private readonly views: Pick<ViewService, 'devices'> | undefined;
  private readonly answerWindowMs: number;
  private readonly nodeName: string | null;
  private readonly unsubscribe: () => void;
  /** Jobs still acting, by id. */
  private readonly running = new Map<number, Promise<void>>();
  private closing = false;
  /** Agent id → the jobs awaiting its answer, of which kind, until when. */
  private readonly awaiting = new Map<number, { jobId: number; kind: AnswerKind; until: number }[]>();
  /** Answers arrived and not yet written: job id → agent ids. */
  private readonly answers = new Map<number, number[]>();
  private answerTimer: NodeJS.Timeout | null = null;
  /** The latest progress event of each job, and the one scheduled. */
  private readonly lastProgress = new Map<number, number>();
  private readonly progressTimers = new Map<number, NodeJS.Timeout>();

  constructor(deps: JobServiceDeps) {
    this.store = deps.store;
    this.agents = deps.agents;
    this.fleets = deps.fleets;
    this.events = deps.events;
    this.work = deps.work;
    this.commands = deps.commands;
    this.policies = deps.policies;
    this.views = deps.views;
    this.answerWindowMs = deps.answerWindowMs ?? DEFAULT_ANSWER_WINDOW_MS;
    this.nodeName = deps.nodeName ?? null;
    // A job the last run left half done stays so, said as much (its devices' results say how far it went).
    // (Its statement is issued now, before any job of this run can start.) Another node's running
    // jobs are its own: they are left alone while it lives.
    const sole = deps.sole ?? true;
    unlessDiskFull(() => this.store.interruptRunning(nowIso(), sole || this.nodeName === null ? null : [this.nodeName]));
    this.unsubscribe = (deps.feed ?? deps.events).subscribe((event) => this.answered(event));
  }

  /**
   * Starts a job for the current admin request: checks the action's parameters, resolves the
   * selection in the request's fleets, checks the expected count, records the job (its one audit
   * entry) and answers; the devices are acted on afterwards.
   */
  async create(body: JobBody): Promise<Job> {
    if (this.closing) throw new ApiError(503, 'ERROR_SHUTTING_DOWN', 'The server is stopping: try again once it is back');
    const scope = currentFleetScope();
    const { plan, params } = await this.planOf(body);
    const { devices, missing, description } = await this.resolve(body.selection, scope);
    const label = JOB_ACTION_LABELS[body.action];
    const count = devices.length;
    if (count === 0) {
      if (missing.length > 0) throw itemNotFound('None of these devices exists (in the fleets you may act on)');
      throw new ApiError(409, 'ERROR_EMPTY_SELECTION', `No device matches this selection (${description}): nothing to do`);
    }
    if (body.expected_count === undefined && isDestructiveJobAction(body.action)) {
      throw new ApiError(
        400,
        'ERROR_COUNT_REQUIRED',
        `${label} cannot be undone: confirm the number of devices it will act on (expected_count: ${count})`,
      );
    }
    if (body.expected_count !== undefined && body.expected_count !== count) {
      throw new ApiError(
        409,
        'ERROR_COUNT_MISMATCH',
        `The selection now holds ${plural(count)}, not ${body.expected_count.toLocaleString('en-US')}: nothing was done. Look at it again and confirm the new count.`,
      );
    }
    const fleetIds = [...new Set(devices.map((device) => device.fleet_id))].sort((a, b) => a - b);
    const context = requestContext.current();
    const actor = context?.actor ?? null;
    const total = count + missing.length;
    const at = nowIso();
    const id = await this.work.run(async () => {
      const jobId = await this.store.insert({
        action: body.action,
        selection: JSON.stringify(body.selection),
        description,
        params: params === null ? null : JSON.stringify(params),
        total,
        fleet_ids: JSON.stringify(fleetIds),
        account_id: actor?.accountId ?? null,
        actor: actor === null ? null : actor.tokenName !== null ? `token ${actor.tokenName} (${actor.role})` : actor.name,
        created_at: at,
        node: this.nodeName,
      });
      // The job's one audit entry: the action, the selection and the count.
      await this.events.record(
        'job.started',
        `${label}: ${plural(total)} (${description})${params === null ? '' : ` ${paramsText(params)}`}, job #${jobId}`,
        {},
        {
          job_id: jobId,
          action: body.action,
          state: 'running',
          total,
          processed: 0,
          counts: ZERO,
          fleet_ids: fleetIds,
          name: `${label} ${plural(total)}`,
          selection: description,
        },
      );
      if (missing.length > 0) {
        await this.store.insertResults(
          jobId,
          missing.map((agentId) => ({
            agent_id: agentId,
            name: `#${agentId}`,
            fleet_id: null,
            status: 'refused' as const,
            reason: 'No such device in the fleets you may act on',
            at,
          })),
        );
      }
      return jobId;
    });
    const job = (await this.store.byId(id))!;
    // The work runs for the same actor and fleets, outside the request: what it records names the
    // actor, but the audit trail holds the job's one entry (audit/context.ts jobId).
    const runContext: RequestContext = {
      actor,
      address: context?.address ?? null,
      audited: true,
      fleets: scope,
      jobId: id,
    };
    const run = requestContext
      .run(runContext, () => this.run(job, plan, devices))
      .catch((error: unknown) => this.fail(job, error))
      .finally(() => this.running.delete(id));
    this.running.set(id, run);
    return this.view(job, scope);
  }

  async list(limit = 100): Promise<Job[]> {
    const scope = currentFleetScope();
    const rows = await this.store.list(scope === null ? limit : Math.max(limit, 1000));
    return Promise.all(
      rows
        .filter((row) => visible(row, scope))
        .slice(0, limit)
        .map((row) => this.view(row, scope)),
    );
  }

  async get(id: number, status?: JobResultStatus): Promise<JobDetail> {
    const scope = currentFleetScope();
    const row = await this.store.byId(id);
    if (!row || !visible(row, scope)) throw itemNotFound('Job not found');
    return { ...(await this.view(row, scope)), results: await this.store.results(id, status, scope) };
  }

  /** Resolves once every job running now has acted on all its devices (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  /**
   * Jobs whose node is none of `alive` (it died while they ran), never this node's own: marked
   * interrupted; how many.
   */
  async interruptOrphans(alive: readonly string[]): Promise<number> {
    const own = this.nodeName === null || alive.includes(this.nodeName) ? [] : [this.nodeName];
    return this.store.interruptOrphans(nowIso(), [...alive, ...own]);
  }

  /** Stops taking jobs, lets the running ones stop at their next chunk, writes the answers received. */

  async close(): Promise<void> {
    this.closing = true;
    await this.idle();
    this.unsubscribe();
    if (this.answerTimer) clearTimeout(this.answerTimer);
    await this.flushAnswers();
    for (const timer of this.progressTimers.values()) clearTimeout(timer);
    this.progressTimers.clear();
  }

  // ── making the job ─────────────────────────────────────────────────────────────────────────

  /** The action's parameters, checked now (a mistake is one 400, not one refusal per device). */
  private async planOf(body: JobBody): Promise<{ plan: Plan; params: Record<string, unknown> | null }> {
    const extra = (
      ['fleet_id', 'fleet', 'policy', 'value', 'kind', 'item_id', 'destination', 'remove_on_delete'] as const
    ).filter((key) => body[key] !== undefined);
    const only = (...allowed: string[]) => {
      const unexpected = extra.filter((key) => !allowed.includes(key));
      if (unexpected.length > 0) throw badRequest(`${body.action} takes no ${unexpected.join(', ')}`);
    };
    switch (body.action) {
      case 'move': {
        only('fleet_id', 'fleet');
        if ((body.fleet_id === undefined) === (body.fleet === undefined))
          throw badRequest('move needs the fleet to move the devices to: fleet_id or fleet (its name)');
        const fleet =
          body.fleet_id !== undefined ? await this.fleets.get(body.fleet_id) : await this.fleets.resolve(1, body.fleet);
        return { plan: { kind: 'move', fleetId: fleet.id }, params: { fleet_id: fleet.id, fleet: fleet.name } };
      }
      case 'assign_policy':
      case 'deploy': {
        const policies = this.policies;
        if (!policies) throw new ApiError(503, 'ERROR_UNAVAILABLE', 'Policies are not available on this server');
        let policy: string;
        let value: unknown;
        if (body.action === 'deploy') {
          only('kind', 'item_id', 'destination', 'remove_on_delete');
          if (body.kind === undefined || body.item_id === undefined)
            throw badRequest('deploy needs what to deploy: kind (package or file) and item_id');
          if (body.kind === 'package' && body.destination !== undefined) throw badRequest('destination is for files only');
          policy = body.kind === 'package' ? 'deployApp' : 'deployFile';
          value = body.item_id;
        } else {
          only('policy', 'value');
          if (body.policy === undefined || body.value === undefined)
            throw badRequest('assign_policy needs a policy and its value');
          policy = body.policy;
          value = body.value;
        }
        policies.checkValue(policy, value);
        const params: Record<string, unknown> = { policy, value };
        if (body.destination !== undefined) params.destination = body.destination;
        if (body.remove_on_delete !== undefined) params.remove_on_delete = body.remove_on_delete;
        return {
          plan: { kind: 'assign', policy, value, destination: body.destination, removeOnDelete: body.remove_on_delete },
          params,
        };
      }
      case 'delete':
        only();
        return { plan: { kind: 'delete' }, params: null };
      case 'ping':
      case 'lock':
      case 'unlock':
      case 'inventory':
      case 'geolocate':
      case 'wipe':
      case 'unenroll':
        only();
        return { plan: { kind: 'command', command: body.action }, params: null };
    }
  }

  /** The devices of the selection in `scope`, ids given that are not there, and the selection in words. */
  private async resolve(
    selection: JobSelection,
    scope: FleetScope,
  ): Promise<{ devices: Target[]; missing: number[]; description: string }> {
    const all = await this.agents.list(scope);
    if (selection.ids !== undefined) {
      const byId = new Map(all.map((device) => [device.id, device]));
      const ids = [...new Set(selection.ids)];
      const devices = ids.flatMap((id) => byId.get(id) ?? []);
      const missing = ids.filter((id) => !byId.has(id));
      return { devices, missing, description: `${plural(ids.length)} chosen` };
    }
    const filter: DeviceFilter = { ...selection.filter };
    if (filter.where !== undefined && filter.where.trim() === '') delete filter.where;
    // The filter language and saved views: the server's query (within the scope), then the table's filters.
    let base = all;
    if (filter.where !== undefined || filter.view !== undefined) {
      if (!this.views) throw new ApiError(503, 'ERROR_UNAVAILABLE', 'The filter language is not available on this server');
      base = await this.views.devices({ where: filter.where, view: filter.view });
    }
    if (filter.fleet !== undefined) {
      // By name (or id), as the table and the CLI name it: an unknown fleet is a 400, not "no device".
      const fleet = await this.fleets.resolve(1, filter.fleet);
      filter.fleet = fleet.name;
    }
    if (filter.fleet_id !== undefined) await this.fleets.get(filter.fleet_id);
    if (filter.search !== undefined && filter.search.trim() === '') delete filter.search;
    let complianceOf: ((id: number) => string | null) | undefined;
    if (filter.compliance !== undefined) {
      if (!this.policies) throw new ApiError(503, 'ERROR_UNAVAILABLE', 'Compliance is not available on this server');
      const states = new Map((await this.policies.compliance(null)).map((row) => [row.agent_id, row.state]));
      complianceOf = (id) => states.get(id) ?? null;
    }
    const devices = base.filter((device) => matchesDeviceFilter(device, filter, complianceOf));
    return { devices, missing: [], description: describeDeviceFilter(filter) };
  }

  // ── doing it ───────────────────────────────────────────────────────────────────────────────

  private async run(job: JobRow, plan: Plan, devices: Target[]): Promise<void> {
    // The request is answered first.
    await nextTurn();
    const complete = await this.act(job, plan, devices);
    await this.finish(job, complete ? 'done' : 'interrupted', complete ? null : 'The server stopped while it ran');
  }

  /** Acts on every device (false: stopped before the last, the server closing). */
  private act(job: JobRow, plan: Plan, devices: Target[]): Promise<boolean> {
    switch (plan.kind) {
      case 'command': {
        const command = plan.command;
        if (command !== 'wipe' && command !== 'unenroll') return this.sendCommands(job, devices, command);
        // Rare and destructive: each device's command is recorded in its own history, as a single one is.
        return this.eachDevice(job, devices, async (device) => {
          const sent = await this.commands.send(device.id, command);
          return sent.online
            ? { status: 'sent', reason: null }
            : { status: 'offline', reason: 'Not connected: kept until it connects' };
        });
      }
      case 'move':
        return this.eachDevice(job, devices, async (device) => {
          const sent = await this.commands.moveToFleet(device.id, { fleet_id: plan.fleetId });
          return { status: 'done', reason: sent === null ? 'Already in that fleet' : null };
        });
      case 'assign': {
        const policies = this.policies!;
        return this.eachDevice(job, devices, async (device) => {
          await policies.assign({
            policy: plan.policy,
            value: plan.value,
            agentId: device.id,
            destination: plan.destination,
            removeOnDelete: plan.removeOnDelete,
          });
          return { status: 'done', reason: null };
        });
      }
      case 'delete':
        return this.eachDevice(job, devices, async (device) => {
          await this.agents.remove(device.id);
          return { status: 'done', reason: null };
        });
    }
  }

  /**
   * The fast path of ping, lock, unlock, inventory and locate: per chunk, one transaction writes
   * the lock flags and the results, then one publish per device goes out through the broker.
   */
  private async sendCommands(job: JobRow, devices: Target[], command: AgentCommand): Promise<boolean> {
    const liveOnly = isLiveOnlyCommand(command);
    const answer = ANSWERS[job.action];
    let start = 0;
    for (; start < devices.length && !this.closing; start += COMMAND_CHUNK) {
      const chunk = devices.slice(start, start + COMMAND_CHUNK);
      const at = nowIso();
      const results: NewJobResult[] = [];
      const toSend: Target[] = [];
      for (const device of chunk) {
        const result = { agent_id: device.id, name: device.name, fleet_id: device.fleet_id, at };
        const refusal = commandRefusal(device);
        if (refusal) {
          results.push({ ...result, status: 'refused', reason: refusal.message });
          continue;
        }
        const online = this.commands.isConnected(device.id);
        if (!online && liveOnly) {
          results.push({
            ...result,
            status: 'offline',
            reason: 'Not connected: not sent (only a connected device can answer it)',
          });
          continue;
        }
        toSend.push(device);
        results.push(
          online
            ? { ...result, status: 'sent', reason: null }
            : { ...result, status: 'offline', reason: 'Not connected: kept until it connects' },
        );
      }
      const ids = toSend.map((device) => device.id);
      await this.work.run(async () => {
        if (command === 'lock' || command === 'unlock') await this.store.setLock(ids, command === 'lock', at);
        await this.store.insertResults(job.id, results);
      });
      if (answer) this.awaitAnswers(job.id, ids, answer);
      const failed = new Map<string, number[]>();
      for (const { agentId, error } of await this.commands.publishCommands(toSend, command)) {
        const reason = `Not sent: ${reasonOf(error)}`;
        failed.set(reason, [...(failed.get(reason) ?? []), agentId]);
      }
      for (const [reason, agentIds] of failed) await this.store.setResults(job.id, agentIds, 'failed', reason, nowIso());
      await this.progressSoon(job);
    }
    return start >= devices.length;
  }

  /** Actions that change the server's records device by device (move, delete, policies, wipe, unenroll). */
  private async eachDevice(
    job: JobRow,
    devices: Target[],
    act: (device: Target) => Outcome | Promise<Outcome>,
  ): Promise<boolean> {
    const answer = ANSWERS[job.action];
    let start = 0;
    for (; start < devices.length && !this.closing; start += DEVICE_CHUNK) {
      const results: NewJobResult[] = [];
      for (const device of devices.slice(start, start + DEVICE_CHUNK)) {
        const base = { agent_id: device.id, name: device.name, fleet_id: device.fleet_id };
        try {
          const outcome = await act(device);
          results.push({ ...base, ...outcome, at: nowIso() });
        } catch (error) {
          // A refusal the single-device route would give (409 unenrolled, 404 gone …) is the device's reason.
          const status = error instanceof ApiError && error.status < 500 ? 'refused' : 'failed';
          results.push({ ...base, status, reason: reasonOf(error), at: nowIso() });
        }
      }
      await this.store.insertResults(job.id, results);
      if (answer) {
        const sent = results.filter((result) => result.status === 'sent' || result.status === 'offline');
        this.awaitAnswers(
          job.id,
          sent.map((result) => result.agent_id),
          answer,
        );
      }
      await this.progressSoon(job);
      await nextTurn();
    }
    return start >= devices.length;
  }

  private async finish(job: JobRow, state: 'done' | 'failed' | 'interrupted', error: string | null): Promise<void> {
    const timer = this.progressTimers.get(job.id);
    if (timer) clearTimeout(timer);
    this.progressTimers.delete(job.id);
    await this.work.run(async () => {
      await this.store.finish(job.id, state, error, nowIso());
      await this.recordProgress('job.finished', { ...job, state });
    });
  }

  private async fail(job: JobRow, error: unknown): Promise<void> {
    try {
      await this.finish(job, 'failed', reasonOf(error));
    } catch {
      // The database is gone (the server stopping): the next start marks the job interrupted.
    }
  }

  // ── progress and answers ───────────────────────────────────────────────────────────────────

  /** A progress event for the job now, or once PROGRESS_INTERVAL_MS has passed since the last. */
  private async progressSoon(job: JobRow): Promise<void> {
    if (this.progressTimers.has(job.id)) return;
    const wait = (this.lastProgress.get(job.id) ?? 0) + PROGRESS_INTERVAL_MS - Date.now();
    const emit = async () => {
      this.progressTimers.delete(job.id);
      const row = await this.store.byId(job.id);
      if (row) await this.recordProgress('job.progress', row);
    };
    if (wait <= 0) await emit();
    else this.progressTimers.set(job.id, setTimeout(() => unlessDiskFull(emit), wait).unref());
  }

  private async recordProgress(type: 'job.progress' | 'job.finished', job: JobRow): Promise<void> {
    this.lastProgress.set(job.id, Date.now());
    if (this.lastProgress.size > 1000) this.lastProgress.clear();
    const counts = countsOf(await this.store.counts(job.id, null));
    const processed = sum(counts);
    const label = JOB_ACTION_LABELS[job.action];
    const tally = JOB_RESULT_STATUSES.filter((status) => counts[status] > 0)
      .map((status) => `${counts[status].toLocaleString('en-US')} ${status}`)
      .join(', ');
    const message =
      type === 'job.finished'
        ? `Job #${job.id} (${label}) ${job.state === 'done' ? 'done' : job.state}: ${tally || 'no device'}`
        : `Job #${job.id} (${label}): ${processed.toLocaleString('en-US')} of ${job.total.toLocaleString('en-US')} — ${tally}`;
    const data = {
      job_id: job.id,
      action: job.action,
      state: job.state,
      total: job.total,
      processed,
      counts,
      fleet_ids: JSON.parse(job.fleet_ids) as number[],
    };
    // Never an audit entry of its own (the job's is written when it starts).
    const quiet: RequestContext = { actor: requestContext.current()?.actor ?? null, address: null, audited: true, jobId: job.id };
    await requestContext.run(quiet, () => this.events.record(type, message, {}, data));
  }

  private awaitAnswers(jobId: number, agentIds: readonly number[], kind: AnswerKind): void {
    const until = Date.now() + this.answerWindowMs;
    for (const agentId of agentIds) {
      const waits = this.awaiting.get(agentId);
      if (waits) waits.push({ jobId, kind, until });
      else this.awaiting.set(agentId, [{ jobId, kind, until }]);
    }
  }

  /** An event that may be a device's answer to a job's command. */
  private answered(event: RecordedEvent): void {
    if (event.agent_id === null || this.awaiting.size === 0) return;
    const waits = this.awaiting.get(event.agent_id);
    if (!waits) return;
    const kind = answerKindOf(event);
    if (kind === null) return;
    const now = Date.now();
    const left = waits.filter((wait) => {
      if (wait.until < now) return false;
      if (wait.kind !== kind) return true;
      const list = this.answers.get(wait.jobId);
      if (list) list.push(event.agent_id!);
      else this.answers.set(wait.jobId, [event.agent_id!]);
      return false;
    });
    if (left.length > 0) this.awaiting.set(event.agent_id, left);
    else this.awaiting.delete(event.agent_id);
    if (this.answers.size > 0 && !this.answerTimer) {
      this.answerTimer = setTimeout(() => {
        this.answerTimer = null;
        unlessDiskFull(() => this.flushAnswers());
      }, ANSWER_FLUSH_MS).unref();
    }
  }

  /** Writes the answers received, one statement per job and chunk, and tells the consoles. */
  private async flushAnswers(): Promise<void> {
    const batches = [...this.answers];
    this.answers.clear();
    if (batches.length === 0) return;
    const at = nowIso();
    for (const [jobId, agentIds] of batches) {
      try {
        if ((await this.store.answered(jobId, agentIds, at)) === 0) continue;
        const job = await this.store.byId(jobId);
        if (job) await this.progressSoon(job);
      } catch {
        // The database is closing: these answers are not kept.
      }
    }
    this.forgetExpired();
  }

  private forgetExpired(): void {
    const now = Date.now();
    for (const [agentId, waits] of this.awaiting) {
      const left = waits.filter((wait) => wait.until >= now);
      if (left.length === 0) this.awaiting.delete(agentId);
      else if (left.length !== waits.length) this.awaiting.set(agentId, left);
    }
  }

  private async view(row: JobRow, scope: FleetScope): Promise<Job> {
    const counts = countsOf(await this.store.counts(row.id, scope));
    return {
      id: row.id,
      action: row.action,
      state: row.state,
      selection: row.description,
      params: row.params === null ? null : (JSON.parse(row.params) as Record<string, unknown>),
      total: row.total,
      processed: sum(counts),
      counts,
      actor: row.actor,
      error: row.error,
      created_at: row.created_at,
      finished_at: row.finished_at,
    };
  }
}

/** Whether a client of `scope` sees the job: one acting on a device of its fleets. */
function visible(row: JobRow, scope: FleetScope): boolean {
  if (scope === null) return true;
  const fleets = JSON.parse(row.fleet_ids) as number[];
  return fleets.some((id) => scope.includes(id));
}

function countsOf(raw: Partial<Record<JobResultStatus, number>>): JobCounts {
  return { ...ZERO, ...raw };
}

const sum = (counts: JobCounts) => Object.values(counts).reduce((total, n) => total + n, 0);

/** "to fleet Warehouse", "policy passwordMinLength = 8". */
function paramsText(params: Record<string, unknown>): string {
  if (typeof params.fleet === 'string') return `to fleet "${params.fleet}"`;
  if (typeof params.policy === 'string') return `${params.policy} = ${JSON.stringify(params.value)}`;
  return '';
}
