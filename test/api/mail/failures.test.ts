import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually, startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';

// SMTP down, wrong password, TLS refused: the delivery reads failed with the server's words, the
// invitation is untouched, and a retry goes through once the cause is fixed.

let t: TestBackend;
const servers: TestSmtp[] = [];
let counter = 0;

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t?.stop();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function smtpServer(options: Parameters<typeof startTestSmtp>[0] = {}): Promise<TestSmtp> {
  const server = await startTestSmtp(options);
  servers.push(server);
  return server;
}

const authRequired = (user: string, pass: string): Parameters<typeof startTestSmtp>[0] => ({
  authOptional: false,
  authMethods: ['PLAIN', 'LOGIN'],
  onAuth(auth, _session, callback) {
    if (auth.username === user && auth.password === pass) callback(null, { user });
    else callback(new Error('Invalid username or password'));
  },
});

async function configure(body: Record<string, unknown>) {
  const { status, body: view } = await t.admin('PUT', '/mail/settings', body);
  expect(status, JSON.stringify(view)).toBe(200);
  return view;
}

async function invite() {
  counter += 1;
  const { status, body } = await t.admin('POST', '/invitations', { email: `fail${counter}@example.com` });
  expect(status).toBe(201);
  return body;
}

async function finalDelivery(id: number) {
  return eventually(
    async () => {
      const { body } = await t.admin('GET', `/invitations/${id}`);
      return body.delivery && ['sent', 'failed', 'outbox'].includes(body.delivery.state) ? body : null;
    },
    30_000,
    `a final delivery state of invitation ${id}`,
  );
}

describe('failures and retries', () => {
  it('SMTP down: waits for an automatic retry with the connection error; retry now works once SMTP is back', async () => {
    const probe = await startTestSmtp();
    const port = probe.port;
    await probe.close();
    await configure({ smtp_url: `smtp://127.0.0.1:${port}` });

    const created = await invite();
    const waiting = await eventually(
      async () => {
        const { body } = await t.admin('GET', `/invitations/${created.id}`);
        return body.delivery?.retry_at ? body : null;
      },
      30_000,
      'a scheduled retry',
    );
    expect(waiting.delivery).toMatchObject({ state: 'queued', attempts: 1 });
    expect(waiting.delivery.error).toMatch(/ECONNREFUSED/);
    expect(waiting).toMatchObject({
      status: 'pending',
      invitation_token: created.invitation_token,
      expires_at: created.expires_at,
      deeplink: created.deeplink,
    });

    const back = await smtpServer({ port });
    const retried = await t.admin('POST', '/mail/retry', {});
    expect(retried.status).toBe(202);
    expect(retried.body.queued).toBeGreaterThanOrEqual(1);
    const sent = await finalDelivery(created.id);
    expect(sent.delivery).toMatchObject({ state: 'sent', error: null, retry_at: null, attempts: 2 });
    const mail = await eventually(() => back.received.find((m) => m.invitationId === created.id));
    expect(mail.parsed.text).toContain(created.deeplink);
  });

  it("authentication refused: failed with the server's 535 message; fixed password + retry sends", async () => {
    const server = await smtpServer(authRequired('mailer', 'right-password'));
    await configure({ smtp_url: `smtp://mailer:wrong-password@127.0.0.1:${server.port}` });
    const created = await invite();
    const failed = await finalDelivery(created.id);
    expect(failed.delivery.state).toBe('failed');
    expect(failed.delivery.error).toContain('Invalid username or password');
    expect(failed.delivery.response).toMatch(/^535 /);
    expect(server.received).toHaveLength(0);

    await configure({ smtp_password: 'right-password' });
    const resent = await t.admin('POST', `/invitations/${created.id}/resend`);
    expect(resent.status).toBe(202);
    expect((await finalDelivery(created.id)).delivery.state).toBe('sent');
    expect(server.received.filter((m) => m.invitationId === created.id)).toHaveLength(1);
  });

  it('TLS refused (self-signed certificate): failed with the TLS error; trusting it and retrying sends', async () => {
    // smtp-server's built-in localhost certificate is self-signed.
    const server = await smtpServer({ secure: true, disabledCommands: [] });
    await configure({ smtp_url: `smtps://127.0.0.1:${server.port}` });
    const created = await invite();
    const failed = await finalDelivery(created.id);
    expect(failed.delivery.state).toBe('failed');
    // The built-in certificate is self-signed (and, depending on the clock, expired): refused either way.
    expect(failed.delivery.error).toMatch(/^TLS error: .*certificate/i);
    expect(server.received).toHaveLength(0);

    await configure({ smtp_reject_unauthorized: false });
    const retried = await t.admin('POST', '/mail/retry', { invitation_ids: [created.id] });
    expect(retried.body.queued).toBe(1);
    expect((await finalDelivery(created.id)).delivery.state).toBe('sent');
    expect(server.received.filter((m) => m.invitationId === created.id)).toHaveLength(1);
  });

  it('STARTTLS required but not offered: failed, nothing sent in clear', async () => {
    const server = await smtpServer(); // plain: no STARTTLS advertised
    await configure({ smtp_url: `smtp://127.0.0.1:${server.port}?security=starttls` });
    const created = await invite();
    const failed = await finalDelivery(created.id);
    expect(failed.delivery.state).toBe('failed');
    expect(failed.delivery.error).toMatch(/STARTTLS/i);
    expect(server.received).toHaveLength(0);
  });

  it("a template broken behind the mail API's back fails the send with why, not the invitation", async () => {
    const server = await smtpServer();
    await configure({ smtp_url: `smtp://127.0.0.1:${server.port}` });
    // Both setting routes refuse broken templates, so break it in the store itself; the worker checks too.
    expect((await t.admin('PATCH', '/settings', { mail_subject_template: 'Hi {{nobody}}' })).status).toBe(400);
    await t.backend.services.settings.update({ mail_subject_template: 'Hi {{nobody}}' });
    const created = await invite();
    const failed = await finalDelivery(created.id);
    expect(failed.delivery.error).toMatch(/template is broken.*unknown placeholder "nobody"/);
    expect(failed.status).toBe('pending');
    await configure({ mail_subject_template: '' });
    await t.admin('POST', `/invitations/${created.id}/resend`);
    expect((await finalDelivery(created.id)).delivery.state).toBe('sent');
  });
});

describe('send test email', () => {
  it("answers with the server's reply, and with its refusal (502)", async () => {
    const server = await smtpServer(authRequired('mailer', 'pw'));
    await configure({ smtp_url: `smtp://mailer:pw@127.0.0.1:${server.port}`, mail_from_address: 'console@example.org' });
    const ok = await t.admin('POST', '/mail/test', { to: 'admin@example.org' });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ ok: true, via: 'smtp', accepted: ['admin@example.org'] });
    expect(ok.body.response).toMatch(/^250 /);
    const [mail] = await server.waitFor(1);
    expect(mail!.envelope).toEqual({ from: 'console@example.org', to: ['admin@example.org'] });
    expect(mail!.parsed.subject).toBe('MDM Console test email');

    await configure({ smtp_password: 'nope' });
    const refused = await t.admin('POST', '/mail/test', { to: 'admin@example.org' });
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({ ok: false, error: 'ERROR_MAIL_SEND', code: 'EAUTH', response_code: 535 });
    expect(refused.body.message).toContain('Invalid username or password');
    expect(JSON.stringify(refused.body)).not.toContain('nope');

    expect((await t.admin('POST', '/mail/test', { to: 'not an address' })).status).toBe(400);
  });
});
