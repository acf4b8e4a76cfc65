import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually, startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';

// Invitation emails survive transient failures: a greylisting server (451 first), a server that
// stalls past the greeting time-out, a restart in between. A 5xx is never retried. Real SMTP
// servers (smtp-server) on loopback; the back-off is shortened where the test must see a retry run.

const backends: TestBackend[] = [];
const servers: TestSmtp[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const b of backends.splice(0)) await b.stop();
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function backend(options: Parameters<typeof startTestBackend>[0] = {}) {
  const b = await startTestBackend(options);
  backends.push(b);
  return b;
}

async function smtp(options: Parameters<typeof startTestSmtp>[0] = {}) {
  const s = await startTestSmtp(options);
  servers.push(s);
  return s;
}

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mdm-mail-retry-'));
  dirs.push(dir);
  return dir;
}

async function stop(b: TestBackend) {
  backends.splice(backends.indexOf(b), 1);
  await b.stop();
}

async function invite(b: TestBackend, email: string) {
  const { status, body } = await b.admin('POST', '/invitations', { email });
  expect(status, JSON.stringify(body)).toBe(201);
  return body as { id: number };
}

async function delivery(b: TestBackend, id: number, until: (d: any) => boolean, what: string) {
  return eventually(
    async () => {
      const { body } = await b.admin('GET', `/invitations/${id}`);
      return body.delivery && until(body.delivery) ? body.delivery : null;
    },
    30_000,
    what,
  );
}

const waitingForRetry = (d: any) => d.state === 'queued' && d.retry_at !== null;

