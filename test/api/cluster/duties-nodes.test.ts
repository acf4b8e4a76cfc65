// Several backends on one PostgreSQL database (in this process; duties-takeover.test.ts kills child
// processes): each duty is worked on by one node, a node starting leaves another node's running
// job alone, and nodes evaluating the alert rules at the same moment announce each incident once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlDutyRepository } from '../../../src-main/backend/cluster/duty-repository.ts';
import { VERSION } from '../../../src-main/backend/cluster/nodes.ts';
import { NodeRepository } from '../../../src-main/backend/cluster/repository.ts';
import { SqliteJobRepository } from '../../../src-main/backend/jobs/repository.ts';
import type { TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { runningJobOf, startNode } from '../../helpers/nodes.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const DUTIES = ['alert-evaluation', 'jobs-sweeper', 'policy-republish', 'reports-sampler', 'session-sweep', 'view-sync'];

describe('duties on three nodes sharing one PostgreSQL database', () => {
  let database: TestDatabase;
  const nodes: TestBackend[] = [];
  const start = async (name: string) => {
    const node = await startNode(
      name,
      { databaseUrl: database.url, reportSampleEveryMs: 100, alerts: { intervalMs: 100 }, jobSweepEveryMs: 100 },
      nodes[0],
    );
    nodes.push(node);
    return node;
  };
  // Every node holds the first one's admin token (startNode copies it): any node's own helper will do.
  const admin = (node: TestBackend, method: string, path: string, body?: unknown) => node.admin(method, path, body);

  beforeAll(async () => {
    database = await createTestDatabase('duty_nodes');
    for (const name of ['node-a', 'node-b', 'node-c']) await start(name);
  }, 120_000);
  afterAll(async () => {
    for (const node of nodes.splice(0).reverse()) await node.stop();
    await database?.drop();
  });

  /** The live holder of each duty, as the database says. */
  async function holders(): Promise<Record<string, string>> {
    const now = new Date().toISOString();
    const rows = await new SqlDutyRepository(nodes[0]!.sql).list();
    return Object.fromEntries(rows.filter((row) => row.expires_at > now).map((row) => [row.duty, row.holder]));
  }

  it('each duty has one holder, and only that node works on it', async () => {
    const held = await holders();
    for (const duty of DUTIES) expect(['node-a', 'node-b', 'node-c'], duty).toContain(held[duty]);
    // Whether a node is alive is the registry's answer (below), not a lease: the leases are the duties'.
    expect(Object.keys(held).sort()).toEqual([...DUTIES].sort());
    for (const node of nodes)
      for (const duty of DUTIES) expect(node.backend.duties.holds(duty), duty).toBe(held[duty] === node.backend.duties.nodeName);
    // /api/status on any node says which node holds which duty.
    const status = await admin(nodes[1]!, 'GET', '/status');
    expect(status.status).toBe(200);
    const listed = Object.fromEntries((status.body.nodes as { name: string; duties: string[] }[]).map((n) => [n.name, n.duties]));
    for (const duty of DUTIES) expect(listed[held[duty]!], duty).toContain(duty);
    expect(Object.values(listed).flat().sort()).toEqual([...DUTIES].sort());
    expect((status.body.nodes as { name: string; live: boolean }[]).filter((n) => n.live).map((n) => n.name)).toEqual([
      'node-a',
      'node-b',
      'node-c',
    ]);

    // Count each node's samples and evaluations (the timers call these methods) for a while.
    const samples = new Map<string, number>();
    const evaluations = new Map<string, number>();
    for (const node of nodes) {
      const name = node.backend.duties.nodeName;
      const { figures } = node.backend.services;
      const sample = figures.sample.bind(figures);
      figures.sample = () => {
        samples.set(name, (samples.get(name) ?? 0) + 1);
        return sample();
      };
      const { engine } = node.backend.alerts;
      const evaluate = engine.evaluate.bind(engine);
      engine.evaluate = () => {
        evaluations.set(name, (evaluations.get(name) ?? 0) + 1);
        return evaluate();
      };
    }
    const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);
    await eventually(() => total(samples) >= 10 && total(evaluations) >= 10, 30_000);
    expect([...samples.keys()]).toEqual([held['reports-sampler']]);
    expect([...evaluations.keys()]).toEqual([held['alert-evaluation']]);
  });

  /** A bulk job running on `node`, as its JobService would have written it. */
  const job = (node: string) => new SqliteJobRepository(nodes[0]!.sql).insert(runningJobOf(node));

  it("a node starting leaves another node's running job alone; once that node is gone, the job is marked interrupted", async () => {
    const jobs = new SqliteJobRepository(nodes[0]!.sql);
    const ofB = await job('node-b');
    const ofC = await job('node-c');
    // node-d starts while node-b and node-c run their jobs.
    const d = await start('node-d');
    expect((await jobs.byId(ofB))!.state).toBe('running');
    expect((await jobs.byId(ofC))!.state).toBe('running');
    // node-c stops: its job is its own no more; node-b's, alive, stays running.
    const c = nodes.find((node) => node.backend.duties.nodeName === 'node-c')!;
    nodes.splice(nodes.indexOf(c), 1);
    await c.stop();
    await eventually(async () => (await jobs.byId(ofC))!.state === 'interrupted', 30_000);
    expect((await jobs.byId(ofC))!.error).toBe('The node running it stopped');
    expect((await jobs.byId(ofB))!.state).toBe('running');
    // Its duties went to the nodes left.
    await eventually(async () => {
      const held = await holders();
      return DUTIES.every((duty) => ['node-a', 'node-b', 'node-d'].includes(held[duty] ?? ''));
    }, 30_000);
    expect(d.backend.duties.nodeName).toBe('node-d');
  }, 120_000); // a heartbeat going stale, then a sweep: 20 s and more

  it('nodes evaluating the rules at the same moment announce each incident once, and its resolution once', async () => {
    const [a] = nodes;
    const sql = a!.sql;
    const count = async (type: string) => Number(await sql.value(`SELECT count(*) FROM events WHERE type = ?`, [type]));
    const mails = async () => Number(await sql.value(`SELECT count(*) FROM notification_mails`));
    // Every node asked to evaluate at once ("evaluate now" in each node's console), beside the duty's timer.
    const evaluateEverywhere = async () => {
      const answers = await Promise.all(
        nodes.flatMap((node) => [admin(node, 'POST', '/alerts/evaluate'), admin(node, 'POST', '/alerts/evaluate')]),
      );
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
    };
    const rule = await admin(a!, 'POST', '/alerts/rules', {
      kind: 'invitation_expiring',
      threshold: 48,
      emails: ['ops@example.com'],
    });
    expect(rule.status).toBe(201);
    for (let round = 1; round <= 3; round++) {
      const invited = await admin(a!, 'POST', '/invitations', { email: `late${round}@example.com`, days: 1, send_email: false });
      expect(invited.status).toBe(201);
      await evaluateEverywhere();
      await eventually(async () => (await count('alert.fired')) >= round);
      expect((await admin(a!, 'POST', `/invitations/${invited.body.id}/revoke`)).status).toBe(200);
      await evaluateEverywhere();
      await eventually(async () => (await count('alert.resolved')) >= round);
    }
    // The duty's timer runs over the settled state too.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await count('alert.fired')).toBe(3);
    expect(await count('alert.resolved')).toBe(3);
    expect(await mails()).toBe(6);
  });

  it("the jobs sweeper takes no job from a node whose lock's connection drops while it heartbeats, nor from itself", async () => {
    const sql = nodes[0]!.sql;
    const jobs = new SqliteJobRepository(sql);
    const names = nodes.map((node) => node.backend.duties.nodeName);
    const sweeper = (await holders())['jobs-sweeper'];
    expect(names).toContain(sweeper);
    const running = await Promise.all(names.map((name) => job(name)));
    // Every node's name lock loses its connection (a database restart, a proxy, idle_session_timeout
    // would do the same): the database releases the locks; the nodes run on and heartbeat.
    const ended = await sql.all<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
        WHERE application_name = 'mdm-console lock' AND datname = current_database()`,
    );
    expect(ended.length).toBeGreaterThanOrEqual(names.length);
    // Sweeps run (each marks a job of a node nobody knows), until every node holds its name again.
    await eventually(async () => (await jobs.byId(await job('node-nobody')))!.state === 'interrupted', 30_000);
    await eventually(async () => {
      const status = (await admin(nodes[0]!, 'GET', '/status')).body as { nodes: { name: string; live: boolean }[] };
      return names.every((name) => status.nodes.some((node) => node.name === name && node.live));
    }, 30_000);
    await eventually(async () => (await jobs.byId(await job('node-nobody')))!.state === 'interrupted', 30_000);
    // No node lost its job, the sweeping node's own included.
    for (const [i, id] of running.entries()) expect((await jobs.byId(id))!.state, names[i]).toBe('running');
  }, 120_000); // several sweeps, 10 s apart

  it('the jobs sweeper asks the node registry who runs: a node heartbeating keeps its job, even without its lock; once its heartbeat is stale, it loses it', async () => {
    const sql = nodes[0]!.sql;
    const jobs = new SqliteJobRepository(sql);
    // A node process the registry counts live (its row heartbeats, its name's lock is held), that
    // holds no lease of the duties at all.
    const registry = new NodeRepository(sql);
    const now = new Date().toISOString();
    const fields = {
      name: 'node-ghost',
      admin_url: 'http://127.0.0.1:9',
      agent_url: 'http://127.0.0.1:9',
      version: VERSION,
      broker_mode: 'mosquitto',
      started_at: now,
      last_heartbeat: now,
    };
    const { id } = await registry.ensure(fields);
    const lock = (await registry.holdName(id))!;
    expect(lock).not.toBeNull();
    await registry.start(id, fields);
    const heartbeat = setInterval(() => void registry.heartbeat(id, new Date().toISOString()).catch(() => {}), 200);
    try {
      const status = (await admin(nodes[0]!, 'GET', '/status')).body as { nodes: { name: string; live: boolean }[] };
      expect(status.nodes.find((node) => node.name === 'node-ghost')).toMatchObject({ live: true });
      const ofGhost = await job('node-ghost');
      // A job of a node the registry has never heard of, written after: once the sweeper has marked
      // it interrupted, it has looked at node-ghost's job too.
      await eventually(async () => (await jobs.byId(await job('node-nobody')))!.state === 'interrupted', 30_000);
      expect((await jobs.byId(ofGhost))!.state).toBe('running');
      // Its lock goes while it heartbeats: the console's status counts it dead at once, but its job
      // stays its own.
      await lock.release();
      await eventually(async () => {
        const after = (await admin(nodes[0]!, 'GET', '/status')).body as { nodes: { name: string; live: boolean }[] };
        return after.nodes.find((node) => node.name === 'node-ghost')?.live === false;
      }, 30_000);
      await eventually(async () => (await jobs.byId(await job('node-nobody')))!.state === 'interrupted', 30_000);
      expect((await jobs.byId(ofGhost))!.state).toBe('running');
      // The process dies: its heartbeat stops; once it is older than the registry's 10 s, the sweeper
      // marks its job interrupted.
      clearInterval(heartbeat);
      await eventually(async () => (await jobs.byId(ofGhost))!.state === 'interrupted', 30_000);
      expect((await jobs.byId(ofGhost))!.error).toBe('The node running it stopped');
    } finally {
      clearInterval(heartbeat);
      await lock.release();
    }
  }, 120_000); // several sweeps (10 s apart) and a heartbeat going stale (10 s): past 30 s on a loaded machine
});
