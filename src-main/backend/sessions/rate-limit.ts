/**
 * Token buckets keyed by a string (a user token, an address): `burst` requests at once, then
 * `perMinute` a minute. Memory is bounded: past `maxKeys`, the least recently used keys go.
 */
export interface RateOptions {
  burst: number;
  perMinute: number;
  maxKeys: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly options: RateOptions;
  private readonly now: () => number;
  private readonly buckets = new Map<string, Bucket>();

  constructor(options: RateOptions, now: () => number = Date.now) {
    this.options = options;
    this.now = now;
  }

  /** What `take` would answer, without taking anything: 0 when a request would be allowed. */
  wait(key: string): number {
    const { burst, perMinute } = this.options;
    if (perMinute <= 0) return 0;
    const bucket = this.buckets.get(key);
    if (!bucket) return 0;
    const tokens = Math.min(burst, bucket.tokens + ((this.now() - bucket.at) * perMinute) / 60_000);
    return tokens >= 1 ? 0 : Math.max(1, Math.ceil(((1 - tokens) * 60) / perMinute));
  }

  /** Takes one request from `key`'s bucket: 0 when allowed, else the seconds until one is. */
  take(key: string): number {
    const { burst, perMinute, maxKeys } = this.options;
    if (perMinute <= 0) return 0; // 0 = no limit
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) * perMinute) / 60_000);
    bucket.at = now;
    this.buckets.delete(key); // re-insert: the Map's order is least recently used first
    this.buckets.set(key, bucket);
    while (this.buckets.size > maxKeys) {
      const oldest = this.buckets.keys().next().value;
      if (oldest === undefined) break;
      this.buckets.delete(oldest);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / perMinute));
  }
}