describe('automatic retries of invitation emails', () => {
  it('greylisting (451): the first retry is scheduled within 2 minutes and kept across a restart', async () => {
    const server = await smtp({ greylist: true });
    const dir = dataDir();
    const first = await backend({ dataDir: dir, smtpUrl: server.url() });
    const created = await invite(first, 'grey@example.com');

    const waiting = await delivery(first, created.id, waitingForRetry, 'a scheduled retry');
    expect(waiting).toMatchObject({ state: 'queued', attempts: 1 });
    expect(waiting.error).toMatch(/451 .*Greylisted/);
    const delay = Date.parse(waiting.retry_at) - Date.parse(waiting.updated_at);
    expect(delay).toBeGreaterThan(0);
    expect(delay).toBeLessThanOrEqual(120_000);
    expect(server.greylisted()).toBe(1);
    expect(server.received).toHaveLength(0);
    const status = await first.admin('GET', '/mail/status');
    expect(status.body.counts).toMatchObject({ queued: 1, retrying: 1 });
    expect(status.body.next_retry_at).toBe(waiting.retry_at);
    const events = await first.admin('GET', '/events?limit=20');
    expect(events.body.items.map((e: { type: string }) => e.type)).toContain('mail.retrying');

    // A restart neither forgets the retry nor runs it early.
    await stop(first);
    const second = await backend({ dataDir: dir, smtpUrl: server.url() });
    const kept = (await second.admin('GET', `/invitations/${created.id}`)).body.delivery;
    expect(kept).toMatchObject({ state: 'queued', attempts: 1, retry_at: waiting.retry_at });
    expect(server.received).toHaveLength(0);

    // "mail retry" sends it now; the greylist lets the second attempt through.
    expect((await second.admin('POST', '/mail/retry', {})).body.queued).toBe(1);
    const sent = await delivery(second, created.id, (d) => d.state === 'sent', 'sent');
    expect(sent).toMatchObject({ attempts: 2, error: null, retry_at: null });
    expect(server.received.filter((m) => m.invitationId === created.id)).toHaveLength(1);
  });

  it('a retry scheduled before a restart runs at its time after it, by itself', async () => {
    const server = await smtp({ greylist: true });
    const dir = dataDir();
    const timing = { retryPolicy: { delaysMs: [3_000, 3_000] } };
    const first = await backend({ dataDir: dir, smtpUrl: server.url(), mailTiming: timing });
    const created = await invite(first, 'restart@example.com');
    const waiting = await delivery(first, created.id, waitingForRetry, 'a scheduled retry');
    await stop(first);

    const second = await backend({ dataDir: dir, smtpUrl: server.url(), mailTiming: timing });
    const sent = await delivery(second, created.id, (d) => d.state === 'sent', 'sent by the scheduled retry');
    expect(sent.attempts).toBe(2);
    // Not before its time: the attempt that went through started at or after retry_at.
    expect(Date.parse(sent.sent_at)).toBeGreaterThanOrEqual(Date.parse(waiting.retry_at));
    expect(server.received.filter((m) => m.invitationId === created.id)).toHaveLength(1);
  });

  it('a server that stalls past the greeting time-out: the 8 messages in flight all go out once it answers', async () => {
    const server = await smtp({ stallGreetings: true });
    const b = await backend({
      smtpUrl: server.url(),
      mailTiming: { greetingTimeoutMs: 400, retryPolicy: { delaysMs: Array(40).fill(300) } },
    });
    const invitations = Array.from({ length: 8 }, (_, i) => ({ email: `stall${i}@example.com` }));
    const bulk = await b.admin('POST', '/invitations/bulk', { invitations, send_email: true });
    expect(bulk.status, JSON.stringify(bulk.body)).toBe(201);
    const ids: number[] = bulk.body.items.map((i: { id: number }) => i.id);

    // Each has failed at least once with the time-out, and is kept for another try (never 'failed').
    for (const id of ids) {
      const tried = await delivery(b, id, (d) => d.error !== null, `invitation ${id} tried`);
      expect(tried.state).not.toBe('failed');
      expect(tried.error).toMatch(/Greeting never received|connection was closed/);
    }
    expect(server.received).toHaveLength(0);

    server.stopStalling();
    for (const id of ids) {
      const sent = await delivery(b, id, (d) => d.state === 'sent', `invitation ${id} sent`);
      expect(sent.attempts).toBeGreaterThanOrEqual(2);
    }
    for (const id of ids) expect(server.received.filter((m) => m.invitationId === id)).toHaveLength(1);
  }, 90_000);

  it('a permanent 5xx is never retried', async () => {
    let rcpt = 0;
    const server = await smtp({
      onRcptTo(_address, _session, callback) {
        rcpt++;
        const error = new Error('No such user here') as Error & { responseCode: number };
        error.responseCode = 550;
        callback(error);
      },
    });
    const b = await backend({ smtpUrl: server.url(), mailTiming: { retryPolicy: { delaysMs: [200, 200, 200] } } });
    const created = await invite(b, 'nobody@example.com');
    const failed = await delivery(b, created.id, (d) => d.state === 'failed', 'failed');
    expect(failed).toMatchObject({ attempts: 1, retry_at: null });
    expect(failed.response).toMatch(/^550 /);
    // Well past every delay of the policy: still one attempt.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(rcpt).toBe(1);
    expect((await b.admin('GET', `/invitations/${created.id}`)).body.delivery).toMatchObject({ state: 'failed', attempts: 1 });
  });

  it('retries are bounded: after the last one the delivery fails and says why', async () => {
    let rcpt = 0;
    const server = await smtp({
      onRcptTo(_address, _session, callback) {
        rcpt++;
        const error = new Error('Mailbox busy, try later') as Error & { responseCode: number };
        error.responseCode = 450;
        callback(error);
      },
    });
    const b = await backend({ smtpUrl: server.url(), mailTiming: { retryPolicy: { delaysMs: [200, 200] } } });
    const created = await invite(b, 'busy@example.com');
    const failed = await delivery(b, created.id, (d) => d.state === 'failed', 'failed for good');
    expect(failed).toMatchObject({ attempts: 3, retry_at: null });
    expect(failed.error).toMatch(/450 .*Mailbox busy.*gave up after 3 attempts/);
    expect(rcpt).toBe(3);
  });
});
