// Duty leases (src-main/backend/cluster/duties.ts) on both engines, several nodes on one database:
// each a Duties of its own over a connection of its own (PostgreSQL: a pool each, as separate
// processes have). The nodes share a clock the test moves, and renew when the test says (their
// timers are set far beyond the test), so a node "dies" by no longer renewing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqlDutyRepository, type DutyRepository } from '../../../src-main/backend/cluster/duty-repository.ts';
import { Duties, type DutiesOptions } from '../../../src-main/backend/cluster/duties.ts';
import { openDatabase } from '../../../src-main/backend/db/database.ts';
import { openPostgresDatabase } from '../../../src-main/backend/db/postgres-database.ts';
import type { Sql } from '../../../src-main/backend/db/sql.ts';
import { SqliteSql } from '../../../src-main/backend/db/sqlite-sql.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const LEASE = 8_000;

interface Engine {
  name: 'sqlite' | 'postgres';
  /** A fresh database: a function opening one more connection to it. */
  fresh(): Promise<() => Promise<Sql>>;
  cleanup(): Promise<void>;
}

const sqlite: Engine = (() => {
  const dirs: string[] = [];
  return {
    name: 'sqlite',
    fresh: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'mdm-duties-'));
      dirs.push(dir);
      return async () => new SqliteSql(openDatabase(join(dir, 'mdm-console.sqlite')));
    },
    cleanup: async () => {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
})();

const postgres: Engine = (() => {
  const databases: TestDatabase[] = [];
  return {
    name: 'postgres',
    fresh: async () => {
      const database = await createTestDatabase('duties');
      databases.push(database);
      return () => openPostgresDatabase(database.url);
    },
    cleanup: async () => {
      for (const database of databases) await database.drop();
    },
  };
})();

/** What a node's duty did: its starts and stops, in order. */
class Log {
  readonly entries: string[] = [];
  working = new Set<string>();
  work(node: string, duty: string) {
    return {
      start: () => {
        this.entries.push(`${node} start ${duty}`);
        this.working.add(`${node} ${duty}`);
      },
      stop: () => {
        this.entries.push(`${node} stop ${duty}`);
        this.working.delete(`${node} ${duty}`);
      },
    };
  }
  /** The nodes working on `duty` now. */
  on(duty: string): string[] {
    return [...this.working].filter((entry) => entry.endsWith(` ${duty}`)).map((entry) => entry.split(' ')[0]!);
  }
}

