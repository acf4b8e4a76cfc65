import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import PostalMime from 'postal-mime';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultNodeName } from '../../../src-main/backend/config.ts';
import { openSqliteSql } from '../../../src-main/backend/db/sqlite-sql.ts';
import { SqliteDeliveryRepository } from '../../../src-main/backend/mail/delivery-repository.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { decodeQrPng } from '../../helpers/qr.ts';
import { asBuffer, eventually, startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function backend(extra: Parameters<typeof startTestBackend>[0] = {}): Promise<TestBackend> {
  const t = await startTestBackend(extra);
  cleanup.push(() => t.stop());
  return t;
}

async function delivery(t: TestBackend, id: number, states: string[]) {
  return eventually(
    async () => {
      const { body } = await t.admin('GET', `/invitations/${id}`);
      return body.delivery && states.includes(body.delivery.state) ? body : null;
    },
    30_000,
    `invitation ${id} delivery in ${states.join('/')}`,
  );
}

describe('without SMTP: the outbox folder', () => {
  it('writes each message as a .eml file (owner-only) that parses to the same email', async () => {
    const t = await backend();
    const status = await t.admin('GET', '/mail/status');
    expect(status.body.transport).toMatchObject({ kind: 'outbox', outbox_dir: join(t.dataDir, 'outbox') });
    expect(status.body.transport.summary).toMatch(/no SMTP server configured/);

    const { body: created } = await t.admin('POST', '/invitations', { email: 'nomail@example.com', firstname: 'Noa' });
    const done = await delivery(t, created.id, ['outbox', 'failed']);
    expect(done.delivery.state).toBe('outbox');
    const file = done.delivery.outbox_file as string;
    expect(file.startsWith(join(t.dataDir, 'outbox'))).toBe(true);
    expect(file.endsWith('.eml')).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(t.dataDir, 'outbox')).mode & 0o777).toBe(0o700);

    const parsed = await PostalMime.parse(readFileSync(file));
    expect(parsed.to?.map((a) => ('address' in a ? a.address : ''))).toEqual(['nomail@example.com']);
    expect(parsed.text).toContain(created.deeplink);
    const png = parsed.attachments.find((a) => a.disposition === 'attachment');
    expect(decodeQrPng(asBuffer(png!.content))).toBe(created.deeplink);
    expect(parsed.messageId).toBe(done.delivery.message_id);

    // The test email goes there too.
    const test = await t.admin('POST', '/mail/test', { to: 'admin@example.com' });
    expect(test.status).toBe(200);
    expect(test.body).toMatchObject({ ok: true, via: 'outbox' });
    expect(readdirSync(join(t.dataDir, 'outbox'))).toHaveLength(2);
  });
});

describe('restart', () => {
  it('resumes queued messages: interrupted sends are queued again and sent once by the next start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-mail-restart-'));
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));

    // An SMTP server that accepts connections and never greets: sends hang in flight.
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanup.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          silent.close(() => resolve());
        }),
    );
    const silentPort = (silent.address() as AddressInfo).port;

    const first = await startTestBackend({ dataDir });
    let firstStopped = false;
    cleanup.push(() => (firstStopped ? undefined : first.stop()));
    await first.admin('PUT', '/mail/settings', { smtp_url: `smtp://127.0.0.1:${silentPort}`, smtp_max_connections: 2 });
    const rows = Array.from({ length: 5 }, (_, i) => ({ email: `restart${i}@example.com` }));
    const { body } = await first.admin('POST', '/invitations/bulk', { invitations: rows });
    const ids = (body.items as { id: number }[]).map((i) => i.id);
    // Two in flight (bounded), three waiting.
    await eventually(
      async () => (await first.admin('GET', '/mail/status')).body.counts.sending === 2,
      20_000,
      'two sends in flight',
    );
    expect((await first.admin('GET', '/mail/status')).body.counts.queued).toBe(3);

    await first.stop();
    firstStopped = true;
    // Nothing was lost or marked failed by the stop: every delivery is queued for the next start.
    const db = openSqliteSql(join(dataDir, 'mdm-console.sqlite'));
    const counts = await new SqliteDeliveryRepository(db).counts();
    await db.close();
    // All five, and nothing in any other state.
    expect(counts).toMatchObject({ queued: 5, total: 5 });

    // Next start, now with a working server (as `serve --smtp-url` would give it).
    const smtp: TestSmtp = await startTestSmtp();
    cleanup.push(() => smtp.close());
    const second = await backend({ dataDir, smtpUrl: smtp.url() });
    for (const id of ids) expect((await delivery(second, id, ['sent', 'failed'])).delivery.state).toBe('sent');
    await smtp.waitFor(5);
    expect(smtp.received.map((m) => m.invitationId).sort((a, b) => a! - b!)).toEqual(ids.sort((a, b) => a - b));
  });

  it('queues again what a crash left "sending"', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-mail-crash-'));
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const first = await startTestBackend({ dataDir });
    const { body: created } = await first.admin('POST', '/invitations', { email: 'crash@example.com', send_email: false });
    await first.stop();
    // What a process killed mid-send leaves behind: a claim of this node (named after the host by default).
    const db = openSqliteSql(join(dataDir, 'mdm-console.sqlite'));
    const deliveries = new SqliteDeliveryRepository(db);
    await deliveries.queue([created.id], null);
    expect(await deliveries.claim(defaultNodeName(), 60_000)).toMatchObject({
      invitation_id: created.id,
      state: 'sending',
      attempts: 1,
      claimed_by: defaultNodeName(),
    });
    await db.close();

    const smtp = await startTestSmtp();
    cleanup.push(() => smtp.close());
    const second = await backend({ dataDir, smtpUrl: smtp.url() });
    const sent = await delivery(second, created.id, ['sent', 'failed']);
    expect(sent.delivery).toMatchObject({ state: 'sent', attempts: 2 });
    expect((await smtp.waitFor(1))[0]!.invitationId).toBe(created.id);
    const resumed = (await second.admin('GET', '/events?limit=50')).body.items.find(
      (e: { type: string }) => e.type === 'mail.resumed',
    );
    expect(resumed?.data).toEqual({ count: 1 });
  });
});
