import type { Report, ReportName, ReportPoint, ReportSeriesKey, ReportShare } from '../../../src-shared/contract/index.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { RecordedEvent } from '../events/event-log.ts';
import type { EventFeed } from '../cluster/feed.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { fleetScopeParam } from '../fleets/scope.ts';
import type { CountedEvent, FigureMetric, FigureRepository, FigureRow } from './repository.ts';

// The daily figures behind the Reports page, kept as the server runs rather than recomputed from
// the whole history when the page opens:
//
// - counted as they happen, by one node (the duty `reports-sampler`, whichever node recorded the
//   event: it follows every node's committed events, cluster/feed.ts): a device enrolled
//   (`agent.enrolled`), a deployment task that reported done or failed (`task.status`), each added
//   to its day and the device's fleet just after the change commits. The events table is the
//   ledger: a cursor names the last event counted, and each count's transaction skips an event at
//   or below it (read in that transaction), so none is counted twice, even while the duty changes
//   hands. The node taking the duty first counts the events after the cursor (recorded while no
//   node counted: a crash between a commit and its count, a hand-over), on the day they happened.
//   The feed hands events over in commit order, which is id order on PostgreSQL (feed.ts) and on
//   SQLite's single writer; an event arriving below the cursor is skipped, not counted late.
// - sampled on a timer by one node (the duty `reports-sampler`, cluster/duties.ts: every 5 minutes
//   by default, and when the node takes the duty, at start on a single node): devices online, per fleet and
//   hour (the count at the hour's last sample: summing fleets is exact, since one sample counts
//   every fleet at once, and the day's peak is the busiest hour); and the day's devices,
//   compliance (done / pending / failed / none), OS versions and models, replaced by each sample so
//   the day keeps its last one. Hourly values, not only a daily peak, so a chart can show a day's
//   shape later, at 24 small rows per fleet and day.
//
// The first start backfills what the existing rows tell: devices by the day they enrolled (those
// still in the database), deployment tasks by the day they reported done or failed. Compliance,
// presence, OS versions and models of past days are not in any row: they start with the first
// sample. Days are UTC calendar days: the server has no time-zone setting.

const DAY_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_SAMPLE_EVERY_MS = 5 * 60 * 1000;
/** OS versions and models: the most common ones get a line each, the rest one "Other" line. */
const TOP_KEYS = 8;
const CATCH_UP_PAGE = 500;

export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const hourOf = (ms: number): string => new Date(ms).toISOString().slice(11, 13);

export interface DailyFiguresOptions {
  /** How often devices are sampled; default 5 minutes. */
  sampleEveryMs?: number | undefined;
  /** The clock (tests drive it across a day boundary); default the real one. */
  now?: (() => number) | undefined;
}

const REPORTS: Record<ReportName, { title: string; description: string }> = {
  enrollments: {
    title: 'Enrollments per day',
    description: 'Devices enrolled each day (a device enrolling again is not counted twice), counted as they enroll.',
  },
  online: {
    title: 'Devices online',
    description:
      'Each day: the most devices online at once (the busiest hourly sample), the count at the last sample, and the devices enrolled. Sampled while the server runs.',
  },
  compliance: {
    title: 'Compliance',
    description:
      "Devices by the state of their policies at the day's last sample: all done, some pending, some failed (or incompatible), or no policy.",
  },
  os: {
    title: 'OS versions',
    description: "Devices by operating system version, from each device's latest inventory: now, and at each day's last sample.",
  },
  models: {
    title: 'Models',
    description: "Devices by manufacturer and model, from each device's latest inventory: now, and at each day's last sample.",
  },
  deployments: {
    title: 'Deployments',
    description: 'Deployment tasks (apps and files installed or removed) that devices reported done or failed, per day.',
  },
};

/** The events the figures count as they happen. */
const COUNTED = new Set<string>(['agent.enrolled', 'task.status']);

