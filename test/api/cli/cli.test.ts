import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runCli, startServe, type RunningServe } from '../../helpers/cli.ts';
let serve: RunningServe;
let dataDir: string;
let server: ChildProcess;
const cli = (args: string[]) => runCli(dataDir, args);

beforeAll(async () => {
  serve = await startServe('mdm-cli-');
  ({ dataDir, process: server } = serve);
});

afterAll(() => serve?.stop('SIGKILL'));

describe('serve + CLI + simulator, as a user runs them', () => {
  it('serve prints where everything is and writes server.json (0600)', async () => {
    await serve.waitFor(() => serve.output().includes('Press Ctrl+C'), 'the banner');
    const info = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8'));
    for (const key of ['api_url', 'deeplink_url', 'admin_url', 'admin_token', 'mqtt_port', 'pid', 'console_url'])
      expect(info).toHaveProperty(key);
    expect(info.pid).toBe(server.pid);
    expect(statSync(join(dataDir, 'server.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'admin-token')).mode & 0o777).toBe(0o600);
    for (const file of ['mdm-console.sqlite', 'mdm-console.sqlite-wal'])
      expect(statSync(join(dataDir, file)).mode & 0o777, file).toBe(0o600);
    expect(serve.output()).toContain(info.api_url);
    expect(serve.output()).toContain(`${info.deeplink_url}/deeplink/`);
    expect(serve.output()).not.toContain(info.admin_token);
  });

  it('invite, enroll with the simulator, list agents, download a file', async () => {
    const invited = await cli(['invite', '--email', 'Carol@Example.com', '--firstname', 'Carol', '--days', '3', '--json']);
    expect(invited.code, invited.stderr).toBe(0);
    const invitation = JSON.parse(invited.stdout);
    for (const key of ['id', 'email', 'status', 'expires_at', 'deeplink', 'invitation_token', 'user_token'])
      expect(invitation).toHaveProperty(key);
    expect(invitation.email).toBe('carol@example.com');
    expect(invitation.status).toBe('pending');

    const payload = Buffer.alloc(300_000);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 7919) % 251;
    const path = join(dataDir, 'manual ü.bin');
    writeFileSync(path, payload);
    const added = await cli(['file', 'add', path, '--json']);
    expect(added.code, added.stderr).toBe(0);
    const file = JSON.parse(added.stdout);
    expect(file).toMatchObject({ name: 'manual ü.bin', size: payload.length });
    expect(Number.isInteger(file.id)).toBe(true);

    const enrolled = await cli([
      'agent',
      '--deeplink',
      invitation.deeplink,
      '--email',
      'carol@example.com',
      '--serial',
      'CLI-0001',
      '--download',
      `file:${file.id}`,
    ]);
    expect(enrolled.code, enrolled.stdout + enrolled.stderr).toBe(0);
    expect(enrolled.stdout).toMatch(/initSession/);
    expect(enrolled.stdout).toMatch(/PluginMdmAgent/);

    const listed = await cli(['agents', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    const agents = JSON.parse(listed.stdout);
    const agent = agents.find((a: { serial: string }) => a.serial === 'CLI-0001');
    // The simulator connected to the broker after enrolling, then left: offline, with a last contact.
    expect(agent).toMatchObject({ name: 'CLI-0001', enroll_status: 'enrolled', fleet: 'Default fleet', is_online: false });
    expect(Date.parse(agent.last_contact)).not.toBeNaN();
    expect(Number.isInteger(agent.id)).toBe(true);

    const again = await cli(['agent', '--deeplink', invitation.deeplink, '--email', 'carol@example.com', '--serial', 'CLI-0002']);
    expect(again.code).not.toBe(0);
    expect(again.stdout + again.stderr).toContain('This invitation has already been used');
  });

  it('bulk CSV: all or nothing, each bad row named once by its line of the file; --skip-invalid creates the others', async () => {
    const good = join(dataDir, 'good.csv');
    writeFileSync(
      good,
      'email,firstname,lastname,fleet\n"dan@example.com",Dan,"O\'Neil, Jr",\nerin@example.com,Erin,,Default fleet\n',
    );
    const created = await cli(['invite', '--csv', good, '--json']);
    expect(created.code, created.stderr).toBe(0);
    const rows = JSON.parse(created.stdout);
    expect(rows.map((r: { email: string }) => r.email)).toEqual(['dan@example.com', 'erin@example.com']);
    expect(rows[0].lastname).toBe("O'Neil, Jr");

    // Six rows, five bad; line 4 is wrong twice (address and fleet), and the quoted name of line 2
    // spans two lines, so each row after it is one line further down the file.
    const bad = join(dataDir, 'bad.csv');
    writeFileSync(
      bad,
      [
        'email,firstname,fleet',
        'frank@example.com,"Frank',
        'the second",',
        'not-an-email,X,No such fleet',
        'gina@example.com,Gina,No such fleet',
        ',Nobody,',
        'frank@example.com,Frank again,',
        'hal@,Hal,',
        '',
      ].join('\n'),
    );
    const before = JSON.parse((await cli(['invitations', '--json'])).stdout).length;
    const refused = await cli(['invite', '--csv', bad, '--json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('5 of 6 row(s) are invalid; nothing was created');
    expect(refused.stderr).toContain('line 4: "not-an-email" is not a valid email address; Unknown fleet "No such fleet"');
    expect(refused.stderr).toContain('line 5: Unknown fleet "No such fleet"');
    expect(refused.stderr).toContain('line 6: email is missing');
    expect(refused.stderr).toContain('line 7: frank@example.com already appears on line 2');
    expect(refused.stderr).toContain('line 8: ');
    expect(refused.stderr).not.toMatch(/line [123]:|\brow \d/);
    expect(refused.stderr).toContain('--skip-invalid');
    expect(JSON.parse((await cli(['invitations', '--json'])).stdout).length).toBe(before);

    // The console's other choice: the valid row created, the others listed by line, JSON still the created list.
    const skipping = await cli(['invite', '--csv', bad, '--json', '--skip-invalid', '--no-email']);
    expect(skipping.code, skipping.stderr).toBe(0);
    expect(JSON.parse(skipping.stdout).map((r: { email: string }) => r.email)).toEqual(['frank@example.com']);
    expect(skipping.stderr).toContain('5 invalid row(s) skipped (--skip-invalid):');
    expect(skipping.stderr).toContain('line 6: email is missing');
    expect(JSON.parse((await cli(['invitations', '--json'])).stdout).length).toBe(before + 1);
  });

  it('console prints a fresh one-time sign-in link', async () => {
    const result = await cli(['console', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const { console_url } = JSON.parse(result.stdout);
    const response = await fetch(console_url, { redirect: 'manual' });
    expect(response.status).toBe(302);
  });

  it('gives clear errors for bad arguments', async () => {
    const noEmail = await cli(['invite', '--json']);
    expect(noEmail.code).toBe(2);
    expect(noEmail.stderr).toContain('--email');
    const badEmail = await cli(['invite', '--email', 'nope', '--json']);
    expect(badEmail.code).toBe(2);
    expect(badEmail.stderr).toContain('not a valid email');
    const badDays = await cli(['invite', '--email', 'h@example.com', '--days', '500']);
    expect(badDays.code).toBe(2);
    const unknown = await cli(['frobnicate']);
    expect(unknown.code).toBe(2);
    const missingFile = await cli(['file', 'add', join(dataDir, 'nope.bin')]);
    expect(missingFile.code).toBe(2);
  });

  it('SIGTERM stops serve cleanly and removes server.json', async () => {
    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    server.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(existsSync(join(dataDir, 'server.json'))).toBe(false);
    const noServer = await cli(['agents']);
    expect(noServer.code).toBe(2);
    expect(noServer.stderr).toContain('No server is running');
  });
});
