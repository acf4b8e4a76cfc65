import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import PostalMime from 'postal-mime';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually, startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';

// An admin's invitation email goes through the mail room's own queue, transports, retries and
// outbox: greylisted (451) it is retried, also across a restart (its link's secret waits in the
// queue until the message is out); without SMTP it is an .eml file in the outbox. Real SMTP
// servers (smtp-server) on loopback; the back-off shortened so the retry runs within the test.

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function backend(extra: Parameters<typeof startTestBackend>[0] = {}): Promise<TestBackend> {
  const t = await startTestBackend(extra);
  cleanup.push(() => t.stop());
  return t;
}

async function smtp(options: Parameters<typeof startTestSmtp>[0] = {}) {
  const s = await startTestSmtp(options);
  cleanup.push(() => s.close());
  return s;
}

const delivery = (t: TestBackend, email: string, until: (d: any) => boolean, what: string) =>
  eventually(
    async () => {
      const row = (await t.admin('GET', '/accounts')).body.items.find((a: { email: string }) => a.email === email);
      const found = row?.invitation?.delivery;
      return found && until(found) ? found : null;
    },
    30_000,
    what,
  );

const linkIn = (text: string) => /http:\/\/\S+\/set-password\?token=([0-9a-f]{64})/.exec(text);

describe("an admin's invitation email", () => {
  it('greylisted (451): retried at its time, kept across a restart, then sent once with a link that works', async () => {
    const server: TestSmtp = await smtp({ greylist: true });
    const dir = mkdtempSync(join(tmpdir(), 'mdm-admin-invite-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const timing = { retryPolicy: { delaysMs: [3_000, 3_000] } };
    const first = await startTestBackend({ dataDir: dir, smtpUrl: server.url(), mailTiming: timing });
    const invited = await first.admin('POST', '/accounts', { email: 'grey.admin@example.org', role: 'admin' });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);

    const waiting = await delivery(
      first,
      'grey.admin@example.org',
      (d) => d.state === 'queued' && d.retry_at,
      'a scheduled retry',
    );
    expect(waiting).toMatchObject({ attempts: 1 });
    expect(waiting.error).toMatch(/451 .*Greylisted/);
    expect(server.received).toHaveLength(0);
    await first.stop();

    const second = await backend({ dataDir: dir, smtpUrl: server.url(), mailTiming: timing });
    const sent = await delivery(second, 'grey.admin@example.org', (d) => d.state === 'sent', 'sent by the retry');
    expect(sent).toMatchObject({ attempts: 2, error: null, retry_at: null });
    const mails = server.received.filter((m) => m.envelope.to.includes('grey.admin@example.org'));
    expect(mails).toHaveLength(1);
    // The link names the admin listener of the run that sent it, and works there.
    const link = linkIn(mails[0]!.parsed.text ?? '')!;
    expect(link[0].startsWith(`${second.backend.info.admin_url}/set-password?token=`)).toBe(true);
    const info = await fetch(`${second.backend.info.admin_url}/auth/invitation?token=${link[1]}`);
    expect(info.status).toBe(200);
    // Sent: the queue no longer keeps the secret.
    expect(second.db.prepare(`SELECT count(*) FROM admin_invite_deliveries WHERE token IS NOT NULL`).pluck().get()).toBe(0);
    const types = ((await second.admin('GET', '/events?limit=50')).body.items as { type: string }[]).map((e) => e.type);
    expect(types).toContain('account.invitation_sent');
  });

  it('without SMTP: written to the outbox as an owner-only .eml file carrying the link', async () => {
    const t = await backend();
    await t.admin('POST', '/accounts', { email: 'offline.admin@example.org', role: 'observer', display_name: 'Off <Line>' });
    const done = await delivery(
      t,
      'offline.admin@example.org',
      (d) => d.state === 'outbox' || d.state === 'failed',
      'the outbox',
    );
    expect(done.state).toBe('outbox');
    const file = t.db.prepare(`SELECT outbox_file FROM admin_invite_deliveries`).pluck().get() as string;
    expect(file.startsWith(join(t.dataDir, 'outbox'))).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const parsed = await PostalMime.parse(readFileSync(file));
    expect(parsed.to?.map((a) => ('address' in a ? a.address : ''))).toEqual(['offline.admin@example.org']);
    expect(parsed.text).toContain('Hello Off <Line>,');
    expect(parsed.html).toContain('Hello Off &#60;Line&#62;,');
    expect(parsed.text).toContain('as an observer (read only)');
    const link = linkIn(parsed.text ?? '')!;
    expect((await fetch(`${t.backend.info.admin_url}/auth/invitation?token=${link[1]}`)).status).toBe(200);
  });
});
