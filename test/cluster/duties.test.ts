// Issue 23, item 4: the node holding the duties (the leases of work one node does at a time:
// sweepers, alert evaluation, republishing…) and sending mail is killed with `kill -9` while its
// emails are stalled at the SMTP server; another node takes each of its duties over within seconds
// (the lease changes hands, its fence grows) and every invitation email reaches the SMTP server
// exactly once, none lost with the dead node, none sent twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterNode } from '../../scripts/cluster.ts';
import { clusterLogs, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { eventually } from '../helpers/mqtt.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';

const INVITATIONS = 60;
let cluster: TestCluster;
let smtp: TestSmtp;

interface Lease {
  duty: string;
  holder: string;
  fence: string;
  expires_at: string;
}
const leases = () => cluster.query<Lease>('SELECT duty, holder, fence, expires_at FROM duty_leases ORDER BY duty');

beforeAll(async () => {
  smtp = await startTestSmtp({ stallGreetings: true });
  cluster = await startTestCluster({ label: 'duties', env: { MDM_CONSOLE_SMTP_URL: smtp.url() } });
}, 180_000);

afterAll(async () => {
  smtp?.stopStalling();
  await cluster?.destroy();
  await smtp?.close();
});

describe('a node holding duties and sending mail, killed', () => {
  it('hands every duty to another node within seconds, and each invitation email is sent exactly once', async () => {
    const nodeByName = (name: string) => cluster.nodes.find((node) => node.name === name);
    // Every duty is held by one of the nodes, under its name.
    const held = await eventually(async () => {
      const rows = await leases();
      return rows.length > 0 && rows.every((lease) => nodeByName(lease.holder)) ? rows : false;
    }, 30_000);
    const emails = Array.from({ length: INVITATIONS }, (_, i) => `person-${i}@example.com`);
    const bulk = await cluster.admin('POST', '/invitations/bulk', {
      invitations: emails.map((email) => ({ email })),
      send_email: true,
    });
    expect(bulk.status, JSON.stringify(bulk.body)).toBe(201);
    // Sends are under way (stalled at the greeting) from more than one node.
    await eventually(() => smtp.connections() >= 3, 30_000);
    const victim: ClusterNode = nodeByName(held[0]!.holder)!;
    const victimDuties = held.filter((lease) => lease.holder === victim.name);
    await victim.kill('SIGKILL');
    await new Promise((done) => setTimeout(done, 1000));
    smtp.stopStalling();

    // Each duty the dead node held is taken by a node alive, under a new fence.
    await eventually(async () => {
      const now = await leases();
      return victimDuties.every((before) => {
        const after = now.find((lease) => lease.duty === before.duty);
        return after && after.holder !== victim.name && Number(after.fence) > Number(before.fence);
      });
    }, 30_000).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${clusterLogs(cluster)}`);
    });

    // Every email once: the dead node's claims expire and another node sends them.
    await smtp.waitFor(INVITATIONS, 120_000);
    await new Promise((done) => setTimeout(done, 3000));
    const counts = new Map<string, number>();
    for (const mail of smtp.received) for (const to of mail.envelope.to) counts.set(to, (counts.get(to) ?? 0) + 1);
    expect([...counts].filter(([, n]) => n > 1)).toEqual([]);
    expect([...counts.keys()].sort()).toEqual([...emails].sort());
    expect(smtp.received).toHaveLength(INVITATIONS);
    await victim.start();
  }, 300_000);
});
