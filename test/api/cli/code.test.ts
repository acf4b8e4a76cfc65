// The enrollment-code commands against a real `serve`, and the simulator enrolling with a code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runCli, startServe, type RunningServe } from '../../helpers/cli.ts';
let serve: RunningServe;
let dataDir: string;
const cli = (args: string[]) => runCli(dataDir, args);

async function json(args: string[]) {
  const result = await cli([...args, '--json']);
  expect(result.code, result.stdout + result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}

beforeAll(async () => {
  serve = await startServe('mdm-code-cli-');
  dataDir = serve.dataDir;
});

afterAll(() => serve?.stop('SIGTERM'));

describe('code commands', () => {
  it('code create prints deeplink, token and user_token; the simulator enrolls people with it; approve and reject; rotate and revoke', async () => {
    await json(['fleet', 'add', 'Lobby']);
    const code = await json([
      'code',
      'create',
      '--name',
      'Lobby poster',
      '--fleet',
      'Lobby',
      '--domain',
      'example.com',
      '--domain',
      'example.org',
      '--max-uses',
      '5',
      '--days',
      '10',
      '--approval',
      'manual',
    ]);
    expect(code).toMatchObject({
      name: 'Lobby poster',
      fleet: 'Lobby',
      domains: ['example.com', 'example.org'],
      max_uses: 5,
      approval: 'manual',
      status: 'active',
    });
    for (const key of ['deeplink', 'token', 'user_token']) expect(typeof code[key]).toBe('string');

    // Manual approval: enrolled, but the broker refuses it until approved.
    const first = await cli(['agent', '--deeplink', code.deeplink, '--email', 'ann@example.com', '--serial', 'CODE-CLI-1']);
    expect(first.code).toBe(1);
    expect(first.stdout).toMatch(/PluginMdmAgent/);
    expect(first.stdout).toContain('an administrator must approve this device');
    const refusedDomain = await cli([
      'agent',
      '--deeplink',
      code.deeplink,
      '--email',
      'ann@elsewhere.test',
      '--serial',
      'CODE-CLI-2',
    ]);
    expect(refusedDomain.code).toBe(1);
    expect(refusedDomain.stdout + refusedDomain.stderr).toContain('this code is for addresses at @example.com, @example.org');

    const agents = await json(['agents']);
    const pending = agents.find((agent: { serial: string }) => agent.serial === 'CODE-CLI-1');
    expect(pending).toMatchObject({ enroll_status: 'pending_approval', email: 'ann@example.com', fleet: 'Lobby' });
    expect(await json(['approve', String(pending.id)])).toMatchObject({ id: pending.id, enroll_status: 'enrolled' });
    const again = await cli(['agent', '--deeplink', code.deeplink, '--email', 'ann@example.com', '--serial', 'CODE-CLI-1']);
    expect(again.code).toBe(0); // enrolling the same device again keeps it approved (issue 19): it connects
    expect((await json(['agents'])).find((agent: { id: number }) => agent.id === pending.id)).toMatchObject({
      enroll_status: 'enrolled',
    });
    const bad = await cli(['approve', String(pending.id)]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('is not waiting for approval');

    await cli(['agent', '--deeplink', code.deeplink, '--email', 'bob@example.org', '--serial', 'CODE-CLI-3']);
    const bob = (await json(['agents'])).find((agent: { serial: string }) => agent.serial === 'CODE-CLI-3');
    expect(await json(['reject', String(bob.id)])).toMatchObject({ enroll_status: 'rejected' });

    const listed = await json(['codes']);
    expect(listed.find((c: { id: number }) => c.id === code.id)).toMatchObject({ uses: 3, max_uses: 5 });

    const rotated = await json(['code', 'rotate', String(code.id)]);
    expect(rotated.token).not.toBe(code.token);
    const stale = await cli([
      'agent',
      '--deeplink',
      code.deeplink,
      '--email',
      'cy@example.com',
      '--serial',
      'CODE-CLI-4',
      '--no-mqtt',
    ]);
    expect(stale.code).toBe(1);
    expect(await json(['code', 'revoke', String(code.id)])).toMatchObject({ status: 'revoked' });
    const revoked = await cli([
      'agent',
      '--deeplink',
      rotated.deeplink,
      '--email',
      'cy@example.com',
      '--serial',
      'CODE-CLI-4',
      '--no-mqtt',
    ]);
    expect(revoked.stdout + revoked.stderr).toContain('This enrollment code has been revoked');

    const usage = await cli(['code', 'create', '--approval', 'sometimes', '--name', 'x']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--approval must be manual or auto');

    // Auto approval and no limits: the simulator connects to the broker like any agent.
    const open = await json(['code', 'create', '--name', 'Open door']);
    expect(open).toMatchObject({ max_uses: null, expires_at: null, approval: 'auto', domains: [] });
    const enrolled = await cli(['agent', '--deeplink', open.deeplink, '--email', 'dee@anywhere.test', '--serial', 'CODE-CLI-5']);
    expect(enrolled.code, enrolled.stdout + enrolled.stderr).toBe(0);
  }, 240_000); // some fifteen CLI processes, each a Node start
});
