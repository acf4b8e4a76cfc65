import { hostname } from 'node:os';
import type { DutyLeaseRow, DutyRepository } from './duty-repository.ts';

// Duties: work that must happen on one node at a time (the sweepers, the alert evaluation, the
// reports sampler, republishing policies), whichever number of `serve` nodes share the database.
//
// Each duty has a lease in the database (table duty_leases): the node holding it does the work, and
// renews the lease every `renewEveryMs` (2 s) for `leaseMs` (8 s). A node that dies (kill -9, a
// machine lost, a network cut) stops renewing: its leases expire and another node takes each over at
// its next renewal round, within leaseMs + renewEveryMs of the last renewal (10 s at most). A node
// stopping cleanly releases its leases, so another takes over at its next round (2 s).
//
// Why leases rather than PostgreSQL advisory locks or row locks: a session advisory lock (or a row
// lock held by an open transaction) belongs to one database connection, and a pool hands
// connections out and takes them back: the lock would have to pin a connection of its own for the
// node's lifetime, and when that connection dies alone (a pool churned, a proxy in between, a
// network blip) the lock is gone without the node knowing, so two nodes run the work; a node frozen
// (a long GC, a paused VM) keeps its lock forever while doing nothing. A lease is a row with an
// expiry: it survives any connection, the node knows whether it still holds it (it renewed it in
// time, or it stops the work), and the same SQL runs on SQLite, where the one node always wins.
// Row locks with SKIP LOCKED are the right tool for queues (each email claimed by one worker: the
// mail and webhook workers), not for "one node runs this timer".
//
// The fence: each time a lease changes hands (or lapses and is taken again) its counter grows by
// one. A node renews only under the fence it won with, so a node that lost its lease (it froze past
// the expiry and another took over) cannot renew it: it learns it lost and stops.
//
// Whether a node is alive is not a lease: the node registry (cluster/nodes.ts: heartbeat, and on
// PostgreSQL its name's advisory lock) is the one source of truth (the jobs sweeper asks it).
//
// Times are computed here, on each node's clock, as ISO strings: the nodes' clocks must agree (NTP)
// to well under a second; a node deems its lease lost `renewEveryMs` + SKEW_MS before the expiry it
// wrote, so a clock that drifts by less than that never lets two nodes work at once.

export interface DutyTiming {
  /** How long a lease lasts after each renewal; default 8 s. */
  leaseMs: number;
  /** How often each lease is renewed (and each duty not held is tried); default 2 s. */
  renewEveryMs: number;
}

export const DEFAULT_DUTY_TIMING: DutyTiming = { leaseMs: 8_000, renewEveryMs: 2_000 };

/** Clock disagreement between nodes tolerated before a lease could be worked on twice. */
const SKEW_MS = 500;

/** What a duty does once its lease is won, and undoes once it is lost (or the node stops). */
export type DutyWork = () => unknown;

interface Duty {
  name: string;
  start: DutyWork;
  stop: DutyWork;
  /** The fence of the lease this node holds; 0 when it holds none. */
  fence: number;
  /** This node's own deadline for the lease (its clock): past it, the lease is deemed lost. */
  deadline: number;
  /** A renewal statement is in flight. */
  renewing: Promise<void> | null;
  /** The work has been started (and not stopped since). */
  working: boolean;
  /** Starts and stops, one after the other. */
  transitions: Promise<void>;
  /** Removed (unregistered or the node closing): never started again. */
  gone: boolean;
}

export interface DutiesOptions {
  repository: DutyRepository;
  /** This node's name (`serve --node-name`); default the machine's host name. */
  nodeName?: string | undefined;
  /**
   * The only node there can be (SQLite: the data dir is locked by one server): leases left by a
   * killed run are cleared at start rather than awaited.
   */
  sole?: boolean;
  timing?: Partial<DutyTiming> | undefined;
  /** The clock (tests move it to make a lease expire); default the real one. */
  now?: () => number;
  /** False: the rounds are only those `renewNow()` makes (tests drive them); default true, every `renewEveryMs`. */
  renewOnTimer?: boolean;
  /** Told of a duty's start or stop that threw (the duty is released and tried again at the next round). */
  onError?: (duty: string, error: unknown) => void;
}

export interface DutyHolding extends DutyLeaseRow {
  /** Whether the lease is still in force now (not expired). */
  live: boolean;
}

export class Duties {
  readonly nodeName: string;
  readonly timing: DutyTiming;
  private readonly repository: DutyRepository;
  private readonly sole: boolean;
  private readonly renewOnTimer: boolean;
  private readonly now: () => number;
  private readonly onError: (duty: string, error: unknown) => void;
  private readonly duties = new Map<string, Duty>();
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private closed = false;

  constructor(options: DutiesOptions) {
    this.repository = options.repository;
    this.nodeName = options.nodeName ?? hostname();
    this.sole = options.sole ?? false;
    this.renewOnTimer = options.renewOnTimer ?? true;
    this.timing = { ...DEFAULT_DUTY_TIMING, ...options.timing };
    if (!(this.timing.renewEveryMs > 0 && this.timing.leaseMs > this.timing.renewEveryMs * 2 + SKEW_MS))
      throw new Error(
        `A duty lease (${this.timing.leaseMs} ms) must last more than two renewals (${this.timing.renewEveryMs} ms each) and a bit`,
      );
    this.now = options.now ?? Date.now;
    this.onError = options.onError ?? (() => {});
  }

