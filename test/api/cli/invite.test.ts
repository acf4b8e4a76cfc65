// The invite commands as a user runs them: the CLI spawned against a running `serve`.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminClient } from '../../../src-shared/contract/admin-client.ts';
import type { ServerInfo } from '../../../src-shared/contract/server-info.ts';
import { enrollByHand } from '../../helpers/backend.ts';

// Each test spawns the CLI several times, as a user would: slow on a busy machine, never timed.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 120_000 });

import { runCli, startServe, type RunningServe } from '../../helpers/cli.ts';
let serve: RunningServe;
let dataDir: string;
const cli = (args: string[]) => runCli(dataDir, args, 120_000);

const info = () => JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as ServerInfo;
const admin = () => adminClient({ baseUrl: info().admin_url, token: info().admin_token });

beforeAll(async () => {
  serve = await startServe('mdm-cli-invite-', { timeoutMs: 30_000, untilBanner: true });
  dataDir = serve.dataDir;
});

afterAll(() => serve?.stop('SIGKILL'));

describe('invite', () => {
  it('says what --days takes in its own words', async () => {
    for (const days of ['500', '0', '2.5', 'week']) {
      const result = await cli(['invite', '--email', 'days@example.com', '--days', days, '--no-email']);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `mdm-console: --days is how many days the invitation stays valid: a whole number from 1 to 180, not "${days}"\n`,
      );
    }
    expect((await admin().invitations.list({ q: 'days@' })).total).toBe(0);
  });

  it('says an address already has a pending invitation, resends it with --resend, makes a second with --another', async () => {
    const first = JSON.parse((await cli(['invite', '--email', 'twice@example.com', '--no-email', '--json'])).stdout);
    const again = await cli(['invite', '--email', 'Twice@Example.com', '--no-email']);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain(
      `twice@example.com already has a pending invitation: #${first.id}, valid until ${first.expires_at}`,
    );
    expect(again.stderr).toContain(`mdm-console resend ${first.id}`);
    expect(again.stderr).toContain('--another');
    expect((await admin().invitations.list({ q: 'twice@' })).total).toBe(1);

    const resent = await cli(['invite', '--email', 'twice@example.com', '--resend', '--json']);
    expect(resent.code, resent.stderr).toBe(0);
    const view = JSON.parse(resent.stdout);
    expect(view).toMatchObject({
      id: first.id,
      invitation_token: first.invitation_token,
      delivery: { state: expect.stringMatching(/queued|sending|outbox|sent/) },
    });
    expect((await admin().invitations.list({ q: 'twice@' })).total).toBe(1);

    const second = await cli(['invite', '--email', 'twice@example.com', '--another', '--no-email', '--json']);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout).id).not.toBe(first.id);
    expect((await admin().invitations.list({ q: 'twice@' })).total).toBe(2);
  });

  it('imports a CSV of more than 5,000 rows in batches, still all or nothing', async () => {
    const rows = Array.from({ length: 5_200 }, (_, i) => `bulk${i + 1}@example.com,Bulk,${i + 1}`);
    const csv = join(dataDir, 'many.csv');
    // A duplicate across the two batches: refused before anything is created, with both rows named.
    writeFileSync(csv, ['email,firstname,lastname', ...rows, 'bulk3@example.com,Again,3'].join('\n'));
    const refused = await cli(['invite', '--csv', csv, '--no-email']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('1 of 5201 row(s) are invalid; nothing was created');
    // Named by its line of the file: the header is line 1.
    expect(refused.stderr).toContain('line 5202: bulk3@example.com already appears on line 4');
    expect((await admin().invitations.list({ q: 'bulk' })).total).toBe(0);

    writeFileSync(csv, ['email,firstname,lastname', ...rows].join('\n'));
    const created = await cli(['invite', '--csv', csv, '--no-email', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const items = JSON.parse(created.stdout) as { email: string }[];
    expect(items).toHaveLength(5_200);
    expect(items[0]!.email).toBe('bulk1@example.com');
    expect(items.at(-1)!.email).toBe('bulk5200@example.com');
    expect((await admin().invitations.list({ q: 'bulk', limit: 1 })).total).toBe(5_200);

    // Importing it again: every row already has a pending invitation; the CLI says what to do.
    writeFileSync(csv, ['email', 'bulk7@example.com', 'new-person@example.com'].join('\n'));
    const again = await cli(['invite', '--csv', csv, '--no-email']);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/line 2: bulk7@example.com already has a pending invitation \(#\d+/);
    expect(again.stderr).toContain('--another');
    expect((await admin().invitations.list({ q: 'new-person' })).total).toBe(0);
  });
});

describe('the words of the console', () => {
  it('lists a used invitation as Enrolled, and filters with --status enrolled', async () => {
    const invitation = JSON.parse((await cli(['invite', '--email', 'enrolled@example.com', '--no-email', '--json'])).stdout);
    await enrollByHand(info().api_url, invitation);
    const listed = await cli(['invitations', '--status', 'enrolled']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(`#${invitation.id}  enrolled@example.com  Enrolled  `);
    expect(listed.stdout).not.toMatch(/\bdone\b/);
    const pending = await cli(['invitations', '--search', 'twice@']);
    expect(pending.stdout).toContain('  Pending  ');
  });

  it('says "enrolled" in its JSON too, where the API says "done"', async () => {
    const invitation = JSON.parse((await cli(['invite', '--email', 'json-enrolled@example.com', '--no-email', '--json'])).stdout);
    expect(invitation.status).toBe('pending');
    await enrollByHand(info().api_url, invitation);
    expect((await admin().invitations.get(invitation.id)).status).toBe('done');
    for (const args of [
      ['invitations', '--json', '--search', 'json-enrolled@'],
      ['invitations', '--json', '--status', 'enrolled', '--search', 'json-enrolled@'],
    ]) {
      const listed = await cli(args);
      expect(listed.code, listed.stderr).toBe(0);
      const items = JSON.parse(listed.stdout) as { id: number; status: string }[];
      expect(items.map((i) => [i.id, i.status])).toEqual([[invitation.id, 'enrolled']]);
      expect(listed.stdout).not.toMatch(/"done"/);
    }
  });
});

describe('status', () => {
  it('prints a fresh sign-in link each time, one that works', async () => {
    const first = await cli(['status']);
    const second = await cli(['status', '--json']);
    expect(first.code, first.stderr).toBe(0);
    const link = /Console:\s+(\S+)/.exec(first.stdout)![1]!;
    const fresh = JSON.parse(second.stdout).console_url as string;
    expect(fresh).not.toBe(link);
    expect(link).not.toBe(JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')).console_url);
    for (const url of [link, fresh]) {
      const opened = await fetch(url, { redirect: 'manual' });
      expect(opened.status, url).toBe(302);
      expect(opened.headers.get('set-cookie')).toBeTruthy();
      expect(opened.headers.get('location')).toBe('/');
      // Once only: a second use signs nobody in and lands on the sign-in page, which says the link was used.
      const again = await fetch(url, { redirect: 'manual' });
      expect(again.headers.get('set-cookie')).toBeNull();
      expect(again.headers.get('location')).toBe('/sign-in?link=used');
    }
  });
});
