// The rate limiter's buckets are rows of the database (issue 23: a limit holds across nodes), one
// statement per hit. The same behaviour on both engines: a real SQLite file and a real PostgreSQL
// database, migrated as a server migrates them; and in one node's memory (MemoryRateBuckets, what
// a server on SQLite uses since issue 24: one server owns that database).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresDatabase } from '../../../src-main/backend/db/postgres-database.ts';
import type { Sql } from '../../../src-main/backend/db/sql.ts';
import { openSqliteSql } from '../../../src-main/backend/db/sqlite-sql.ts';
import { MemoryRateBuckets, RateLimiter, type RateBuckets } from '../../../src-main/backend/sessions/rate-limit.ts';
import { RateLimitRepository } from '../../../src-main/backend/sessions/rate-limit-repository.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const engines: { name: string; open: () => Promise<Sql>; close: () => Promise<void> }[] = [];
let dir: string;
let database: TestDatabase | undefined;
const opened: Sql[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rate-limit-'));
});
afterAll(async () => {
  for (const sql of opened) await sql.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

engines.push(
  {
    name: 'sqlite',
    open: async () => openSqliteSql(join(dir, `limits-${opened.length}.sqlite`)),
    close: async () => {},
  },
  {
    name: 'postgres',
    open: async () => {
      database ??= await createTestDatabase('rate_limit');
      return openPostgresDatabase(database.url);
    },
    close: async () => {},
  },
);

const stores: { name: string; open: () => Promise<{ rows: RateBuckets; keys: (prefix: string) => Promise<string[]> }> }[] = [
  ...engines.map((engine) => ({
    name: engine.name,
    open: async () => {
      const sql = await engine.open();
      opened.push(sql);
      return {
        rows: new RateLimitRepository(sql),
        keys: async (prefix: string) =>
          (await sql.all<{ key: string }>(`SELECT key FROM rate_limits WHERE key LIKE ?`, [`${prefix}%`])).map((r) => r.key),
      };
    },
  })),
  {
    name: "one node's memory",
    open: async () => {
      const rows = new MemoryRateBuckets();
      return { rows, keys: async (prefix: string) => rows.keys().filter((key) => key.startsWith(prefix)) };
    },
  },
];

describe.each(stores)('the rate limiter on $name', (store) => {
  let rows: RateBuckets;
  let keysOf: (prefix: string) => Promise<string[]>;
  beforeAll(async () => {
    ({ rows, keys: keysOf } = await store.open());
  });

  it('allows the burst, then one request per refill interval, per key and per scope', async () => {
    let now = 1_000_000;
    const limiter = new RateLimiter('a-scope', { burst: 3, perMinute: 6 }, rows, () => now);
    expect([await limiter.take('a'), await limiter.take('a'), await limiter.take('a')]).toEqual([0, 0, 0]);
    expect(await limiter.take('a')).toBe(10); // 6 a minute: one every 10 s
    expect(await limiter.take('b')).toBe(0); // another key has its own bucket
    // Another limit's key of the same name has its own bucket too.
    expect(await new RateLimiter('another', { burst: 1, perMinute: 6 }, rows, () => now).take('a')).toBe(0);
    now += 10_000;
    expect(await limiter.take('a')).toBe(0);
    expect(await limiter.take('a')).toBeGreaterThan(0);
  });

  it('says what take would answer without taking anything', async () => {
    let now = 2_000_000;
    const limiter = new RateLimiter('wait', { burst: 2, perMinute: 6 }, rows, () => now);
    expect(await limiter.wait('a')).toBe(0); // an unknown key has its whole burst
    await limiter.take('a');
    await limiter.take('a');
    expect(await limiter.wait('a')).toBe(10);
    expect(await limiter.wait('a')).toBe(10); // asking twice takes nothing
    now += 10_000;
    expect(await limiter.wait('a')).toBe(0);
    expect(await limiter.take('a')).toBe(0);
  });

  it('never limits with perMinute 0', async () => {
    const limiter = new RateLimiter('none', { burst: 0, perMinute: 0 }, rows);
    for (let i = 0; i < 50; i++) expect(await limiter.take('a')).toBe(0);
  });

  it('holds for requests that arrive at once: exactly the burst passes', async () => {
    const now = 3_000_000;
    const limiter = new RateLimiter('crowd', { burst: 10, perMinute: 10 }, rows, () => now);
    const waits = await Promise.all(Array.from({ length: 40 }, () => limiter.take('one key')));
    expect(waits.filter((w) => w === 0)).toHaveLength(10);
  });

  it('keeps no credential in the table, and sweeps the buckets full again', async () => {
    let now = 100; // before every other test's buckets: those stay
    const limiter = new RateLimiter('swept', { burst: 2, perMinute: 60 }, rows, () => now);
    await limiter.take('secret-user-token');
    await limiter.take('secret-user-token');
    const keys = await keysOf('swept:');
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toContain('secret');
    expect(await rows.sweep(now)).toBe(0); // still spent
    now += 2_000; // refilled: 1 a second
    expect(await rows.sweep(now)).toBe(1);
    expect(await keysOf('swept:')).toHaveLength(0);
    expect(await limiter.take('secret-user-token')).toBe(0);
  });
});

describe("one node's memory under many distinct keys", () => {
  it('stays bounded when every request comes from a new address, without waiting for the sweep', async () => {
    const rows = new MemoryRateBuckets();
    let now = 1_000_000;
    // 10 a minute: a bucket is full again 6 s after its only hit. One new key every 10 ms over 300 s:
    // about 600 buckets are not full at any moment; the hourly sweep never runs here.
    const limiter = new RateLimiter('rotating', { burst: 1, perMinute: 10 }, rows, () => now);
    let largest = 0;
    for (let i = 0; i < 30_000; i++) {
      expect(await limiter.take(`203.0.${i >> 8}.${i & 255}:${i}`)).toBe(0);
      if (i % 100 === 0) largest = Math.max(largest, rows.keys().length);
      now += 10;
    }
    expect(largest).toBeLessThanOrEqual(2_000);
    // Pruning changed no answer: a key still in its window is still limited.
    expect(await limiter.take('203.0.0.0:again')).toBe(0);
    expect(await limiter.take('203.0.0.0:again')).toBeGreaterThan(0);
  });
});
