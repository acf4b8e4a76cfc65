// Webhooks over real HTTP (issue 25 item 5): each delivery a signed JSON POST, retried with
// exponential back-off on failure (the back-off clock driven by the test, not waited for), failed
// after the last attempt, logged per webhook, queued in SQLite (a restart resumes it); secrets never
// shown back nor kept in the audit trail; only http(s) URLs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.ts';

const SECRET = 'receiver-secret-0123456789';
const MINUTE = 60_000;

/** The alert clock: real time plus what the test adds. */
function testClock() {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms: number) => (offset += ms) };
}

async function deliveries(t: TestBackend, webhookId: number) {
  const { status, body } = await t.admin('GET', `/webhooks/${webhookId}/deliveries`);
  expect(status).toBe(200);
  return body.items as any[];
}

describe('a webhook whose receiver fails twice, then accepts', () => {
  const clock = testClock();
  let t: TestBackend;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver(SECRET, (n) => (n <= 2 ? 500 : 200));
    t = await startTestBackend({
      alerts: { now: clock.now, webhooks: { baseDelayMs: MINUTE, maxAttempts: 5, timeoutMs: 5000 } },
    });
  });
  afterAll(async () => {
    await t.stop();
    await receiver.close();
  });

  it('is delivered exactly once, on the third attempt, each attempt signed; the log shows every step', async () => {
    const created = await t.admin('POST', '/webhooks', { url: receiver.url, secret: SECRET, name: 'Ops receiver' });
    expect(created.status).toBe(201);
    expect(created.body.secret).toBeUndefined(); // given by the admin: never echoed
    expect(created.body.secret_hint).toBe('…6789');
    const id = created.body.id as number;

    const test = await t.admin('POST', `/webhooks/${id}/test`);
    expect(test.status).toBe(202);
    expect(test.body).toMatchObject({ webhook_id: id, event: 'webhook.test', state: 'queued' });

    // Attempt 1: 500. The next is a minute away on the alert clock, and does not go before.
    await eventually(async () => (await deliveries(t, id))[0].state === 'queued' && receiver.received.length === 1);
    let [delivery] = await deliveries(t, id);
    expect(delivery).toMatchObject({ attempts: 1, response_code: 500, error: 'HTTP 500 Internal Server Error' });
    expect(Date.parse(delivery.next_attempt_at) - clock.now()).toBeGreaterThan(MINUTE - 5000);
    t.backend.alerts.worker.kick();
    await t.backend.alerts.worker.settled();
    expect(receiver.received).toHaveLength(1);

    // Attempt 2, a minute later: 500 again; the wait doubles.
    clock.advance(MINUTE);
    t.backend.alerts.worker.kick();
    await eventually(() => receiver.received.length === 2);
    await eventually(async () => (await deliveries(t, id))[0].attempts === 2 && (await deliveries(t, id))[0].state === 'queued');
    [delivery] = await deliveries(t, id);
    expect(Date.parse(delivery.next_attempt_at) - clock.now()).toBeGreaterThan(2 * MINUTE - 5000);
    clock.advance(MINUTE);
    t.backend.alerts.worker.kick();
    await t.backend.alerts.worker.settled();
    expect(receiver.received).toHaveLength(2);

    // Attempt 3: accepted.
    clock.advance(MINUTE);
    t.backend.alerts.worker.kick();
    await eventually(async () => (await deliveries(t, id))[0].state === 'delivered');
    [delivery] = await deliveries(t, id);
    expect(delivery).toMatchObject({ attempts: 3, response_code: 200, error: null, next_attempt_at: null, max_attempts: 5 });
    expect(delivery.response_ms).toBeGreaterThanOrEqual(0);
    expect(delivery.delivered_at).not.toBeNull();

    // Nothing more, however far the clock goes.
    clock.advance(24 * 60 * MINUTE);
    t.backend.alerts.worker.kick();
    await t.backend.alerts.worker.settled();
    expect(receiver.received).toHaveLength(3);
    expect(receiver.accepted()).toHaveLength(1);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    expect(new Set(receiver.received.map((r) => r.headers['x-mdm-delivery']))).toEqual(new Set([String(delivery.id)]));
    expect(receiver.received[2]!.headers['x-mdm-event']).toBe('webhook.test');
    expect(receiver.received[2]!.headers['content-type']).toBe('application/json');
    expect(receiver.received[2]!.json).toMatchObject({ event: 'webhook.test', data: { webhook: { id, name: 'Ops receiver' } } });

    const list = await t.admin('GET', '/webhooks');
    expect(list.body.items).toEqual([
      expect.objectContaining({
        id,
        name: 'Ops receiver',
        secret_hint: '…6789',
        last_delivery: expect.objectContaining({ state: 'delivered' }),
      }),
    ]);
    expect(JSON.stringify(list.body)).not.toContain(SECRET);
  });

  it('a tampered body or a wrong secret does not verify (the receiver check can fail)', async () => {
    const other = await startWebhookReceiver('another-secret-0123456789', () => 200);
    try {
      const { body: hook } = await t.admin('POST', '/webhooks', { url: other.url, secret: SECRET });
      await t.admin('POST', `/webhooks/${hook.id}/test`);
      await eventually(() => other.received.length === 1);
      expect(other.received[0]!.verified).toBe(false);
      await t.admin('DELETE', `/webhooks/${hook.id}`);
    } finally {
      await other.close();
    }
  });
});

