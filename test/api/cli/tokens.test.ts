// The CLI with personal API tokens (issue 22, items 1 and 6): `whoami`, `token create` (printed
// once), `tokens`, `token revoke`, and any command run with MDM_CONSOLE_TOKEN acting as that token;
// a revoked one is refused with the server's reason. A real `serve`, each command its own process.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, runCli, startServe, type RunningServe } from '../../helpers/cli.ts';

const run = promisify(execFile);
let serve: RunningServe;

beforeAll(async () => {
  serve = await startServe('mdm-cli-tokens-', { untilBanner: true });
});
afterAll(() => serve?.stop('SIGKILL'));

const cli = (args: string[]) => runCli(serve.dataDir, args);
/** A command run with MDM_CONSOLE_TOKEN set, as a script holding a personal token would. */
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

// Each command is a process of its own: on a busy machine a test of six of them takes a while.
describe('API tokens from the CLI', { timeout: 120_000 }, () => {
  it('serve prints the one-time set-up link; the data dir token acts as the owner', async () => {
    expect(serve.output()).toMatch(/Set up the owner:\s+http:\/\/127\.0\.0\.1:\d+\/setup\?token=[0-9a-f]{48}/);
    const me = await cli(['whoami', '--json']);
    expect(me.code, me.stderr).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ role: 'owner', via: 'token', token: { name: 'admin token (data dir)' } });
  });

  it('token create prints the token once; with it the CLI acts as that token; revoked, it is refused', async () => {
    const created = await cli(['token', 'create', '--name', 'helpdesk laptop', '--role', 'operator', '--days', '7']);
    expect(created.code, created.stderr).toBe(0);
    const token = /\b(mdm_[0-9a-f]{64})\b/.exec(created.stdout)?.[1];
    expect(token, created.stdout).toBeDefined();
    expect(created.stdout).toContain('shown this once');

    const me = await cliWithToken(token!, ['whoami']);
    expect(me.code, me.stderr).toBe(0);
    expect(me.stdout).toContain('operator (API token');
    expect(me.stdout).toContain('"helpdesk laptop"');
    // What the role may not do, in the words the refusals use.
    expect(me.stdout).toMatch(/\ncannot: .*wipe devices; unenroll devices; delete devices/);
    expect(me.stdout).not.toMatch(/cannot: .*lock or unlock devices/);
    // It does what an operator may (read, lock), and is told in one line what it may not.
    expect((await cliWithToken(token!, ['agents'])).code).toBe(0);
    const lock = await cliWithToken(token!, ['command', '999', 'lock']);
    expect(lock.code).toBe(2);
    expect(lock.stderr).not.toContain('not allowed');
    const wipe = await cliWithToken(token!, ['command', '999', 'wipe']);
    expect(wipe.code).toBe(2);
    expect(wipe.stderr).toBe(
      'mdm-console: not allowed: An operator cannot wipe devices: needs devices.wipe (with the API token in MDM_CONSOLE_TOKEN)\n',
    );
    const higher = await cliWithToken(token!, ['token', 'create', '--name', 'mine', '--role', 'admin']);
    expect(higher.code).toBe(2);
    expect(higher.stderr).toBe(
      'mdm-console: not allowed: An operator cannot make a token with the role admin (with the API token in MDM_CONSOLE_TOKEN)\n',
    );
    // A sign-in link signs in as the owner: only the owner may make one.
    const link = await cliWithToken(token!, ['console']);
    expect(link.code).toBe(2);
    expect(link.stderr).toContain('An operator cannot manage accounts: needs accounts.manage');
    expect(link.stderr.trim().split('\n')).toHaveLength(1);

    const listed = await cli(['tokens', '--json']);
    const rows = JSON.parse(listed.stdout) as { id: number; name: string; last_used_at: string | null }[];
    const row = rows.find((r) => r.name === 'helpdesk laptop')!;
    expect(row.last_used_at).not.toBeNull();
    expect(listed.stdout).not.toContain(token);
    expect((await cli(['tokens'])).stdout).toMatch(/#\d+ {2}helpdesk laptop {2}operator {2}active/);

    const revoked = await cli(['token', 'revoke', String(row.id)]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(`API token #${row.id} "helpdesk laptop" revoked`);
    const refused = await cliWithToken(token!, ['agents']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('not the admin token nor a live API token (unknown, revoked or expired)');
  });

  it('audit shows who did what with which token, filtered, and as JSON', async () => {
    const json = await cli(['audit', '--actor', 'admin token', '--json']);
    expect(json.code, json.stderr).toBe(0);
    const entries = JSON.parse(json.stdout) as { action: string; token_name: string | null; address: string }[];
    expect(entries.map((e) => e.action)).toEqual(['account.token_revoked', 'account.token_created']);
    expect(entries.every((e) => e.token_name === 'admin token (data dir)' && e.address === '127.0.0.1')).toBe(true);
    const revoked = await cli(['audit', '--action', 'account.token_revoked']);
    expect(revoked.stdout).toContain('account.token_revoked');
    expect(revoked.stdout).toContain('from 127.0.0.1');
    expect(revoked.stdout).toContain('API token "helpdesk laptop" revoked');
    const bad = await cli(['audit', '--since', 'yesterday']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).not.toMatch(/at .*\.ts:\d+/);
  });

  it('token create --fleet scopes an operator or observer token to those fleets (by name or id)', async () => {
    expect((await cli(['fleet', 'add', 'North'])).code).toBe(0);
    expect((await cli(['fleet', 'add', 'South'])).code).toBe(0);
    const fleets = JSON.parse((await cli(['fleets', '--json'])).stdout) as { id: number; name: string }[];
    const north = fleets.find((f) => f.name === 'North')!.id;
    const south = fleets.find((f) => f.name === 'South')!.id;
    const created = await cli([
      'token',
      'create',
      '--name',
      'desks',
      '--role',
      'observer',
      '--fleet',
      'north',
      '--fleet',
      String(south),
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const token = JSON.parse(created.stdout) as { token: string; fleet_ids: number[] };
    expect(token.fleet_ids).toEqual([north, south].sort((a, b) => a - b));
    const me = await cliWithToken(token.token, ['whoami']);
    expect(me.stdout).toContain('scoped to fleets: North, South');
    expect((await cli(['tokens'])).stdout).toMatch(/desks .* fleets #\d+, #\d+/);
    // An admin token cannot be scoped; an unknown fleet is named.
    const admin = await cli(['token', 'create', '--name', 'x', '--role', 'admin', '--fleet', 'North']);
    expect(admin.code).toBe(2);
    expect(admin.stderr).toContain('only operators and observers');
    const unknown = await cli(['token', 'create', '--name', 'x', '--role', 'observer', '--fleet', 'Nowhere']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Unknown fleet "Nowhere"');
    expect(unknown.stderr).not.toMatch(/at .*\.ts:\d+/);
  });

  it('bad input is a clear error, not a stack trace', async () => {
    const noRole = await cli(['token', 'create', '--name', 'x']);
    expect(noRole.code).toBe(2);
    expect(noRole.stderr).toContain('token create needs --role owner|admin|operator|observer');
    const badRole = await cli(['token', 'create', '--name', 'x', '--role', 'root']);
    expect(badRole.stderr).toContain('not "root"');
    const unknown = await cli(['token', 'revoke', '999']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('No API token 999');
    expect(unknown.stderr).not.toMatch(/at .*\.ts:\d+/);
  });
});
