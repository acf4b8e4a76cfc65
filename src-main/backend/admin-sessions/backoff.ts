import type { SignInRepository } from './sign-in-repository.ts';

/**
 * Failed sign-ins per key (an address, an account): `free` failures pass, then each further
 * failure makes the key wait twice as long as the last (`firstDelayMs`, doubled up to
 * `maxDelayMs`). While a key waits, its attempts are refused unchecked. A key with no failure for
 * `forgetAfterMs` starts again; a successful sign-in forgets its account's failures. The counts are
 * rows of the database (sign_in_failures), so they hold across every node of a cluster; forgotten
 * keys are swept (`sweep`).
 */
export interface BackoffOptions {
  free: number;
  firstDelayMs: number;
  maxDelayMs: number;
  forgetAfterMs: number;
}

/**
 * Ten failures pass, then 10 s, 20 s, 40 s … up to 15 minutes between attempts; forgotten after
 * six hours without a failure.
 */
export const SIGN_IN_BACKOFF: BackoffOptions = {
  free: 10,
  firstDelayMs: 10_000,
  maxDelayMs: 15 * 60_000,
  forgetAfterMs: 6 * 60 * 60_000,
};

const iso = (ms: number) => new Date(ms).toISOString();

export class Backoff {
  private readonly options: BackoffOptions;
  private readonly rows: SignInRepository;
  private readonly now: () => number;

  constructor(rows: SignInRepository, options: Partial<BackoffOptions> = {}, now: () => number = Date.now) {
    this.options = { ...SIGN_IN_BACKOFF, ...options };
    this.rows = rows;
    this.now = now;
  }

  /** Seconds `key` must still wait before an attempt is looked at; 0 when it may try now. */
  async wait(key: string): Promise<number> {
    return this.waitOfEither(key, key);
  }

  /** Seconds the longer waiting of two keys must still wait (one read); 0 when both may try now. */
  async waitOfEither(a: string, b: string): Promise<number> {
    const now = this.now();
    const until = await this.rows.latestUntil(a, b, iso(now));
    if (until === null) return 0;
    const left = Date.parse(until) - now;
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /** Counts a failure of `key`; the seconds it must now wait (0 while within its free failures). */
  async fail(key: string): Promise<number> {
    const now = this.now();
    const { free, firstDelayMs, maxDelayMs, forgetAfterMs } = this.options;
    const failures = await this.rows.fail(key, iso(now), iso(now - forgetAfterMs));
    if (failures < free) return 0;
    const delay = Math.min(maxDelayMs, firstDelayMs * 2 ** Math.min(30, failures - free));
    await this.rows.waitUntil(key, iso(now + delay));
    return this.wait(key);
  }

  /** How many failures `key` has to its name (forgotten ones not counted). */
  async failures(key: string): Promise<number> {
    const now = this.now();
    const row = await this.rows.failuresOf(key);
    if (!row) return 0;
    const forgotten = row.last_at < iso(now - this.options.forgetAfterMs) && row.until_at < iso(now);
    return forgotten ? 0 : row.failures;
  }

  /** Forgets `key`'s failures (its account signed in). */
  async reset(key: string): Promise<void> {
    await this.rows.reset(key);
  }

  /** Forgets the keys whose failures are forgotten anyway (every Backoff's: they share the table). */
  async sweep(): Promise<number> {
    const now = this.now();
    return this.rows.sweepFailures(iso(now), iso(now - this.options.forgetAfterMs));
  }
}