describe('a webhook whose receiver never answers', () => {
  const clock = testClock();
  let t: TestBackend;
  let silent: WebhookReceiver;
  let healthy: WebhookReceiver;

  beforeAll(async () => {
    silent = await startWebhookReceiver(SECRET, () => 'hang');
    healthy = await startWebhookReceiver(SECRET, () => 204);
    t = await startTestBackend({
      alerts: { now: clock.now, webhooks: { baseDelayMs: MINUTE, maxAttempts: 3, timeoutMs: 3000 } },
    });
  });
  afterAll(async () => {
    await t.stop();
    await silent.close();
    await healthy.close();
  });

  it('times out, is retried with back-off, then is marked failed; other webhooks are delivered meanwhile', async () => {
    const { body: hung } = await t.admin('POST', '/webhooks', { url: silent.url, secret: SECRET, name: 'Black hole' });
    const { body: fine } = await t.admin('POST', '/webhooks', { url: healthy.url, secret: SECRET, name: 'Fine' });

    await t.admin('POST', `/webhooks/${hung.id}/test`);
    await eventually(() => silent.received.length === 1);
    // While that attempt hangs, another webhook's delivery goes through.
    await t.admin('POST', `/webhooks/${fine.id}/test`);
    await eventually(async () => (await deliveries(t, fine.id))[0].state === 'delivered');
    expect((await deliveries(t, hung.id))[0].state).toBe('sending');

    // The time-out ends attempt 1; the next waits for the back-off.
    await eventually(async () => (await deliveries(t, hung.id))[0].state === 'queued', 15_000);
    let [delivery] = await deliveries(t, hung.id);
    expect(delivery).toMatchObject({ attempts: 1, response_code: null, error: 'no answer within 3000 ms' });

    clock.advance(MINUTE);
    t.backend.alerts.worker.kick();
    await eventually(
      async () => (await deliveries(t, hung.id))[0].attempts === 2 && (await deliveries(t, hung.id))[0].state === 'queued',
      15_000,
    );
    clock.advance(2 * MINUTE);
    t.backend.alerts.worker.kick();
    await eventually(async () => (await deliveries(t, hung.id))[0].state === 'failed', 15_000);
    [delivery] = await deliveries(t, hung.id);
    expect(delivery).toMatchObject({
      attempts: 3,
      response_code: null,
      next_attempt_at: null,
      error: 'no answer within 3000 ms (gave up after 3 attempts)',
    });
    expect(silent.received).toHaveLength(3);
    expect(silent.received.every((r) => r.verified)).toBe(true);

    clock.advance(24 * 60 * MINUTE);
    t.backend.alerts.worker.kick();
    await t.backend.alerts.worker.settled();
    expect(silent.received).toHaveLength(3);
    const failed = await t.admin('GET', '/events?limit=50');
    expect(failed.body.items.map((e: any) => e.type)).toContain('webhook.failed');
  });
});

