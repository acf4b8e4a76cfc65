// `mdm-console console [--as EMAIL]` (issue 22, item 3): the one-time link signs in as the owner,
// or as the admin named; an unknown email is a clear error and no link. A real `serve`, the CLI as
// its own process, the link opened over HTTP.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type RunningServe } from '../../helpers/cli.ts';

let serve: RunningServe;
let adminUrl = '';
let token = '';

beforeAll(async () => {
  serve = await startServe('mdm-cli-console-as-', { untilBanner: true });
  adminUrl = (JSON.parse(readFileSync(join(serve.dataDir, 'server.json'), 'utf8')) as { admin_url: string }).admin_url;
  token = readFileSync(join(serve.dataDir, 'admin-token'), 'utf8').trim();
  // A second admin, invited without email (the link is not used: the console link signs in all the same).
  const invited = await fetch(`${adminUrl}/api/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'bo.berg@example.org', role: 'operator', display_name: 'Bo Berg', no_email: true }),
  });
  expect(invited.status).toBe(201);
});
afterAll(() => serve?.stop('SIGKILL'));

const cli = (args: string[]) => runCli(serve.dataDir, args);
/** Opens a sign-in link as a browser would; who the session it set is. */
async function signedInAs(link: string): Promise<{ email: string | null; role: string }> {
  const opened = await fetch(link, { redirect: 'manual' });
  expect(opened.status).toBe(302);
  expect(opened.headers.get('location')).toBe('/');
  const cookie = /mdm_console=([0-9a-f]{64})/.exec(opened.headers.get('set-cookie') ?? '')?.[1];
  expect(cookie).toBeDefined();
  const me = await fetch(`${adminUrl}/api/me`, { headers: { cookie: `mdm_console=${cookie}` } });
  const body = (await me.json()) as { account: { email: string | null }; role: string };
  return { email: body.account.email, role: body.role };
}

describe('cli console', { timeout: 120_000 }, () => {
  it('signs in as the owner by default, and as the admin named with --as', async () => {
    const owner = await cli(['console']);
    expect(owner.code, owner.stderr).toBe(0);
    const ownerLink = /(http:\/\/\S+\/auth\?ticket=[0-9a-f]{48})/.exec(owner.stdout)?.[1];
    expect(ownerLink, owner.stdout).toBeDefined();
    expect(await signedInAs(ownerLink!)).toMatchObject({ role: 'owner' });

    const bo = await cli(['console', '--as', 'Bo.Berg@example.org', '--json']);
    expect(bo.code, bo.stderr).toBe(0);
    const { console_url } = JSON.parse(bo.stdout) as { console_url: string };
    expect(await signedInAs(console_url)).toEqual({ email: 'bo.berg@example.org', role: 'operator' });
    // Once only.
    const again = await fetch(console_url, { redirect: 'manual' });
    expect(again.headers.get('location')).toBe('/sign-in?link=used');

    const human = await cli(['console', '--as', 'bo.berg@example.org']);
    expect(human.stdout).toContain('Open this link once to sign in to the console as bo.berg@example.org:');
  });

  it('refuses an unknown email clearly, with no link', async () => {
    const unknown = await cli(['console', '--as', 'nobody@example.org']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('mdm-console: No admin has the email nobody@example.org\n');
    expect(unknown.stdout).toBe('');
    const empty = await cli(['console', '--as', ' ']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('--as needs the email of an admin');
  });
});
