import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/smtp.ts';

/**
 * Counts SQL statements executed: every statement the backend prepares shares one prototype,
 * whose run/get/all/iterate are wrapped while counting.
 */
function statementCounter() {
  const methods = ['run', 'get', 'all', 'iterate'] as const;
  const originalPrepare = Database.prototype.prepare;
  const restores: (() => void)[] = [() => (Database.prototype.prepare = originalPrepare)];
  let counting = false;
  let executed = 0;
  let patched = false;
  Database.prototype.prepare = function prepare(this: Database.Database, source: string) {
    const statement = originalPrepare.call(this, source);
    if (!patched) {
      patched = true;
      const proto = Object.getPrototypeOf(statement) as Record<string, (...args: unknown[]) => unknown>;
      for (const name of methods) {
        const original = proto[name]!;
        proto[name] = function counted(this: unknown, ...args: unknown[]) {
          if (counting) executed++;
          return original.apply(this, args);
        };
        restores.push(() => (proto[name] = original));
      }
    }
    return statement;
  } as typeof originalPrepare;
  return {
    async count(work: () => Promise<unknown>): Promise<number> {
      executed = 0;
      counting = true;
      try {
        await work();
      } finally {
        counting = false;
      }
      return executed;
    },
    restore: () => restores.reverse().forEach((restore) => restore()),
  };
}

describe('the invitation list', () => {
  const counter = statementCounter();
  let t: TestBackend;

  beforeAll(async () => {
    t = await startTestBackend();
    const rows = Array.from({ length: 100 }, (_, i) => ({ email: `row${i}@list.example`, firstname: `Row${i}` }));
    // Some with an email delivery, one with an enrolled device and refusals: every detail a row shows.
    const { body } = await t.admin('POST', '/invitations/bulk', { invitations: rows, send_email: false });
    for (const invitation of body.items.slice(0, 10))
      expect((await t.admin('POST', `/invitations/${invitation.id}/resend`)).status).toBe(202);
    await eventually(
      async () => ((await t.admin('GET', '/mail/status')).body.counts.outbox === 10 ? true : null),
      30_000,
      'ten emails in the outbox',
    );
    const enrolled = body.items[0];
    await enrollByHand(t.apiUrl, { ...enrolled, email: 'someone.else@list.example' });
    expect((await enrollByHand(t.apiUrl, enrolled, { serial: 'LIST-1' })).created.status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    await t?.stop();
    counter.restore();
  });

  it('costs a constant number of statements, whatever the number of rows', async () => {
    let one: any;
    let hundred: any;
    const forOne = await counter.count(async () => (one = await t.admin('GET', '/invitations?limit=1&offset=99')));
    const forHundred = await counter.count(async () => (hundred = await t.admin('GET', '/invitations?limit=100')));
    expect(one.body.items).toHaveLength(1);
    expect(hundred.body.items).toHaveLength(100);
    const first = hundred.body.items.find((item: { email: string }) => item.email === 'row0@list.example');
    expect(first).toMatchObject({
      status: 'done',
      fleet: expect.any(String),
      agent: { serial: 'LIST-1' },
      refused_attempts: 1,
      delivery: { state: 'outbox' },
    });
    expect(hundred.body.items.filter((item: { delivery: unknown }) => item.delivery).length).toBe(10);
    console.log(`statements for a list of 1: ${forOne}, of 100: ${forHundred}`);
    expect(forHundred).toBe(forOne);
    expect(forOne).toBeLessThanOrEqual(4);
  });

  it('and so does the list of enrollment codes', async () => {
    expect((await t.admin('POST', '/codes', { name: 'First' })).status).toBe(201);
    const forOne = await counter.count(() => t.admin('GET', '/codes'));
    for (let i = 0; i < 20; i++) expect((await t.admin('POST', '/codes', { name: `Code ${i}` })).status).toBe(201);
    let list: any;
    const forMany = await counter.count(async () => (list = await t.admin('GET', '/codes')));
    expect(list.body.items).toHaveLength(21);
    expect(list.body.items[20]).toMatchObject({
      name: 'First',
      fleet: expect.any(String),
      refused_attempts: 0,
      pending_approval: 0,
      user_token: expect.any(String),
    });
    expect(forMany).toBe(forOne);
  });
});
