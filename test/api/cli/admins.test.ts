// The CLI managing admins (issue 22, item 6): `admins`, `admin add` (emailed through a real SMTP
// server, or the link printed with --no-email), `admin set`, `admin invite-again`,
// `admin disable|enable|delete`, all with --json; clear errors. A real `serve`, each command its own process.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, runCli, startServe, type RunningServe } from '../../helpers/cli.ts';
import { eventually, startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';

const run = promisify(execFile);
let serve: RunningServe;
let smtp: TestSmtp;

beforeAll(async () => {
  smtp = await startTestSmtp();
  serve = await startServe('mdm-cli-admins-', { untilBanner: true, extraArgs: ['--smtp-url', smtp.url()] });
});
afterAll(async () => {
  serve?.stop('SIGKILL');
  await smtp?.close();
});

const cli = (args: string[]) => runCli(serve.dataDir, args);
async function cliWithToken(token: string, args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--data-dir', serve.dataDir], {
      env: { ...process.env, MDM_CONSOLE_TOKEN: token },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
const listed = async () =>
  JSON.parse((await cli(['admins', '--json'])).stdout) as { id: number; email: string; role: string; status: string }[];

describe('admins from the CLI', { timeout: 180_000 }, () => {
  it('admin add --no-email prints the set-up link; without it the link is emailed; admins lists both', async () => {
    const added = await cli(['admin', 'add', 'bo@example.org', '--role', 'operator', '--name', 'Bo Díaz', '--no-email']);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^bo@example\.org invited as operator; no email sent\. Hand over this set-up link/);
    const link = /http:\/\/127\.0\.0\.1:\d+\/set-password\?token=[0-9a-f]{64}/.exec(added.stdout)?.[0];
    expect(link, added.stdout).toBeDefined();
    expect((await fetch(link!.replace('/set-password?', '/auth/invitation?'))).status).toBe(200);

    const emailed = await cli(['admin', 'add', 'cy@example.org', '--role', 'observer', '--json']);
    expect(emailed.code, emailed.stderr).toBe(0);
    expect(JSON.parse(emailed.stdout)).toMatchObject({
      setup_url: null,
      email_queued: true,
      account: { email: 'cy@example.org', status: 'invited' },
    });
    const mail = await eventually(() => smtp.received.find((m) => m.envelope.to.includes('cy@example.org')), 20_000, 'the email');
    expect(mail.parsed.text).toMatch(/\/set-password\?token=[0-9a-f]{64}/);

    const text = await eventually(
      async () => {
        const out = (await cli(['admins'])).stdout;
        return /cy@example\.org .* email sent\)/.test(out) ? out : null;
      },
      30_000,
      'admins to show the email sent',
    );
    expect(text).toMatch(/#1 {2}\(no email: this computer’s user\) {2}\S+ {2}owner {2}active {2}two-factor off {2}last sign-in/);
    expect(text).toMatch(
      /#\d+ {2}bo@example\.org {2}Bo Díaz {2}operator {2}invited {2}two-factor off {2}last sign-in never {2}\(link until \d{4}-\d{2}-\d{2} \d{2}:\d{2}; no email \(link handed over\)\)/,
    );
    expect((await listed()).map((a) => [a.email, a.status])).toEqual([
      [null, 'active'],
      ['bo@example.org', 'invited'],
      ['cy@example.org', 'invited'],
    ]);
  });

  it('admin set, invite-again, disable, enable and delete, by email (any case) or #id', async () => {
    const set = await cli(['admin', 'set', 'BO@example.org', '--role', 'admin']);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout.trim()).toBe('bo@example.org: role operator → admin');
    const again = await cli(['admin', 'invite-again', 'bo@example.org', '--no-email', '--days', '2']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('The previous link no longer works.');

    const disabled = await cli(['admin', 'disable', 'bo@example.org', '--json']);
    expect(disabled.code, disabled.stderr).toBe(0);
    expect(JSON.parse(disabled.stdout)).toMatchObject({ email: 'bo@example.org', status: 'disabled' });
    const bo = (await listed()).find((a) => a.email === 'bo@example.org')!;
    const enabled = await cli(['admin', 'enable', `#${bo.id}`]);
    expect(enabled.stdout.trim()).toBe('bo@example.org enabled: their API tokens work again; they sign in anew');
    const reset = await cli(['admin', 'reset-two-factor', 'bo@example.org']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout.trim()).toBe(
      'bo@example.org: two-factor sign-in reset (their authenticator and recovery codes no longer work)',
    );
    // Scoped to fleets: an observer of the default fleet, by name; promoted to admin, the scope goes.
    const scoped = await cli([
      'admin',
      'add',
      'dee@example.org',
      '--role',
      'observer',
      '--fleet',
      'default FLEET',
      '--no-email',
      '--json',
    ]);
    expect(scoped.code, scoped.stderr).toBe(0);
    expect(JSON.parse(scoped.stdout).account).toMatchObject({ role: 'observer', fleet_ids: [1] });
    const promoted = await cli(['admin', 'set', 'dee@example.org', '--role', 'admin']);
    expect(promoted.stdout.trim()).toBe('dee@example.org: role observer → admin');
    const unknownFleet = await cli(['admin', 'set', 'dee@example.org', '--role', 'operator', '--fleet', 'Nowhere']);
    expect(unknownFleet.code).toBe(2);
    expect(unknownFleet.stderr).toMatch(/Unknown fleet "Nowhere" \(fleets: Default fleet\)/);
    const deleted = await cli(['admin', 'delete', 'bo@example.org', '--json']);
    expect(JSON.parse(deleted.stdout)).toEqual({ deleted: true, id: bo.id, email: 'bo@example.org' });
    expect((await listed()).map((a) => a.email)).not.toContain('bo@example.org');
  });

  it('says what is wrong: a bad role, an unknown admin, a refused change, a token of too low a role', async () => {
    const badRole = await cli(['admin', 'add', 'dee@example.org', '--role', 'root']);
    expect(badRole.code).toBe(2);
    expect(badRole.stderr.trim()).toBe('mdm-console: admin add needs --role owner|admin|operator|observer, not "root"');
    const noRole = await cli(['admin', 'set', 'cy@example.org']);
    expect(noRole.stderr.trim()).toBe('mdm-console: admin set needs --role owner|admin|operator|observer');
    const unknown = await cli(['admin', 'disable', 'nobody@example.org']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toBe('mdm-console: No admin nobody@example.org: see mdm-console admins');
    const self = await cli(['admin', 'delete', '#1']);
    expect(self.code).toBe(2);
    expect(self.stderr).toMatch(/You cannot delete your own account: ask another owner to do it\./);
    const taken = await cli(['admin', 'add', 'cy@example.org', '--role', 'admin']);
    expect(taken.stderr).toMatch(/cy@example\.org is already invited/);
    const badEmail = await cli(['admin', 'add', 'not-an-email', '--role', 'admin']);
    expect(badEmail.code).toBe(2);
    expect(badEmail.stderr.trim()).toBe('mdm-console: "not-an-email" is not an email address');
    const action = await cli(['admin', 'promote', 'cy@example.org']);
    expect(action.stderr).toMatch(/Unknown admin action "promote"\nusage: admin add EMAIL/);

    // An admin's token (not an owner's) may not manage admins.
    const created = await cli(['token', 'create', '--name', 'admin script', '--role', 'admin']);
    const token = /\b(mdm_[0-9a-f]{64})\b/.exec(created.stdout)![1]!;
    const refused = await cliWithToken(token, ['admin', 'add', 'eve@example.org', '--role', 'observer']);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toBe(
      'mdm-console: not allowed: An admin cannot manage accounts: needs accounts.manage (with the API token in MDM_CONSOLE_TOKEN)',
    );
    expect((await listed()).map((a) => a.email)).not.toContain('eve@example.org');
  });
});