describe.each([sqlite, postgres])('duty leases on $name', (engine) => {
  let connect: () => Promise<Sql>;
  let clock: number;
  const open: Sql[] = [];
  const nodes: Duties[] = [];
  let log: Log;

  beforeEach(async () => {
    connect = await engine.fresh();
    clock = Date.parse('2026-11-26T12:00:00.000Z');
    log = new Log();
  });
  afterEach(async () => {
    for (const node of nodes.splice(0)) await node.close();
    for (const sql of open.splice(0)) await sql.close();
  });
  afterAll(() => engine.cleanup());

  async function node(name: string, options: Partial<DutiesOptions> = {}): Promise<{ duties: Duties; sql: Sql }> {
    const sql = await connect();
    open.push(sql);
    const duties = new Duties({
      repository: new SqlDutyRepository(sql),
      nodeName: name,
      timing: { leaseMs: LEASE, renewEveryMs: 2_000 },
      now: () => clock,
      renewOnTimer: false, // the rounds are the test's calls
      ...options,
    });
    nodes.push(duties);
    return { duties, sql };
  }

  /** Waits for the starts and stops the last renewals queued. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  it('one node of three holds a duty and works on it; the others wait', async () => {
    const all = await Promise.all(['a', 'b', 'c'].map((name) => node(name)));
    for (const [i, { duties }] of all.entries()) {
      const work = log.work('abc'[i]!, 'sweep');
      duties.whileHeld('sweep', work.start, work.stop);
    }
    await Promise.all(all.map(({ duties }) => duties.start()));
    await Promise.all(all.map(({ duties }) => duties.renewNow()));
    await settle();
    expect(log.on('sweep')).toHaveLength(1);
    expect(all.filter(({ duties }) => duties.holds('sweep'))).toHaveLength(1);
    // Renewals keep it where it is.
    for (let round = 0; round < 5; round++) {
      clock += 2_000;
      await Promise.all(all.map(({ duties }) => duties.renewNow()));
    }
    await settle();
    expect(log.entries).toHaveLength(1);
  });

  it('a node stopping cleanly gives its duty up: another takes it at its next round', async () => {
    const a = await node('a');
    const b = await node('b');
    a.duties.whileHeld('sweep', log.work('a', 'sweep').start, log.work('a', 'sweep').stop);
    b.duties.whileHeld('sweep', log.work('b', 'sweep').start, log.work('b', 'sweep').stop);
    await a.duties.start();
    await b.duties.start();
    await settle();
    expect(log.on('sweep')).toEqual(['a']);
    await a.duties.close();
    expect(log.on('sweep')).toEqual([]);
    await b.duties.renewNow(); // no time has passed: the lease was released, not left to expire
    await settle();
    expect(log.on('sweep')).toEqual(['b']);
    expect(log.entries).toEqual(['a start sweep', 'a stop sweep', 'b start sweep']);
  });

  it('a node that stops renewing (killed) loses its duty once the lease expires, not before', async () => {
    const a = await node('a');
    const b = await node('b');
    a.duties.whileHeld('sweep', log.work('a', 'sweep').start, log.work('a', 'sweep').stop);
    b.duties.whileHeld('sweep', log.work('b', 'sweep').start, log.work('b', 'sweep').stop);
    await a.duties.start();
    await b.duties.start();
    // a dies: it renews no more. Until its lease expires, b may not take the duty.
    clock += LEASE - 1;
    await b.duties.renewNow();
    await settle();
    expect(log.on('sweep')).toEqual(['a']);
    expect(b.duties.holds('sweep')).toBe(false);
    clock += 1;
    await b.duties.renewNow();
    await settle();
    expect(b.duties.holds('sweep')).toBe(true);
    expect(log.entries.at(-1)).toBe('b start sweep');
  });

  it('fencing: a node that lost its lease cannot renew it; it learns it lost and stops its work', async () => {
    const a = await node('a');
    const b = await node('b');
    a.duties.whileHeld('sweep', log.work('a', 'sweep').start, log.work('a', 'sweep').stop);
    b.duties.whileHeld('sweep', log.work('b', 'sweep').start, log.work('b', 'sweep').stop);
    await a.duties.start();
    await b.duties.start();
    const fenceA = a.duties.fenceOf('sweep');
    expect(fenceA).toBe(1);
    // a freezes past its lease (a long pause, a cut network); b takes over.
    clock += LEASE + 1;
    await b.duties.renewNow();
    await settle();
    expect(b.duties.fenceOf('sweep')).toBe(2);
    // a wakes: by its own clock the lease is gone (it deems it lost before it expires)...
    expect(a.duties.holds('sweep')).toBe(false);
    // ...and the database refuses its renewal under the old fence, even with b's lease about to expire.
    const repository = new SqlDutyRepository(a.sql);
    const iso = (ms: number) => new Date(ms).toISOString();
    expect(await repository.acquire('sweep', 'a', fenceA!, iso(clock), iso(clock + LEASE))).toBeNull();
    await a.duties.renewNow();
    await settle();
    expect(log.on('sweep')).toEqual(['b']);
    expect(log.entries).toEqual(['a start sweep', 'b start sweep', 'a stop sweep']);
    const lease = (await b.duties.leases()).find((row) => row.duty === 'sweep')!;
    expect(lease).toMatchObject({ holder: 'b', fence: 2, live: true });
    // Nor can a release what is now b's.
    expect(await repository.release('sweep', 'a', fenceA!, iso(clock))).toBe(false);
    expect(b.duties.holds('sweep')).toBe(true);
  });

  it('a lapsed lease taken again by its own node gets a new fence, and its work restarts', async () => {
    const a = await node('a');
    a.duties.whileHeld('sweep', log.work('a', 'sweep').start, log.work('a', 'sweep').stop);
    await a.duties.start();
    await settle();
    clock += LEASE + 1; // nobody took it meanwhile
    await a.duties.renewNow();
    await settle();
    expect(a.duties.fenceOf('sweep')).toBe(2);
    expect(log.entries).toEqual(['a start sweep', 'a stop sweep', 'a start sweep']);
  });

  it('a renewal answered after its lease would have run out is not trusted: the work stops', async () => {
    const sql = await connect();
    open.push(sql);
    const real = new SqlDutyRepository(sql);
    let gate: Promise<void> | null = null;
    const slow: DutyRepository = {
      acquire: async (...args) => {
        await gate;
        return real.acquire(...args);
      },
      release: (...args) => real.release(...args),
      list: () => real.list(),
      clear: () => real.clear(),
    };
    const a = new Duties({
      repository: slow,
      nodeName: 'a',
      timing: { leaseMs: LEASE, renewEveryMs: 2_000 },
      now: () => clock,
      renewOnTimer: false,
    });
    nodes.push(a);
    a.whileHeld('sweep', log.work('a', 'sweep').start, log.work('a', 'sweep').stop);
    await a.start();
    await settle();
    expect(log.on('sweep')).toEqual(['a']);
    // The database answers the next renewal only after the lease it asked for has run out.
    let answer!: () => void;
    gate = new Promise((resolve) => (answer = resolve));
    const round = a.renewNow();
    clock += LEASE + 1;
    answer();
    await round;
    await settle();
    expect(a.holds('sweep')).toBe(false);
    expect(log.on('sweep')).toEqual([]);
  });

  it('nodes racing for an expired lease: exactly one wins', async () => {
    const all = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((name) => node(name)));
    for (const [i, { duties }] of all.entries()) {
      const work = log.work('abcde'[i]!, 'race');
      duties.whileHeld('race', work.start, work.stop);
    }
    for (let round = 0; round < 10; round++) {
      clock += LEASE + 1; // whoever holds it "died" last round: it is free again
      await Promise.all(all.map(({ duties }) => duties.renewNow()));
      await settle();
      expect(
        all.filter(({ duties }) => duties.holds('race')),
        `round ${round}`,
      ).toHaveLength(1);
    }
    const lease = (await all[0]!.duties.leases()).find((row) => row.duty === 'race')!;
    expect(lease.fence).toBe(10);
  });

  it('a duty whose start throws is given up and tried again at the next round', async () => {
    const errors: string[] = [];
    const a = await node('a', { onError: (duty, error) => errors.push(`${duty}: ${(error as Error).message}`) });
    let attempts = 0;
    a.duties.whileHeld(
      'flaky',
      () => {
        if (++attempts === 1) throw new Error('first start fails');
      },
      () => {},
    );
    await a.duties.start();
    await settle();
    expect(errors).toEqual(['flaky: first start fails']);
    expect(a.duties.holds('flaky')).toBe(false);
    await a.duties.renewNow();
    await settle();
    expect(attempts).toBe(2);
    expect(a.duties.holds('flaky')).toBe(true);
  });

  it('the sole node (SQLite) clears the leases a killed run left, rather than waiting for them', async () => {
    const killed = await node('same-host');
    killed.duties.whileHeld('sweep', log.work('killed', 'sweep').start, log.work('killed', 'sweep').stop);
    await killed.duties.start();
    // Killed: never closed, its lease stays in force. The next run on this data dir takes over at once.
    nodes.splice(nodes.indexOf(killed.duties), 1);
    const next = await node('same-host', { sole: true });
    next.duties.whileHeld('sweep', log.work('next', 'sweep').start, log.work('next', 'sweep').stop);
    await next.duties.start();
    await settle();
    expect(log.on('sweep')).toContain('next');
    expect(next.duties.holds('sweep')).toBe(true);
    await killed.duties.close(); // (its release finds the lease no longer its own)
    expect(next.duties.holds('sweep')).toBe(true);
  });
});
