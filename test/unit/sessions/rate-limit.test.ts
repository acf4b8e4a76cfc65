import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../../src-main/backend/sessions/rate-limit.ts';

describe('the initSession rate limiter', () => {
  it('allows the burst, then one request per refill interval, per key', () => {
    let now = 0;
    const limiter = new RateLimiter({ burst: 3, perMinute: 6, maxKeys: 100 }, () => now);
    expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 0]);
    expect(limiter.take('a')).toBe(10); // 6 a minute: one every 10 s
    expect(limiter.take('b')).toBe(0); // another key has its own bucket
    now = 10_000;
    expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBeGreaterThan(0);
  });

  it('holds at most maxKeys keys, forgetting the least recently used', () => {
    const limiter = new RateLimiter({ burst: 1, perMinute: 1, maxKeys: 2 }, () => 0);
    limiter.take('a');
    limiter.take('b');
    limiter.take('c'); // 'a' forgotten: it starts again with a full bucket
    expect(limiter.take('a')).toBe(0);
    expect(limiter.take('c')).toBeGreaterThan(0);
  });

  it('never limits with perMinute 0', () => {
    const limiter = new RateLimiter({ burst: 0, perMinute: 0, maxKeys: 1 });
    for (let i = 0; i < 100; i++) expect(limiter.take('a')).toBe(0);
  });
});

describe('RateLimiter.wait', () => {
  it('says what take would answer without taking anything', () => {
    let now = 0;
    const limiter = new RateLimiter({ burst: 2, perMinute: 6, maxKeys: 100 }, () => now);
    expect(limiter.wait('a')).toBe(0); // an unknown key has its whole burst
    limiter.take('a');
    limiter.take('a');
    expect(limiter.wait('a')).toBe(10);
    expect(limiter.wait('a')).toBe(10); // asking twice takes nothing
    now = 10_000;
    expect(limiter.wait('a')).toBe(0);
    expect(limiter.take('a')).toBe(0);
  });
});
