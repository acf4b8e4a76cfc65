// The reports' counted figures with several backends on one PostgreSQL database (issue 23): one
// node counts every node's events (the duty `reports-sampler`, following the cluster feed), so
// devices enrolling through another node while a third node starts are each counted once, and a
// hand-over of the duty counts nothing twice and misses nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

describe('daily figures on several nodes sharing one PostgreSQL database', () => {
  let database: TestDatabase;
  const nodes: TestBackend[] = [];
  /** Each node's start makes its data dir's admin token the owner's: the last one started is the one valid on every node. */
  let token = '';
  const start = async (name: string) => {
    const node = await startTestBackend({
      databaseUrl: database.url,
      nodeName: name,
      // Each node runs its own embedded broker here (one process), which serve refuses beside other nodes.
      embeddedBrokerPerNode: true,
      reportSampleEveryMs: 24 * 60 * 60 * 1000,
    });
    nodes.push(node);
    token = node.backend.info.admin_token;
    return node;
  };
  const invite = async (node: TestBackend, n: number) => {
    const invitations = [];
    for (let i = 0; i < n; i++) {
      const email = `figures-${Date.now()}-${i}@example.com`;
      const response = await fetch(`${node.backend.info.admin_url}/api/invitations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email, send_email: false }),
      });
      expect(response.status).toBe(201);
      invitations.push({ ...((await response.json()) as { user_token: string; invitation_token: string }), email });
    }
    return invitations;
  };
  let serial = 0;
  const enroll = async (node: TestBackend, invitation: { user_token: string; invitation_token: string; email: string }) => {
    const { created } = await enrollByHand(node.apiUrl, invitation, { serial: `FIGURES-${++serial}` });
    expect(created.status).toBe(201);
  };
  const holder = () => nodes.find((node) => node.backend.duties.holds('reports-sampler'));
  /** Enrolled devices in the figures, and whether every enrollment recorded so far is behind the cursor. */
  const counted = async (sql: TestBackend['sql']) => ({
    enrolled: Number(await sql.value(`SELECT coalesce(sum(value), 0) FROM daily_figures WHERE metric = 'enrolled'`)),
    settled:
      Number(await sql.value(`SELECT coalesce(max(id), 0) FROM events WHERE type = 'agent.enrolled'`)) <=
      Number(await sql.value(`SELECT event_id FROM report_cursor WHERE id = 1`)),
  });

  beforeAll(async () => {
    database = await createTestDatabase('figure_nodes');
    await start('node-a');
    await start('node-b');
  }, 120_000);
  afterAll(async () => {
    for (const node of nodes.splice(0).reverse()) await node.stop();
    await database?.drop();
  });

  it('devices enrolling through a node that does not count, while another node starts, are each counted once', async () => {
    const counter = holder()!;
    expect(counter).toBeDefined();
    const other = nodes.find((node) => node !== counter)!;
    const invitations = await invite(other, 24);
    // Enrollments through the other node, several at once, while node-c starts (and would catch up).
    const enrolling = (async () => {
      for (let i = 0; i < invitations.length; i += 4)
        await Promise.all(invitations.slice(i, i + 4).map((invitation) => enroll(other, invitation)));
    })();
    await Promise.all([enrolling, start('node-c')]);
    const sql = counter.sql;
    await eventually(async () => (await counted(sql)).settled, 30_000);
    expect((await counted(sql)).enrolled).toBe(24);
  });

  it('the duty handed over to another node: enrollments meanwhile are counted once', async () => {
    const first = holder()!;
    const rest = nodes.filter((node) => node !== first);
    const invitations = await invite(rest[0]!, 6);
    await Promise.all(invitations.slice(0, 3).map((invitation) => enroll(rest[0]!, invitation)));
    // The holder stops (gives its duties up); another node takes the counting on.
    nodes.splice(nodes.indexOf(first), 1);
    await first.stop();
    await Promise.all(invitations.slice(3).map((invitation) => enroll(rest[0]!, invitation)));
    await eventually(() => holder() !== undefined, 30_000);
    const sql = rest[0]!.sql;
    await eventually(async () => (await counted(sql)).settled, 30_000);
    expect((await counted(sql)).enrolled).toBe(30);
  });
});
