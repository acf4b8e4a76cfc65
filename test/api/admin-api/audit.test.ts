// The audit trail (issue 22, item 4, in part): every change made through the admin API is recorded
// with who made it (the admin, and the API token used), from which address, what and on which
// object, in the transaction of the change (a refused change leaves none); sign-ins, failed ones and
// sign-outs too. Real HTTP against a real backend and SQLite file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { callFrom } from '../../helpers/from-address.ts';

let t: TestBackend;
let adminUrl: string;

beforeAll(async () => {
  t = await startTestBackend({ ownerName: 'Ana Ruiz' });
  adminUrl = t.backend.info.admin_url;
});
afterAll(async () => {
  await t?.stop();
});

type Entry = {
  id: number;
  at: string;
  actor: string;
  account_id: number | null;
  token_name: string | null;
  role: string | null;
  address: string | null;
  action: string;
  target_kind: string | null;
  target_id: number | null;
  target_name: string | null;
  message: string;
};
const audit = async (query = '') => (await t.admin('GET', `/audit${query}`)).body.items as Entry[];
const asToken = (token: string, address: string, method: string, path: string, body?: unknown) =>
  callFrom(address, `${adminUrl}/api${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe('the audit trail', () => {
  it('answers "who locked this phone": the lock is found by the device name in the Object filter', async () => {
    const invitation = (await t.admin('POST', '/invitations', { email: 'lena@example.com', send_email: false })).body;
    const { created } = await enrollByHand(t.apiUrl, invitation, { serial: 'LOCKME-0042' });
    const agentId = Number(created.body.id);
    const name = (await t.admin('GET', `/agents/${agentId}`)).body.name as string;
    expect((await t.admin('POST', `/agents/${agentId}/commands`, { command: 'lock' })).status).toBeLessThan(300);
    const found = await audit(`?target_name=${encodeURIComponent(name.toLowerCase())}&action=agent.command`);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      actor: 'Ana Ruiz',
      address: '127.0.0.1',
      target_kind: 'agent',
      target_id: agentId,
      target_name: name,
    });
  });

  it('records who, from where, what and on which object for each change; nothing for a refused one', async () => {
    const created = await t.admin('POST', '/invitations', { email: 'carol@example.com', send_email: false });
    expect(created.status).toBe(201);
    const [entry] = await audit('?action=invitation.created');
    expect(entry).toMatchObject({
      actor: 'Ana Ruiz',
      account_id: 1,
      token_name: 'admin token (data dir)',
      role: 'owner',
      address: '127.0.0.1',
      action: 'invitation.created',
      target_kind: 'invitation',
      target_id: created.body.id,
    });
    expect(Date.parse(entry!.at)).toBeGreaterThan(Date.now() - 60_000);

    // A personal token, from another address: its name and role are recorded.
    const token = (await t.admin('POST', '/tokens', { name: 'helpdesk laptop', role: 'admin' })).body.token as string;
    const fleet = await asToken(token, '127.0.0.7', 'POST', '/fleets', { name: 'Sales' });
    expect(fleet.status).toBe(201);
    const byToken = await audit('?actor=helpdesk');
    expect(byToken[0]).toMatchObject({
      actor: 'Ana Ruiz',
      token_name: 'helpdesk laptop',
      role: 'admin',
      address: '127.0.0.7',
      target_kind: 'fleet',
      target_id: fleet.body.id,
      message: 'Fleet "Sales" created',
    });

    // Refused (a duplicate fleet name, bad input, a role without the permission): nothing is recorded.
    const before = (await audit()).length;
    expect((await asToken(token, '127.0.0.7', 'POST', '/fleets', { name: 'Sales' })).status).toBe(409);
    const operator = (await t.admin('POST', '/tokens', { name: 'helpdesk phone', role: 'operator' })).body.token as string;
    expect((await asToken(operator, '127.0.0.7', 'POST', '/fleets', { name: 'Support' })).status).toBe(403);
    const made = (await audit()).length;
    expect(made).toBe(before + 1); // the token made just now, not the refused fleet
    expect((await audit())[0]).toMatchObject({ action: 'account.token_created' });
    expect((await t.admin('POST', '/invitations', { email: 'not an email', send_email: false })).status).toBe(400);
    expect((await audit()).length).toBe(made);

    // Revoking an invitation, a token: each its own entry, with the object.
    expect((await t.admin('POST', `/invitations/${created.body.id}/revoke`)).status).toBe(200);
    const revoked = await audit(`?target_kind=invitation&target_id=${created.body.id}`);
    expect(revoked.map((e) => e.action)).toEqual(['invitation.revoked', 'invitation.created']);
    // Reading changes nothing and records nothing.
    const count = (await audit('?limit=1000')).length;
    await t.admin('GET', '/invitations');
    await t.admin('GET', '/agents');
    expect((await audit('?limit=1000')).length).toBe(count);
  });

  it('records sign-ins, failed ones (with the email tried) and sign-outs, with the address', async () => {
    const setup = new URL(t.backend.info.setup_url!).searchParams.get('token')!;
    const headers = { 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' };
    const done = await callFrom('127.0.0.8', `${adminUrl}/auth/setup`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        token: setup,
        email: 'ana@example.org',
        display_name: 'Ana Ruiz',
        password: 'long enough password',
      }),
    });
    expect(done.status).toBe(200);
    const wrong = await callFrom('127.0.0.9', `${adminUrl}/auth/password`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ email: 'ana@example.org', password: 'guess' }),
    });
    expect(wrong.status).toBe(401);
    const cookie = /mdm_console=([^;]*)/.exec(String(done.headers['set-cookie']))![1]!;
    await callFrom('127.0.0.8', `${adminUrl}/auth/sign-out`, {
      method: 'POST',
      headers: { ...headers, cookie: `mdm_console=${cookie}` },
    });

    const entries = await audit('?action=admin.');
    expect(entries.map((e) => [e.action, e.actor, e.address, e.target_name])).toEqual([
      ['admin.signed_out', 'Ana Ruiz', '127.0.0.8', 'ana@example.org'],
      ['admin.sign_in_failed', 'unknown', '127.0.0.9', 'ana@example.org'],
      ['admin.signed_in', 'Ana Ruiz', '127.0.0.8', 'ana@example.org'],
    ]);
    // Filters: by email of the actor, by time.
    expect((await audit('?actor=ana@example.org&action=admin.signed_in')).length).toBe(1);
    expect(await audit(`?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).toEqual([]);
    expect((await t.admin('GET', '/audit?since=yesterday')).status).toBe(400);
    expect((await t.admin('GET', '/audit?since=2026-13-45')).status).toBe(400);
  });
});