export class DailyFigures {
  private readonly repository: FigureRepository;
  private readonly feed: EventFeed;
  private readonly work: UnitOfWork;
  private readonly fleets: Pick<FleetService, 'get'>;
  private readonly now: () => number;
  readonly sampleEveryMs: number;
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  /** Live events told while the start catches up: counted after it, those it did not count. */
  private waiting: RecordedEvent[] | null = null;
  /** The live counts, one after the other (in the feed's order: a later one never passes the cursor first). */
  private following: Promise<void> = Promise.resolve();
  /** Counted events told since the last count began: the next count takes them all, in one transaction. */
  private pending: RecordedEvent[] = [];
  /** Samples and counts under way (close() waits for them). */
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    deps: {
      repository: FigureRepository;
      feed: EventFeed;
      work: UnitOfWork;
      fleets: Pick<FleetService, 'get'>;
    },
    options: DailyFiguresOptions = {},
  ) {
    this.repository = deps.repository;
    this.feed = deps.feed;
    this.work = deps.work;
    this.fleets = deps.fleets;
    this.now = options.now ?? Date.now;
    this.sampleEveryMs = options.sampleEveryMs ?? DEFAULT_SAMPLE_EVERY_MS;
  }

  /** The first start backfills (every node may: the cursor's row is made once). Counting is `startCounting`: one node's duty. */
  async start(): Promise<void> {
    await this.work.run(async () => {
      if (!(await this.repository.cursor())) await this.repository.backfill(new Date(this.now()).toISOString());
    });
  }

  /**
   * Counts the events after the cursor, then follows every node's committed events (the feed),
   * until `stopCounting` (the duty `reports-sampler`: one node counts for all).
   */
  async startCounting(): Promise<void> {
    if (this.unsubscribe) return;
    // Following first (events told meanwhile wait), so nothing committed during the catch-up is missed.
    this.waiting = [];
    this.unsubscribe = this.feed.subscribe((event) => {
      if (this.waiting) this.waiting.push(event);
      else if (COUNTED.has(event.type)) {
        // One count (one transaction) for every event told before it begins: under a crowd of
        // enrollments, a commit for several instead of one each (issue 24).
        this.pending.push(event);
        if (this.pending.length === 1) this.track((this.following = this.following.then(() => this.followPending())));
      }
    });
    try {
      await this.catchUp();
    } finally {
      const waiting = this.waiting;
      this.waiting = null;
      await this.follow(waiting ?? []);
    }
  }

  /** Follows the events no more (the duty went to another node); counts under way finish. */
  async stopCounting(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.waiting = null;
    await Promise.allSettled([...this.running]);
  }

  /**
   * Samples now, then every `sampleEveryMs` (the duty `reports-sampler`: one node of several
   * samples, since a sample counts every fleet's devices at once).
   */
  async startSampling(): Promise<void> {
    if (this.timer) return;
    this.timer = setInterval(() => this.track(this.sampleQuietly()), this.sampleEveryMs);
    this.timer.unref();
    await this.sampleQuietly();
  }

  /** Samples no more (the duty went to another node); a sample under way finishes. */
  async stopSampling(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.running]);
  }

  async close(): Promise<void> {
    await this.stopSampling();
    await this.stopCounting();
  }

  /** Samples the devices now (the timer's work; tests call it after moving the clock). */
  async sample(): Promise<void> {
    const now = this.now();
    await this.work.run(() => this.repository.sample(dayOf(now), hourOf(now), new Date(now).toISOString()));
  }

  private track(work: Promise<unknown>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  private async sampleQuietly(): Promise<void> {
    try {
      await this.sample();
    } catch {
      // A full disk, a busy or closed database: the next sample writes the figures again.
    }
  }

  /** The events recorded after the cursor, counted on the day each happened. */
  private async catchUp(): Promise<void> {
    const upto = await this.repository.lastEventId();
    let after = Number((await this.repository.cursor())?.event_id ?? 0);
    for (;;) {
      const page = await this.repository.countedEvents(after, upto, CATCH_UP_PAGE);
      if (page.length === 0) break;
      await this.work.run(async () => {
        const counted = await this.countedUpTo();
        for (const event of page) if (event.id > counted) await this.count(event, event.at.slice(0, 10));
        await this.repository.advance(page.at(-1)!.id);
      });
      after = page.at(-1)!.id;
    }
    await this.work.run(() => this.repository.advance(upto));
  }

  /** The cursor, read in the count's transaction: an event at or below it is counted already (by this node or another). */
  private async countedUpTo(): Promise<number> {
    return Number((await this.repository.cursor())?.event_id ?? 0);
  }

  private followPending(): Promise<void> {
    const events = this.pending;
    this.pending = [];
    return this.follow(events);
  }

  /** Live events, just committed (in the feed's order): counted on today's day (by this service's clock), in one transaction. */
  private async follow(events: RecordedEvent[]): Promise<void> {
    const counted = events.filter((event) => COUNTED.has(event.type));
    if (counted.length === 0) return;
    try {
      const day = dayOf(this.now());
      await this.work.run(async () => {
        const upTo = await this.countedUpTo();
        const fresh = counted.filter((event) => event.id > upTo);
        if (fresh.length === 0) return;
        for (const event of fresh) {
          const row: CountedEvent = {
            id: event.id,
            at: event.at,
            type: event.type as CountedEvent['type'],
            agent_id: event.agent_id,
            data: event.data === null ? null : JSON.stringify(event.data),
          };
          await this.count(row, day);
        }
        await this.repository.advance(Math.max(...fresh.map((event) => event.id)));
      });
    } catch {
      // Not counted now: the next catch-up counts them, unless a later event was counted meanwhile (the cursor is past it).
    }
  }

  private async count(event: CountedEvent, day: string): Promise<void> {
    if (event.type === 'agent.enrolled') {
      const fleet = event.agent_id === null ? undefined : await this.repository.fleetOfAgent(event.agent_id);
      if (fleet !== undefined) await this.repository.add(day, fleet, 'enrolled', '');
      return;
    }
    const data = event.data === null ? null : (JSON.parse(event.data) as { task_id?: unknown; status?: unknown });
    if (!data || (data.status !== 'done' && data.status !== 'failed') || typeof data.task_id !== 'number') return;
    const fleet = await this.repository.fleetOfDeploymentTask(data.task_id);
    if (fleet !== undefined) await this.repository.add(day, fleet, 'deploy', data.status);
  }

  /** A report over the last `days` days (today included), for one fleet or every fleet the request sees. */
  async report(name: ReportName, days: number, fleetId?: number): Promise<Report> {
    const fleets = fleetId === undefined ? fleetScopeParam() : JSON.stringify([(await this.fleets.get(fleetId)).id]);
    const today = this.now();
    const dayList = Array.from({ length: days }, (_, i) => dayOf(today - (days - 1 - i) * DAY_MS));
    const from = dayList[0]!;
    const to = dayList.at(-1)!;
    const range = async (metric: FigureMetric) => byDay(await this.repository.range(metric, from, to, fleets));
    let series: ReportSeriesKey[];
    let points: ReportPoint[];
    let current: ReportShare[] | null = null;
    if (name === 'enrollments' || name === 'deployments') {
      series =
        name === 'enrollments'
          ? [{ key: 'enrolled', label: 'Enrolled' }]
          : [
              { key: 'done', label: 'Succeeded' },
              { key: 'failed', label: 'Failed' },
            ];
      const rows = await range(name === 'enrollments' ? 'enrolled' : 'deploy');
      points = dayList.map((day) => ({
        day,
        values: Object.fromEntries(series.map(({ key }) => [key, rows.get(day)?.get(name === 'enrollments' ? '' : key) ?? 0])),
      }));
    } else if (name === 'online') {
      series = [
        { key: 'peak', label: 'Most online at once' },
        { key: 'latest', label: 'Online at the last sample' },
        { key: 'devices', label: 'Devices' },
      ];
      const hours = await range('online');
      const devices = await range('devices');
      points = dayList.map((day) => {
        const sampled = hours.get(day);
        if (!sampled) return { day, values: { peak: null, latest: null, devices: devices.get(day)?.get('') ?? null } };
        const byHour = [...sampled.entries()].sort(([a], [b]) => a.localeCompare(b));
        return {
          day,
          values: {
            peak: Math.max(...byHour.map(([, value]) => value)),
            latest: byHour.at(-1)![1],
            devices: devices.get(day)?.get('') ?? 0,
          },
        };
      });
    } else if (name === 'compliance') {
      series = [
        { key: 'done', label: 'Compliant' },
        { key: 'pending', label: 'Pending' },
        { key: 'failed', label: 'Failing' },
        { key: 'none', label: 'No policy' },
      ];
      points = sampledPoints(dayList, series, await range('compliance'));
    } else {
      const what = name === 'os' ? 'os' : 'model';
      current = await this.repository.current(what, fleets);
      const rows = await range(what);
      const ranked = current.length > 0 ? current.map((share) => share.key) : rankedKeys(rows);
      const top = ranked.slice(0, ranked.length > TOP_KEYS ? TOP_KEYS - 1 : TOP_KEYS);
      series = top.map((key) => ({ key, label: key }));
      const rest =
        ranked.length > top.length || [...rows.values()].some((keys) => [...keys.keys()].some((key) => !top.includes(key)));
      if (rest) series.push({ key: OTHER, label: 'Other' });
      points = sampledPoints(dayList, series, foldOthers(rows, top));
    }
    return {
      report: name,
      ...REPORTS[name],
      fleet_id: fleetId ?? null,
      days,
      from,
      to,
      time_zone: 'UTC',
      series,
      points,
      current,
      sampled_at: (await this.repository.cursor())?.sampled_at ?? null,
      sample_every_s: Math.round(this.sampleEveryMs / 1000),
    };
  }
}

