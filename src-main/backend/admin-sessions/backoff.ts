/**
 * Failed sign-ins per key (an address, an account): `free` failures pass, then each further
 * failure makes the key wait twice as long as the last (`firstDelayMs`, doubled up to
 * `maxDelayMs`). While a key waits, its attempts are refused unchecked. A key with no failure for
 * `forgetAfterMs` starts again; a successful sign-in forgets its account's failures. Memory is
 * bounded: past `maxKeys`, the least recently failed keys go.
 */
export interface BackoffOptions {
  free: number;
  firstDelayMs: number;
  maxDelayMs: number;
  forgetAfterMs: number;
  maxKeys: number;
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
  maxKeys: 10_000,
};

interface Entry {
  failures: number;
  lastAt: number;
  until: number;
}

export class Backoff {
  private readonly options: BackoffOptions;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();

  constructor(options: Partial<BackoffOptions> = {}, now: () => number = Date.now) {
    this.options = { ...SIGN_IN_BACKOFF, ...options };
    this.now = now;
  }

  /** Seconds `key` must still wait before an attempt is looked at; 0 when it may try now. */
  wait(key: string): number {
    const entry = this.current(key, this.now());
    if (!entry) return 0;
    const left = entry.until - this.now();
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /** Counts a failure of `key`; the seconds it must now wait (0 while within its free failures). */
  fail(key: string): number {
    const now = this.now();
    const { free, firstDelayMs, maxDelayMs, maxKeys } = this.options;
    const entry = this.current(key, now) ?? { failures: 0, lastAt: now, until: 0 };
    entry.failures += 1;
    entry.lastAt = now;
    if (entry.failures >= free) {
      const delay = Math.min(maxDelayMs, firstDelayMs * 2 ** Math.min(30, entry.failures - free));
      entry.until = now + delay;
    }
    this.entries.delete(key); // re-inserted: the Map's order is least recently failed first
    this.entries.set(key, entry);
    while (this.entries.size > maxKeys) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return this.wait(key);
  }

  /** How many failures `key` has to its name (forgotten ones not counted). */
  failures(key: string): number {
    return this.current(key, this.now())?.failures ?? 0;
  }

  /** Forgets `key`'s failures (its account signed in). */
  reset(key: string): void {
    this.entries.delete(key);
  }

  private current(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && now - entry.lastAt > Math.max(this.options.forgetAfterMs, entry.until - entry.lastAt)) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }
}
