// The mail worker with several nodes on one PostgreSQL database (issue 23, items 2 and 4): three
// backends drain one queue through an SMTP server that answers slowly and, for a while, not at all;
// each email reaches the server exactly once (counted by recipient at the server). The claims of a
// stalled send are kept alive, so no other node sends it again meanwhile.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresSql } from '../../../src-main/backend/db/postgres-sql.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';
import { eventually, startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';

/** How long a claim lives without being renewed (short here, so a stall outlasts it many times). */
const CLAIM_TTL_MS = 1500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Each recipient and how many messages the server accepted for it. */
function countByRecipient(smtp: TestSmtp): Map<string, number> {
  const counts = new Map<string, number>();
  for (const mail of smtp.received) for (const to of mail.envelope.to) counts.set(to, (counts.get(to) ?? 0) + 1);
  return counts;
}

describe('three mail workers on one database, an SMTP server that stalls', () => {
  let database: TestDatabase;
  let smtp: TestSmtp;
  let sql: PostgresSql;
  const nodes: TestBackend[] = [];
  const dataDirs: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('mail_nodes');
    // Slow: every reply to DATA comes 0 to 40 ms late.
    smtp = await startTestSmtp({ dataDelayMs: () => Math.floor(Math.random() * 40) });
    for (const name of ['mail-a', 'mail-b', 'mail-c']) {
      const dataDir = mkdtempSync(join(tmpdir(), `mdm-${name}-`));
      dataDirs.push(dataDir);
      // One admin token for the cluster: the first node's, in every node's data dir.
      if (nodes[0]) copyFileSync(join(nodes[0].dataDir, 'admin-token'), join(dataDir, 'admin-token'));
      nodes.push(
        await startTestBackend({
          dataDir,
          databaseUrl: database.url,
          nodeName: name,
          smtpUrl: smtp.url(),
          mailTiming: { claimTtlMs: CLAIM_TTL_MS },
        }),
      );
    }
    sql = new PostgresSql(database.url, { poolSize: 2 });
  }, 120_000);
  afterAll(async () => {
    await sql?.close();
    for (const node of nodes) await node.stop();
    await smtp?.close();
    await database?.drop();
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  });

  it('200 invitations: each email delivered exactly once, by all three nodes', async () => {
    // The server stops answering DATA before anything is queued: the first sends of every node stall.
    smtp.holdData();
    const emails: string[] = [];
    for (let n = 0; n < 3; n++) {
      const batch = Array.from({ length: n === 2 ? 66 : 67 }, (_, i) => `person-${n}-${i}@example.com`);
      emails.push(...batch);
      const { status, body } = await nodes[n]!.admin('POST', '/invitations/bulk', {
        invitations: batch.map((email) => ({ email })),
        send_email: true,
      });
      expect(status, JSON.stringify(body)).toBe(201);
    }
    expect(emails).toHaveLength(200);
    // Every node has sends stuck in DATA (3 connections each), and they stay stuck for several claim
    // lifetimes: a claim that was not kept alive would expire and another node would send again.
    await eventually(() => smtp.heldData() >= 9, 30_000, 'nine stalled sends');
    await sleep(4 * CLAIM_TTL_MS);
    smtp.releaseData();

    await eventually(
      async () => (await sql.value<number>(`SELECT count(*) FROM mail_deliveries WHERE state = 'sent'`)) === 200,
      120_000,
      'every delivery sent',
    );
    const counts = countByRecipient(smtp);
    const twice = [...counts].filter(([, n]) => n > 1);
    expect(twice, `sent more than once: ${JSON.stringify(twice.slice(0, 10))}`).toEqual([]);
    expect([...counts.keys()].sort()).toEqual([...emails].sort());
    expect(smtp.received).toHaveLength(200);
    // Each delivery was claimed once: one attempt.
    expect(await sql.value<number>(`SELECT count(*) FROM mail_deliveries WHERE attempts <> 1`)).toBe(0);
    // The work was shared: each node sent some.
    const byNode = await sql.all<{ claimed_by: string; n: number }>(
      `SELECT claimed_by, count(*) AS n FROM mail_deliveries GROUP BY claimed_by ORDER BY claimed_by`,
    );
    expect(byNode.map((row) => row.claimed_by)).toEqual(['mail-a', 'mail-b', 'mail-c']);
  }, 240_000);
});
