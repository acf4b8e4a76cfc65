import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminClient } from '../../../src-shared/contract/admin-client.ts';
import type { ServerInfo } from '../../../src-shared/contract/server-info.ts';
import { decodeQrPng } from '../../helpers/qr.ts';
import { asBuffer, eventually, startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';

// The "done when", as a user does it: serve --smtp-url, invite from the CLI, read the state;
// SMTP down → waits for an automatic retry; `mail retry` once it is back → sent now.

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../../src-main/cli/main.ts');
let dataDir: string;
let server: ChildProcess;
let output = '';
let smtp: TestSmtp;
let smtpPort: number;

async function cli(args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--data-dir', dataDir], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Polls through the admin API (a CLI process per poll would be slow); the CLI output is checked too. */
function invitation(id: number) {
  const info = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as ServerInfo;
  return adminClient({ baseUrl: info.admin_url, token: info.admin_token }).invitations.get({ params: { id } });
}

beforeAll(async () => {
  smtp = await startTestSmtp();
  smtpPort = smtp.port;
  dataDir = mkdtempSync(join(tmpdir(), 'mdm-mail-cli-'));
  server = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--data-dir',
      dataDir,
      '--port',
      '0',
      '--admin-port',
      '0',
      '--mqtt-port',
      '0',
      '--mqtt-tls-port',
      '0',
      '--public-host',
      '127.0.0.1',
      '--host',
      '127.0.0.1',
      '--mail-from',
      'Helpdesk <help@example.org>',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MDM_CONSOLE_SMTP_URL: `smtp://127.0.0.1:${smtpPort}` } },
  );
  server.stdout!.on('data', (chunk) => (output += chunk));
  server.stderr!.on('data', (chunk) => (output += chunk));
  await eventually(() => existsSync(join(dataDir, 'server.json')) && output.includes('Press Ctrl+C'), 30_000, 'serve to start');
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
  await smtp?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('mail from the command line', () => {
  it('serve names the SMTP server (from MDM_CONSOLE_SMTP_URL) and the sender', () => {
    expect(output).toContain(`Mail:                  SMTP smtp://127.0.0.1:${smtpPort}`);
    expect(output).toContain('from Helpdesk <help@example.org>');
    // Started on loopback: the banner says phones cannot reach it, and how to fix it.
    expect(output).toContain('WARNING: phones cannot reach this server. The public host 127.0.0.1 is a loopback address');
    expect(output).toMatch(/To fix it: (restart with --public-host \S+|connect this computer)/);
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
