/**
 * Slows down guessing, per key (the broker keys by login and address): after `freeFailures`
 * refused attempts, the next waits `baseDelayMs`, doubling per failure up to `maxDelayMs`. A
 * success or `forgetAfterMs` without failures clears the key. Bounded in memory.
 */
export interface ThrottleOptions {
  freeFailures: number;
  /**
   * Refused logins from one address, whatever the login, before its further refusals are slowed
   * down too (a scan of many logins); a correct password is never slowed by this count.
   */
  freeFailuresPerAddress: number;
  baseDelayMs: number;
  maxDelayMs: number;
  forgetAfterMs: number;
  maxAddresses: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = {
  freeFailures: 5,
  freeFailuresPerAddress: 50,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
  forgetAfterMs: 15 * 60_000,
  maxAddresses: 10_000,
};

interface Entry {
  failures: number;
  last: number;
}

export class FailureThrottle {
  private readonly options: ThrottleOptions;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();

  private readonly freeFailures: number;

  constructor(options: Partial<ThrottleOptions> = {}, now: () => number = Date.now, freeFailures?: number) {
    this.options = { ...DEFAULT_THROTTLE, ...options };
    this.now = now;
    this.freeFailures = freeFailures ?? this.options.freeFailures;
  }

  /** The first step: the longest a correct password is ever kept waiting. */
  get firstStepMs(): number {
    return this.options.baseDelayMs;
  }

  /**
   * How long the next attempt under `key` waits for its answer (the embedded broker holds it that
   * long). `freeFailures` overrides the constructor's for this question.
   */
  delayFor(key: string, freeFailures = this.freeFailures): number {
    const failures = this.current(key)?.failures ?? 0;
    const over = failures - Math.max(freeFailures, 1);
    if (over < 0) return 0;
    return Math.min(this.options.baseDelayMs * 2 ** Math.min(over, 30), this.options.maxDelayMs);
  }

  /**
   * How much longer `key` must wait before its next attempt may be checked: 0 when it is not
   * throttled or its last failure is `delayFor` old (the RabbitMQ auth endpoints refuse an attempt
   * unchecked, at once, while this is above 0, and never hold an answer).
   */
  waitLeft(key: string, freeFailures = this.freeFailures): number {
    const delay = this.delayFor(key, freeFailures);
    if (delay === 0) return 0;
    return Math.max(0, (this.current(key)?.last ?? 0) + delay - this.now());
  }

  /** Records a refused login; returns how many in a row this key has now. */
  fail(key: string): number {
    const entry = this.current(key) ?? { failures: 0, last: 0 };
    entry.failures += 1;
    entry.last = this.now();
    this.entries.delete(key); // re-insert: the Map's order is least recently failed first
    this.entries.set(key, entry);
    while (this.entries.size > this.options.maxAddresses) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return entry.failures;
  }

  succeed(key: string): void {
    this.entries.delete(key);
  }

  /** True once this key is being slowed down. */
  isThrottled(key: string): boolean {
    return this.delayFor(key) > 0;
  }

  private current(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && this.now() - entry.last > this.options.forgetAfterMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }
}
