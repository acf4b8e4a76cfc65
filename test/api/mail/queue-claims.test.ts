// The mail queues' claims (mail/queue-repository.ts), on both engines: each row is claimed by one
// worker however many claim at once, a live claim is never taken, an expired one is, and the
// outcome of a claim taken over since is not written (the attempt is the fence).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src-main/backend/db/database.ts';
import { openPostgresDatabase } from '../../../src-main/backend/db/postgres-database.ts';
import type { Sql } from '../../../src-main/backend/db/sql.ts';
import { SqliteSql } from '../../../src-main/backend/db/sqlite-sql.ts';
import { SqliteNotificationRepository } from '../../../src-main/backend/mail/notification-repository.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

interface Engine {
  name: string;
  /** `n` connections (PostgreSQL: pools; SQLite: connections to one file) to one fresh, migrated database. */
  open(n: number): Promise<Sql[]>;
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const engines: Engine[] = [
  {
    name: 'sqlite',
    open: async (n) => {
      const dir = mkdtempSync(join(tmpdir(), 'mdm-claims-'));
      const file = join(dir, 'mdm-console.sqlite');
      const connections = Array.from({ length: n }, () => {
        const db = openDatabase(file);
        db.pragma('busy_timeout = 5000');
        return new SqliteSql(db);
      });
      cleanups.push(async () => {
        for (const sql of connections) await sql.close();
        rmSync(dir, { recursive: true, force: true });
      });
      return connections;
    },
  },
  {
    name: 'postgres',
    open: async (n) => {
      const database: TestDatabase = await createTestDatabase('claims');
      const connections: Sql[] = [];
      for (let i = 0; i < n; i++) connections.push(await openPostgresDatabase(database.url));
      cleanups.push(async () => {
        for (const sql of connections) await sql.close();
        await database.drop();
      });
      return connections;
    },
  },
];

describe.each(engines)('mail queue claims on $name', (engine) => {
  it('three workers claiming at once: each of 150 rows claimed exactly once', async () => {
    const connections = await engine.open(3);
    const queues = connections.map((sql) => new SqliteNotificationRepository(sql));
    for (let i = 0; i < 150; i++) await queues[0]!.queue([`to${i}@example.com`], `subject ${i}`, 'body');
    const claimed: { id: number; node: string }[] = [];
    // Each worker keeps five claims going at once until the queue is empty.
    await Promise.all(
      queues.map((queue, w) =>
        Promise.all(
          Array.from({ length: 5 }, async () => {
            for (;;) {
              const row = await queue.claim(`node-${w}`, 60_000);
              if (!row) return;
              claimed.push({ id: row.id, node: row.claimed_by! });
            }
          }),
        ),
      ),
    );
    const ids = claimed.map((c) => c.id);
    expect(new Set(ids).size, 'claimed twice').toBe(ids.length);
    expect(ids).toHaveLength(150);
    expect(new Set(claimed.map((c) => c.node)).size).toBeGreaterThan(1);
  }, 120_000);

  it('a live claim is kept; an expired one is taken over, and the late outcome of the first changes nothing', async () => {
    const [sql] = await engine.open(1);
    const queue = new SqliteNotificationRepository(sql!);
    const id = await queue.queue(['late@example.com'], 'late', 'body');

    const first = await queue.claim('node-a', 60_000);
    expect(first).toMatchObject({ id, state: 'sending', attempts: 1, claimed_by: 'node-a' });
    expect(await queue.claim('node-b', 60_000)).toBeUndefined();
    // Renewed while the send goes on: still not due for anyone.
    expect(await queue.extend('node-a', [id], 60_000)).toBe(1);
    expect(await queue.claim('node-b', 60_000)).toBeUndefined();

    // node-a stops renewing (it died, or lost the database): its claim runs out and node-b takes the row.
    await sql!.run(`UPDATE notification_mails SET claimed_until = ? WHERE id = ?`, [new Date(Date.now() - 1).toISOString(), id]);
    const second = await queue.claim('node-b', 60_000);
    expect(second).toMatchObject({ id, state: 'sending', attempts: 2, claimed_by: 'node-b' });

    // What node-a does with its old claim changes nothing.
    const stale = { node: 'node-a', attempts: 1 };
    expect(await queue.extend('node-a', [id], 60_000)).toBe(0);
    expect(await queue.finish(id, stale, { state: 'sent', response: '250 late' })).toBe(false);
    expect(await queue.scheduleRetry(id, stale, { error: 'late', response: null, retryAt: new Date(Date.now() + 60_000) })).toBe(
      false,
    );
    await queue.requeue(id, stale);
    expect(await queue.claim('node-c', 60_000)).toBeUndefined();

    // node-b's outcome is written, once.
    const held = { node: 'node-b', attempts: 2 };
    expect(await queue.finish(id, held, { state: 'sent', response: '250 ok' })).toBe(true);
    expect(await queue.finish(id, held, { state: 'failed', error: 'again' })).toBe(false);
    const row = await sql!.get<{ state: string; claimed_by: string; response: string }>(
      `SELECT state, claimed_by, response FROM notification_mails WHERE id = ?`,
      [id],
    );
    expect(row).toEqual({ state: 'sent', claimed_by: 'node-b', response: '250 ok' });
  });

  it('at start, a node queues again what its previous run left sending, and only that', async () => {
    const [sql] = await engine.open(1);
    const queue = new SqliteNotificationRepository(sql!);
    const mine = await queue.queue(['mine@example.com'], 'mine', 'body');
    const theirs = await queue.queue(['theirs@example.com'], 'theirs', 'body');
    expect((await queue.claim('node-a', 60_000))!.id).toBe(mine);
    expect((await queue.claim('node-b', 60_000))!.id).toBe(theirs);
    expect(await queue.requeueInterrupted('node-a')).toBe(1);
    // node-a's row is due again at once; node-b's stays node-b's while its claim lives.
    expect((await queue.claim('node-c', 60_000))!.id).toBe(mine);
    expect(await queue.claim('node-c', 60_000)).toBeUndefined();
  });
});
