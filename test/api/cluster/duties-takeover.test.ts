// Three `serve` processes on one PostgreSQL database; the one holding the alert evaluation (and
// whatever else it holds) is killed with SIGKILL: its duties go to the others once its leases expire,
// the incident it announced is not announced again, its running job is marked interrupted (the
// others' are not), and the reports go on being sampled. The takeover times are printed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlDutyRepository, type DutyLeaseRow } from '../../../src-main/backend/cluster/duty-repository.ts';
import { PostgresSql } from '../../../src-main/backend/db/postgres-sql.ts';
import { SqliteJobRepository } from '../../../src-main/backend/jobs/repository.ts';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { runningJobOf } from '../../helpers/nodes.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const NAMES = ['node-1', 'node-2', 'node-3'];
const DUTIES = ['alert-evaluation', 'jobs-sweeper', 'policy-republish', 'reports-sampler', 'session-sweep', 'view-sync'];

describe('the node holding duties is killed', () => {
  let database: TestDatabase;
  let sql: PostgresSql;
  const nodes = new Map<string, ChildBackend>();
  /** Each start makes its data dir's admin token the owner's: the last one started is valid on every node. */
  let token = '';

  beforeAll(async () => {
    database = await createTestDatabase('duty_takeover');
    for (const name of NAMES) {
      const node = await startChildBackend({
        databaseUrl: database.url,
        nodeName: name,
        // Each node runs its own embedded broker here, which serve refuses beside other nodes.
        embeddedBrokerPerNode: true,
        alerts: { intervalMs: 300 },
        reportSampleEveryMs: 300,
        jobSweepEveryMs: 300,
      });
      nodes.set(name, node);
      token = node.info.admin_token;
    }
    sql = new PostgresSql(database.url, { poolSize: 2 });
  }, 180_000);
  afterAll(async () => {
    await sql?.close();
    for (const node of nodes.values()) await node.stop();
    await database?.drop();
  });

  const admin = async (name: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${nodes.get(name)!.info.admin_url}/api${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : undefined) as any };
  };
  const leases = async (): Promise<Map<string, DutyLeaseRow>> => {
    const now = new Date().toISOString();
    const rows = await new SqlDutyRepository(sql).list();
    return new Map(rows.filter((row) => row.expires_at > now).map((row) => [row.duty, row]));
  };
  const count = async (type: string) => Number(await sql.value(`SELECT count(*) FROM events WHERE type = ?`, [type]));
  const mails = async () => Number(await sql.value(`SELECT count(*) FROM notification_mails`));

  it('another node takes each duty over within the lease time, and nothing is done twice', async () => {
    // Every duty has one holder among the three; the registry counts each node live.
    const before = await leases();
    for (const duty of DUTIES) expect(NAMES, duty).toContain(before.get(duty)?.holder);
    const live = async (name: string) =>
      ((await admin(name, 'GET', '/status')).body.nodes as { name: string; live: boolean }[])
        .filter((node) => node.live)
        .map((node) => node.name)
        .sort();
    expect(await live(NAMES[0]!)).toEqual([...NAMES].sort());

    // An alert fires once.
    const some = NAMES[0]!;
    expect(
      (await admin(some, 'POST', '/alerts/rules', { kind: 'invitation_expiring', threshold: 48, emails: ['ops@example.com'] }))
        .status,
    ).toBe(201);
    const invited = await admin(some, 'POST', '/invitations', { email: 'late@example.com', days: 1, send_email: false });
    expect(invited.status).toBe(201);
    await eventually(async () => (await count('alert.fired')) === 1, 30_000);

    // Each node runs a bulk job (as the admin API records them).
    const jobs = new SqliteJobRepository(sql);
    const jobOf = new Map<string, number>();
    for (const name of NAMES) jobOf.set(name, await jobs.insert(runningJobOf(name)));

    // The node evaluating the alerts is killed.
    const victim = before.get('alert-evaluation')!.holder;
    const held = DUTIES.filter((duty) => before.get(duty)!.holder === victim);
    const killedAt = Date.now();
    const exited = new Promise((resolve) => nodes.get(victim)!.child.once('exit', resolve));
    nodes.get(victim)!.child.kill('SIGKILL');
    await exited;
    const takenAt = new Map<string, number>();
    await eventually(async () => {
      const now = await leases();
      for (const duty of held) {
        const holder = now.get(duty)?.holder;
        if (holder !== undefined && holder !== victim && !takenAt.has(duty)) takenAt.set(duty, Date.now());
      }
      return takenAt.size === held.length;
    }, 60_000);
    const after = await leases();
    for (const duty of DUTIES)
      expect(
        NAMES.filter((name) => name !== victim),
        duty,
      ).toContain(after.get(duty)?.holder);
    for (const duty of held) expect(after.get(duty)!.fence, duty).toBeGreaterThan(before.get(duty)!.fence);
    // The registry no longer counts the killed node (its name's lock went with its process).
    expect(await live(NAMES.find((name) => name !== victim)!)).toEqual(NAMES.filter((name) => name !== victim).sort());
    console.log(
      `killed ${victim} (held ${held.join(', ')}): taken over after ${held.map((duty) => `${duty} ${((takenAt.get(duty)! - killedAt) / 1000).toFixed(1)} s`).join(', ')}`,
    );

    // The new holder evaluates (the incident is seen again after the kill), and announces nothing again.
    const survivor = after.get('alert-evaluation')!.holder;
    await eventually(async () => {
      const incidents = (await admin(survivor, 'GET', '/alerts/incidents?state=open')).body.items as { last_seen_at: string }[];
      return incidents.length === 1 && Date.parse(incidents[0]!.last_seen_at) > takenAt.get('alert-evaluation')!;
    }, 30_000);
    expect(await count('alert.fired')).toBe(1);
    expect(await mails()).toBe(1);

    // The killed node's job is interrupted; the living nodes' jobs are not.
    await eventually(async () => (await jobs.byId(jobOf.get(victim)!))!.state === 'interrupted', 30_000);
    expect((await jobs.byId(jobOf.get(victim)!))!.error).toBe('The node running it stopped');
    for (const name of NAMES.filter((n) => n !== victim))
      expect((await jobs.byId(jobOf.get(name)!))!.state, name).toBe('running');

    // The reports are sampled again, by the new holder.
    const sampledSince = takenAt.get('reports-sampler') ?? killedAt;
    await eventually(async () => {
      const online = await admin(survivor, 'GET', '/reports/online?days=1');
      return online.status === 200 && Date.parse(online.body.sampled_at) > sampledSince;
    }, 30_000);

    // The incident resolves once.
    expect((await admin(survivor, 'POST', `/invitations/${invited.body.id}/revoke`)).status).toBe(200);
    await eventually(async () => (await count('alert.resolved')) === 1, 30_000);
    await eventually(async () => {
      const rules = (await admin(survivor, 'GET', '/alerts/rules')).body.items as { open_incidents: number }[];
      return rules[0]!.open_incidents === 0;
    });
    expect(await count('alert.fired')).toBe(1);
    expect(await count('alert.resolved')).toBe(1);
    expect(await mails()).toBe(2);
  }, 180_000);
});
