import { createHash } from 'node:crypto';
import type { RateHit } from './rate-limit-repository.ts';

/**
 * Where the buckets are kept: rows of the database (rate-limit-repository.ts) when several nodes
 * may share it (PostgreSQL), so that a limit holds across every node of a cluster (10 a minute is
 * 10 in all, not 10 per node); the process's memory (MemoryRateBuckets) when one node owns the
 * database (SQLite: the data dir is locked by one server). The same bucket, the same answers.
 */
export interface RateBuckets {
  hit(key: string, nowMs: number, intervalMs: number, windowMs: number): Promise<RateHit>;
  tat(key: string): Promise<number | undefined>;
  sweep(nowMs: number): Promise<number>;
}

/** Hits between two prunings of MemoryRateBuckets at least. */
const PRUNE_EVERY = 1_000;

/**
 * The buckets of one node's limits in its memory: GCRA as RateLimitRepository's statement computes
 * it (the bucket's theoretical arrival time per key). On SQLite, where one server owns the database,
 * this saves every initSession and every enrollment a write commit of its own (issue 24); the buckets
 * start full again when the server restarts, as they did before issue 23. Swept like the rows.
 */
export class MemoryRateBuckets implements RateBuckets {
  private readonly tats = new Map<string, number>();
  /** Hits since the buckets full again were last pruned, and how many the next pruning waits for (see `hit`). */
  private hitsSincePrune = 0;
  private pruneAfter = PRUNE_EVERY;

  hit(key: string, nowMs: number, intervalMs: number, windowMs: number): Promise<RateHit> {
    // A caller rotating keys (addresses) would fill the map until the hourly sweep: buckets full
    // again (tat <= now, answered as a new key would be) are pruned every 1,000 hits, or every as
    // many hits as the map kept at the last pruning when it kept more (each hit pays O(1) for the
    // scans, amortized): the map holds at most the buckets not full again plus as many.
    if (++this.hitsSincePrune >= this.pruneAfter) {
      this.prune(nowMs);
      this.hitsSincePrune = 0;
      this.pruneAfter = Math.max(PRUNE_EVERY, this.tats.size);
    }
    const tat = this.tats.get(key);
    if (tat === undefined) {
      const allowed = intervalMs <= windowMs;
      const first = allowed ? nowMs + intervalMs : nowMs;
      this.tats.set(key, first);
      return Promise.resolve({ allowed, tatMs: first });
    }
    const next = Math.max(tat, nowMs) + intervalMs;
    if (next > nowMs + windowMs) return Promise.resolve({ allowed: false, tatMs: tat });
    this.tats.set(key, next);
    return Promise.resolve({ allowed: true, tatMs: next });
  }

  tat(key: string): Promise<number | undefined> {
    return Promise.resolve(this.tats.get(key));
  }

  sweep(nowMs: number): Promise<number> {
    return Promise.resolve(this.prune(nowMs));
  }

  /** Forgets the buckets full again (tat <= now); returns how many. */
  private prune(nowMs: number): number {
    let swept = 0;
    for (const [key, tat] of this.tats) {
      if (tat <= nowMs) {
        this.tats.delete(key);
        swept++;
      }
    }
    return swept;
  }

  /** The keys held (hashed, as in the table): for tests. */
  keys(): string[] {
    return [...this.tats.keys()];
  }
}

/**
 * Rate limits keyed by a string (a user token, an address, a session): `burst` requests at once,
 * then `perMinute` a minute, in buckets kept by a RateBuckets (the database's rows or one node's
 * memory). Each request costs one hit; buckets full again are swept (`sweep`).
 */
export interface RateOptions {
  burst: number;
  perMinute: number;
}

export class RateLimiter {
  private readonly scope: string;
  private readonly options: RateOptions;
  private readonly rows: RateBuckets;
  private readonly now: () => number;

  /**
   * `scope` names the limit (its keys are apart from every other limit's); keys are kept hashed, as
   * some are credentials (a user token, a session token).
   */
  constructor(scope: string, options: RateOptions, rows: RateBuckets, now: () => number = Date.now) {
    this.scope = scope;
    this.options = options;
    this.rows = rows;
    this.now = now;
  }

  /** Milliseconds between two requests once the burst is spent, and the burst as a time. */
  private timing(): { interval: number; window: number } {
    const { burst, perMinute } = this.options;
    const interval = Math.max(1, Math.round(60_000 / perMinute));
    return { interval, window: Math.max(0, Math.floor(burst)) * interval };
  }

  private keyOf(key: string): string {
    return `${this.scope}:${createHash('sha256').update(key).digest('base64url').slice(0, 32)}`;
  }

  /** What `take` would answer, without taking anything: 0 when a request would be allowed. */
  async wait(key: string): Promise<number> {
    if (this.options.perMinute <= 0) return 0;
    const tat = await this.rows.tat(this.keyOf(key));
    if (tat === undefined) return 0;
    return this.secondsUntilAllowed(tat, this.now());
  }

  /** Takes one request from `key`'s bucket: 0 when allowed, else the seconds until one is. */
  async take(key: string): Promise<number> {
    if (this.options.perMinute <= 0) return 0; // 0 = no limit
    const now = this.now();
    const { interval, window } = this.timing();
    const hit = await this.rows.hit(this.keyOf(key), now, interval, window);
    return hit.allowed ? 0 : Math.max(1, this.secondsUntilAllowed(hit.tatMs, now));
  }

  /** 0 when a request at `now` would pass a bucket at `tat`, else the seconds until one would. */
  private secondsUntilAllowed(tat: number, now: number): number {
    const { interval, window } = this.timing();
    const ms = Math.max(tat, now) + interval - window - now;
    return ms <= 0 ? 0 : Math.max(1, Math.ceil(ms / 1000));
  }
}
