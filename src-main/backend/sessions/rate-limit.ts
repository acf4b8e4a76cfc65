import { createHash } from 'node:crypto';
import type { RateLimitRepository } from './rate-limit-repository.ts';

/**
 * Rate limits keyed by a string (a user token, an address, a session): `burst` requests at once,
 * then `perMinute` a minute. The buckets are rows of the database (rate-limit-repository.ts), so a
 * limit holds across every node of a cluster: 10 a minute is 10 in all, not 10 per node. Each
 * request costs one statement; buckets full again are swept (`sweep`).
 */
export interface RateOptions {
  burst: number;
  perMinute: number;
}

export class RateLimiter {
  private readonly scope: string;
  private readonly options: RateOptions;
  private readonly rows: RateLimitRepository;
  private readonly now: () => number;

  /**
   * `scope` names the limit (its keys are apart from every other limit's); keys are kept hashed, as
   * some are credentials (a user token, a session token).
   */
  constructor(scope: string, options: RateOptions, rows: RateLimitRepository, now: () => number = Date.now) {
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