  /** Takes the leases it can now, then renews them (and tries the others) every `renewEveryMs`. */
  async start(): Promise<void> {
    if (this.started || this.closed) return;
    this.started = true;
    if (this.sole) await this.repository.clear();
    await this.renewNow();
    // The work of the leases won is started before this returns (on a single node: all of it).
    await Promise.all([...this.duties.values()].map((duty) => duty.transitions));
    if (!this.renewOnTimer) return;
    this.timer = setInterval(() => void this.renewNow(), this.timing.renewEveryMs);
    this.timer.unref();
  }

  /**
   * Runs `start` on this node once it wins the lease of `name` (at once on SQLite), and `stop`
   * once it loses it or the node stops; the work may be started again later. Returns a function
   * that stops the work (if running) and gives the lease up for good.
   */
  whileHeld(name: string, start: DutyWork, stop: DutyWork): () => Promise<void> {
    if (this.duties.has(name)) throw new Error(`The duty "${name}" is already registered`);
    const duty: Duty = {
      name,
      start,
      stop,
      fence: 0,
      deadline: 0,
      renewing: null,
      working: false,
      transitions: Promise.resolve(),
      gone: false,
    };
    this.duties.set(name, duty);
    if (this.started && !this.closed) void this.renew(duty);
    return () => this.remove(duty);
  }

  /** Whether this node holds the lease of `name` now (and may do its work). */
  holds(name: string): boolean {
    const duty = this.duties.get(name);
    return duty !== undefined && duty.fence > 0 && this.now() < duty.deadline;
  }

  /** The fence of the lease of `name` this node holds, or null: a token for work that must prove it is still the holder's. */
  fenceOf(name: string): number | null {
    return this.holds(name) ? this.duties.get(name)!.fence : null;
  }

  /** Every lease in the database (every node's), and whether each is in force. */
  async leases(): Promise<DutyHolding[]> {
    const now = new Date(this.now()).toISOString();
    return (await this.repository.list()).map((row: DutyLeaseRow) => ({ ...row, live: row.expires_at > now }));
  }

  /** One renewal round (the timer's work; tests call it after moving the clock). */
  async renewNow(): Promise<void> {
    await Promise.all([...this.duties.values()].map((duty) => this.renew(duty)));
  }

  /** Stops every duty's work, then releases the leases (another node takes them at its next round). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.all([...this.duties.values()].map((duty) => this.remove(duty)));
  }

  private async remove(duty: Duty): Promise<void> {
    if (this.duties.get(duty.name) === duty) this.duties.delete(duty.name);
    duty.gone = true;
    await duty.renewing;
    const fence = duty.fence;
    this.lose(duty);
    await duty.transitions;
    await this.release(duty.name, fence);
  }

  private renew(duty: Duty): Promise<void> {
    if (duty.renewing) {
      this.expireIfDue(duty);
      return duty.renewing;
    }
    const round = (async () => {
      if (duty.gone) return;
      const sentAt = this.now();
      let fence: number | null;
      try {
        fence = await this.repository.acquire(
          duty.name,
          this.nodeName,
          duty.fence,
          new Date(sentAt).toISOString(),
          new Date(sentAt + this.timing.leaseMs).toISOString(),
        );
      } catch {
        // The database did not answer: the lease is kept until its own deadline, then deemed lost.
        this.expireIfDue(duty);
        return;
      }
      if (duty.gone || this.closed) {
        if (fence !== null) await this.release(duty.name, fence);
        return;
      }
      if (fence === null) {
        this.lose(duty);
        return;
      }
      // Deemed lost a renewal and a bit before the expiry written: the next round (or a slow one) is not trusted.
      const deadline = sentAt + this.timing.leaseMs - this.timing.renewEveryMs - SKEW_MS;
      if (deadline <= this.now()) {
        // An answer that took longer than the lease can be trusted: not held (taken again, with a new fence, once it expires).
        this.lose(duty);
        return;
      }
      if (fence !== duty.fence) {
        // Won (or lapsed and taken again: the work of the lapsed lease stops first).
        this.lose(duty);
        duty.fence = fence;
        duty.deadline = deadline;
        this.win(duty);
      } else {
        duty.deadline = deadline;
      }
    })().finally(() => {
      duty.renewing = null;
    });
    duty.renewing = round;
    return round;
  }

  /** Past this node's deadline for the lease: lost, whatever the database would say. */
  private expireIfDue(duty: Duty): void {
    if (duty.fence > 0 && this.now() >= duty.deadline) this.lose(duty);
  }

  private win(duty: Duty): void {
    duty.transitions = duty.transitions.then(async () => {
      if (duty.working || duty.gone || duty.fence === 0) return;
      try {
        duty.working = true;
        await duty.start();
      } catch (error) {
        this.onError(duty.name, error);
        // Released, so another node (or this one, next round) tries again.
        const fence = duty.fence;
        duty.fence = 0;
        duty.deadline = 0;
        await this.stopWork(duty);
        await this.release(duty.name, fence);
      }
    });
  }

  /** Not held any more (the work stops; the fence is forgotten: a lease lost is never renewed). */
  private lose(duty: Duty): void {
    duty.fence = 0;
    duty.deadline = 0;
    duty.transitions = duty.transitions.then(() => this.stopWork(duty));
  }

  private async stopWork(duty: Duty): Promise<void> {
    if (!duty.working) return;
    duty.working = false;
    try {
      await duty.stop();
    } catch (error) {
      this.onError(duty.name, error);
    }
  }

  private async release(name: string, fence: number): Promise<void> {
    if (fence === 0) return;
    try {
      await this.repository.release(name, this.nodeName, fence, new Date(this.now()).toISOString());
    } catch {
      // The database is gone (closing): the lease expires by itself.
    }
  }
}
