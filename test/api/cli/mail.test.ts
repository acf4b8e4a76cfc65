import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminClient } from '../../../src-shared/contract/admin-client.ts';
import type { ServerInfo } from '../../../src-shared/contract/server-info.ts';
import { runCli, startServe, type RunningServe } from '../../helpers/cli.ts';
import { decodeQrPng } from '../../helpers/qr.ts';
import { asBuffer, eventually, startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';

// The "done when", as a user does it: serve --smtp-url, invite from the CLI, read the state;
// SMTP down → waits for an automatic retry; `mail retry` once it is back → sent now.

let serve: RunningServe;
let smtp: TestSmtp;
let smtpPort: number;
const cli = (args: string[]) => runCli(serve.dataDir, args);

/** Polls through the admin API (a CLI process per poll would be slow); the CLI output is checked too. */
function invitation(id: number) {
  const info = JSON.parse(readFileSync(join(serve.dataDir, 'server.json'), 'utf8')) as ServerInfo;
  return adminClient({ baseUrl: info.admin_url, token: info.admin_token }).invitations.get({ params: { id } });
}

beforeAll(async () => {
  smtp = await startTestSmtp();
  smtpPort = smtp.port;
  serve = await startServe('mdm-mail-cli-', {
    timeoutMs: 30_000,
    untilBanner: true,
    extraArgs: ['--mail-from', 'Helpdesk <help@example.org>'],
    env: { ...process.env, MDM_CONSOLE_SMTP_URL: `smtp://127.0.0.1:${smtpPort}` },
  });
});

afterAll(async () => {
  if (serve && serve.process.exitCode === null) {
    const exited = new Promise((resolve) => serve.process.once('exit', resolve));
    serve.process.kill('SIGTERM');
    await exited;
  }
  serve?.stop('SIGTERM');
  await smtp?.close();
});

describe('mail from the command line', () => {
  it('serve names the SMTP server (from MDM_CONSOLE_SMTP_URL) and the sender', () => {
    expect(serve.output()).toContain(`Mail:                  SMTP smtp://127.0.0.1:${smtpPort}`);
    expect(serve.output()).toContain('from Helpdesk <help@example.org>');
    // Started on loopback: the banner says phones cannot reach it, and how to fix it.
    expect(serve.output()).toContain('WARNING: phones cannot reach this server. The public host 127.0.0.1 is a loopback address');
    expect(serve.output()).toMatch(/To fix it: (restart with --public-host \S+|connect this computer)/);
  });

  it('invite --email: the message arrives with a scannable QR code and the state reads sent', async () => {
    const invited = await cli(['invite', '--email', 'cli-user@example.com', '--json']);
    expect(invited.code, invited.stderr).toBe(0);
    // Said before the email is queued, on stderr (the JSON on stdout stays clean).
    expect(invited.stderr).toContain('Warning: phones cannot reach this server. Its public host 127.0.0.1 is a loopback address');
    const created = JSON.parse(invited.stdout);
    const mail = await eventually(() => smtp.received.find((m) => m.invitationId === created.id), 20_000, 'the email');
    expect(mail.parsed.from).toMatchObject({ address: 'help@example.org' });
    const png = mail.parsed.attachments.find((a) => a.disposition === 'attachment')!;
    expect(decodeQrPng(asBuffer(png.content))).toBe(created.deeplink);
    await eventually(async () => (await invitation(created.id))?.delivery?.state === 'sent', 20_000, 'sent');
    const listed = await cli(['invitations']);
    expect(listed.stdout).toMatch(new RegExp(`#${created.id}  cli-user@example.com .* email sent`));
  });

  it('invite --no-email sends nothing; resend ID sends it', async () => {
    const invited = await cli(['invite', '--email', 'quiet-cli@example.com', '--no-email', '--json']);
    const created = JSON.parse(invited.stdout);
    expect(created.delivery).toBeNull();
    const resent = await cli(['resend', String(created.id)]);
    expect(resent.code, resent.stderr).toBe(0);
    expect(resent.stdout).toContain('same link, same expiry');
    await eventually(() => smtp.received.find((m) => m.invitationId === created.id), 20_000, 'the resent email');
  });

  it('SMTP down → waits for a retry, with the reason and when; SMTP back + mail retry → sent', async () => {
    await smtp.close();
    const invited = await cli(['invite', '--email', 'down@example.com', '--json']);
    const created = JSON.parse(invited.stdout);
    const waiting = await eventually(
      async () => {
        const current = await invitation(created.id);
        return current?.delivery?.state === 'queued' && current.delivery.retry_at ? current : null;
      },
      30_000,
      'a scheduled retry',
    );
    expect(waiting.delivery!.error).toMatch(/ECONNREFUSED/);
    expect((await cli(['invitations'])).stdout).toMatch(
      /down@example.com .* email will retry at \d\d:\d\d:\d\d \(last try: .*ECONNREFUSED/,
    );
    expect((await cli(['mail', 'status'])).stdout).toMatch(/1 waiting for a retry; next at \d\d:\d\d:\d\d/);

    smtp = await startTestSmtp({ port: smtpPort });
    const retried = await cli(['mail', 'retry']);
    expect(retried.stdout).toMatch(/^1 failed or waiting email\(s\) queued again/);
    await eventually(async () => (await invitation(created.id))?.delivery?.state === 'sent', 20_000, 'sent after retry');
    expect(smtp.received.filter((m) => m.invitationId === created.id)).toHaveLength(1);

    const test = await cli(['mail', 'test', '--to', 'admin@example.org']);
    expect(test.stdout).toMatch(/^Sent\. Server answered: 250 /);
    const status = await cli(['mail', 'status']);
    expect(status.stdout).toContain(`SMTP smtp://127.0.0.1:${smtpPort}`);
  });
});