/** The key of the line that sums the less common OS versions or models. */
const OTHER = '(other)';

/** Rows as day → key → value. */
function byDay(rows: FigureRow[]): Map<string, Map<string, number>> {
  const days = new Map<string, Map<string, number>>();
  for (const row of rows) {
    let keys = days.get(row.day);
    if (!keys) days.set(row.day, (keys = new Map()));
    keys.set(row.key, Number(row.value));
  }
  return days;
}

/** A sampled metric's points: null on a day without a sample, else 0 for a key the sample did not see. */
function sampledPoints(dayList: string[], series: ReportSeriesKey[], rows: Map<string, Map<string, number>>): ReportPoint[] {
  return dayList.map((day) => {
    const keys = rows.get(day);
    return { day, values: Object.fromEntries(series.map(({ key }) => [key, keys ? (keys.get(key) ?? 0) : null])) };
  });
}

/** Keys by their devices summed over the range, most first. */
function rankedKeys(rows: Map<string, Map<string, number>>): string[] {
  const totals = new Map<string, number>();
  for (const keys of rows.values()) for (const [key, value] of keys) totals.set(key, (totals.get(key) ?? 0) + value);
  return [...totals.entries()].sort(([a, x], [b, y]) => y - x || a.localeCompare(b)).map(([key]) => key);
}

/** Every key outside `top` added into one "other" key. */
function foldOthers(rows: Map<string, Map<string, number>>, top: string[]): Map<string, Map<string, number>> {
  const folded = new Map<string, Map<string, number>>();
  for (const [day, keys] of rows) {
    const out = new Map<string, number>();
    for (const [key, value] of keys) {
      const target = top.includes(key) ? key : OTHER;
      out.set(target, (out.get(target) ?? 0) + value);
    }
    folded.set(day, out);
  }
  return folded;
}