describe('the delivery queue is in the database', () => {
  it('a delivery waiting for its retry when the server stops is sent after the restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-webhook-restart-'));
    const clock = testClock();
    // Nothing listens there yet: the first attempt is refused.
    const placeholder = await startWebhookReceiver(SECRET);
    const port = placeholder.port;
    await placeholder.close();
    const options = { dataDir, alerts: { now: clock.now, webhooks: { baseDelayMs: MINUTE, maxAttempts: 4, timeoutMs: 5000 } } };
    let t = await startTestBackend(options);
    let receiver: WebhookReceiver | undefined;
    try {
      const { body: hook } = await t.admin('POST', '/webhooks', { url: `http://127.0.0.1:${port}/hook`, secret: SECRET });
      await t.admin('POST', `/webhooks/${hook.id}/test`);
      await eventually(
        async () => (await deliveries(t, hook.id))[0].state === 'queued' && (await deliveries(t, hook.id))[0].attempts === 1,
      );
      expect((await deliveries(t, hook.id))[0].error).toBe('connection refused (ECONNREFUSED)');
      await t.stop();

      receiver = await startWebhookReceiver(SECRET, () => 200, port);
      clock.advance(MINUTE);
      t = await startTestBackend(options);
      await eventually(async () => (await deliveries(t, hook.id))[0].state === 'delivered');
      expect((await deliveries(t, hook.id))[0]).toMatchObject({ attempts: 2, response_code: 200 });
      expect(receiver.received).toHaveLength(1);
      expect(receiver.received[0]!.verified).toBe(true);
    } finally {
      await t.stop();
      await receiver?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('webhook settings', () => {
  let t: TestBackend;
  beforeAll(async () => {
    t = await startTestBackend();
  });
  afterAll(async () => {
    await t.stop();
  });

  it('refuses URLs that are not http or https, and short secrets, with a clear 400', async () => {
    for (const url of ['ftp://example.com/hook', 'javascript:alert(1)', 'file:///etc/passwd', 'example.com/hook', 'http://']) {
      const { status, body } = await t.admin('POST', '/webhooks', { url });
      expect(status, url).toBe(400);
      expect(body.message, url).toMatch(/http/i);
    }
    const short = await t.admin('POST', '/webhooks', { url: 'https://example.com/hook', secret: 'short' });
    expect(short.status).toBe(400);
    const patched = await t.admin('PATCH', '/webhooks/999', { enabled: false });
    expect(patched.status).toBe(404);
    expect((await t.admin('GET', '/webhooks')).body.items).toEqual([]);
  });

  it('draws a secret when none is given and shows it once; the audit trail and events never hold a secret', async () => {
    const created = await t.admin('POST', '/webhooks', { url: 'https://hooks.example.com/in?token=abc123secretvalue' });
    expect(created.status).toBe(201);
    const drawn = created.body.secret as string;
    expect(drawn.length).toBeGreaterThanOrEqual(32);
    expect(created.body.secret_hint).toBe(`…${drawn.slice(-4)}`);
    const id = created.body.id as number;
    expect(JSON.stringify((await t.admin('GET', '/webhooks')).body)).not.toContain(drawn);

    const changed = await t.admin('PATCH', `/webhooks/${id}`, { secret: 'a-new-secret-of-enough-length', enabled: false });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ enabled: false, secret_hint: '…ngth' });
    expect((await t.admin('POST', `/webhooks/${id}/test`)).status).toBe(409);
    expect((await t.admin('DELETE', `/webhooks/${id}`)).status).toBe(200);

    const audit = await t.admin('GET', '/audit?limit=50');
    const entries = (audit.body.items as any[]).filter((e) => e.action.startsWith('webhook.'));
    expect(entries.map((e) => e.action).sort()).toEqual(['webhook.created', 'webhook.deleted', 'webhook.updated']);
    const updated = entries.find((e) => e.action === 'webhook.updated');
    expect(updated.changes.secret_hint).toEqual({ before: `…${drawn.slice(-4)}`, after: '…ngth' });
    const added = entries.find((e) => e.action === 'webhook.created');
    expect(added.changes.secret).toEqual({ before: null, after: '[redacted]' });
    expect(added.changes.url.after).toBe('https://hooks.example.com/in?token=[redacted]');
    expect(updated.changes.enabled).toEqual({ before: true, after: false });
    const everything = JSON.stringify(audit.body) + JSON.stringify((await t.admin('GET', '/events?limit=100')).body);
    expect(everything).not.toContain(drawn);
    expect(everything).not.toContain('a-new-secret-of-enough-length');
    expect(everything).not.toContain('abc123secretvalue');
  });
});
