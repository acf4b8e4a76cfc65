import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { repositoriesOf } from '../../helpers/repositories.ts';

let t: TestBackend;
let counter = 0;

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t.stop();
});

async function invite(extra: Record<string, unknown> = {}) {
  counter += 1;
  const { status, body } = await t.admin('POST', '/invitations', { email: `user${counter}@example.com`, ...extra });
  expect(status).toBe(201);
  return body as { id: number; email: string; user_token: string; invitation_token: string; deeplink: string; status: string };
}

async function guestSession(invitation: { user_token: string }) {
  const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${invitation.user_token}`);
  const session = init.body.session_token as string;
  await agentCall(t.apiUrl, 'POST', `changeActiveProfile?session_token=${session}&profiles_id=2`);
  return session;
}

function createAgent(session: string, input: Record<string, unknown>) {
  return agentCall(t.apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, { body: { input } });
}

describe('the enrollment sequence', () => {
  it('runs initSession → getFullSession → changeActiveProfile → create → read, with the spec types', async () => {
    const invitation = await invite();
    const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${invitation.user_token}`);
    expect(init.status).toBe(200);
    expect(typeof init.body.session_token).toBe('string');
    const session = init.body.session_token;

    const full = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`);
    expect(full.status).toBe(200);
    for (const view of [full.body, full.body.session]) {
      expect(typeof view.core_plugins).toBe('object');
      expect(Number.isInteger(view.coreactiveprofile.id)).toBe(true);
      expect(typeof view.coreactiveprofile.name).toBe('string');
      expect(Number.isInteger(view.plugin_mdm_guest_profiles_id)).toBe(true);
    }
    // A newly invited user starts under a profile that is not the guest one: the switch is exercised.
    expect(full.body.coreactiveprofile.id).not.toBe(full.body.plugin_mdm_guest_profiles_id);

    const change = await agentCall(
      t.apiUrl,
      'POST',
      `changeActiveProfile?session_token=${session}&profiles_id=${full.body.plugin_mdm_guest_profiles_id}`,
    );
    expect(change.status).toBe(200);
    const after = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`);
    expect(after.body.coreactiveprofile.id).toBe(after.body.plugin_mdm_guest_profiles_id);

    const created = await createAgent(session, {
      _email: invitation.email,
      _invitation_token: invitation.invitation_token,
      _serial: 'SEQ-0001',
      _uuid: '0f8fad5b-d9cb-469f-a165-70867728950e',
      csr: '',
      firstname: 'Ada',
      lastname: 'Lovelace',
      version: '2.4.1',
      type: 'android',
    });
    expect(created.status).toBe(201);
    expect(typeof created.body.id).toBe('string');
    expect(typeof created.body.message).toBe('string');

    const record = await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body.id}?session_token=${session}`);
    expect(record.status).toBe(200);
    const r = record.body;
    expect(r.id).toBe(Number(created.body.id));
    const types: Record<string, string> = {
      name: 'string',
      version: 'string',
      enroll_status: 'string',
      certificate: 'string',
      topic: 'string',
      mqttpasswd: 'string',
      api_token: 'string',
      broker: 'string',
      android_bugcollecctor_url: 'string',
      android_bugcollector_login: 'string',
      android_bugcollector_passwd: 'string',
    };
    for (const [field, type] of Object.entries(types)) expect(typeof r[field], field).toBe(type);
    for (const field of ['id', 'computers_id', 'wipe', 'lock', 'entities_id', 'plugin_mdm_fleets_id', 'port', 'tls']) {
      expect(Number.isInteger(r[field]), field).toBe(true);
    }
    expect(r.enroll_status).toBe('enrolled');
    expect(r.wipe).toBe(0);
    expect(r.lock).toBe(0);
    expect(r.last_report).toBeNull();
    expect(r.last_contact).toBeNull();
    expect(r.certificate).toBe('');
    expect(r.topic).toBe(`/${r.entities_id}/agent/SEQ-0001`);
    expect(r.mqttpasswd.length).toBeGreaterThanOrEqual(32);
    expect(r.version).toBe('2.4.1');
    expect(r.links.map((l: { rel: string }) => l.rel)).toEqual(['Computer', 'Entity', 'PluginMdmFleet']);
    const ids = { Computer: r.computers_id, Entity: r.entities_id, PluginMdmFleet: r.plugin_mdm_fleets_id };
    for (const link of r.links as { rel: keyof typeof ids; href: string }[]) {
      expect(link.href).toBe(`${t.apiUrl}/${link.rel}/${ids[link.rel]}`);
      const target = await fetch(`${link.href}?session_token=${session}`);
      expect(target.status).toBe(200);
      expect(((await target.json()) as { id: number }).id).toBe(ids[link.rel]);
    }

    // The invitation is consumed and shows the device.
    const { body: seen } = await t.admin('GET', `/invitations/${invitation.id}`);
    expect(seen.status).toBe('done');
    expect(seen.agent.id).toBe(r.id);
    expect(seen.log.some((entry: { outcome: string }) => entry.outcome === 'used')).toBe(true);
  });

  it('draws a fresh mqttpasswd on each read and keeps only its hash', async () => {
    const invitation = await invite();
    const { session, created } = await enrollByHand(t.apiUrl, invitation, { serial: 'PW-0001' });
    const read = () => agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body.id}?session_token=${session}`);
    const first = (await read()).body.mqttpasswd;
    const second = (await read()).body.mqttpasswd;
    expect(first).not.toBe(second);
    const stored = (await t.backend.services.agentRepository.byId(Number(created.body.id)))!;
    expect(stored.mqtt_password_hash).not.toContain(second);
    expect(stored.mqtt_password_hash).toMatch(/^sha256\$/);
  });

  it('accepts the record api_token at initSession, and the agent account can read its own record', async () => {
    const invitation = await invite();
    const { session, created } = await enrollByHand(t.apiUrl, invitation, { serial: 'API-0001' });
    const record = (await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body.id}?session_token=${session}`)).body;
    const agentSession = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${record.api_token}`);
    expect(agentSession.status).toBe(200);
    const own = await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body.id}`, {
      headers: { 'Session-Token': agentSession.body.session_token },
    });
    expect(own.status).toBe(200);
    expect(own.body.id).toBe(Number(created.body.id));
  });

  it('takes the tokens from headers as the reference agent sends them', async () => {
    const invitation = await invite();
    const init = await agentCall(t.apiUrl, 'GET', 'initSession', {
      headers: { Authorization: `user_token ${invitation.user_token}` },
    });
    expect(init.status).toBe(200);
    const full = await agentCall(t.apiUrl, 'GET', 'getFullSession', { headers: { 'Session-Token': init.body.session_token } });
    expect(full.status).toBe(200);
    expect(full.body.corename).toBe(invitation.email);
  });

  it('works without any Content-Type (agents omit it on initSession)', async () => {
    const invitation = await invite();
    const response = await fetch(`${t.apiUrl}/initSession?user_token=${invitation.user_token}`);
    expect(response.status).toBe(200);
  });

  it('skips the switch for a user whose only profile is the guest profile', async () => {
    const invitation = await invite();
    const { users } = repositoriesOf(t);
    const user = (await users.byLogin(invitation.email))!;
    await users.unassign(user.id, 1);
    await users.setDefaultProfile(user.id, 2);
    const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${invitation.user_token}`);
    const full = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${init.body.session_token}`);
    expect(full.body.coreactiveprofile.id).toBe(full.body.plugin_mdm_guest_profiles_id);
    const created = await createAgent(init.body.session_token, {
      _email: invitation.email,
      _invitation_token: invitation.invitation_token,
      _serial: 'GUEST-ONLY',
      version: '1',
      type: 'apple',
    });
    expect(created.status).toBe(201);
  });
});

describe('changeActiveProfile', () => {
  it('answers 200 to a bodiless request that still says Content-Type: application/json', async () => {
    const session = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${(await invite()).user_token}`)).body
      .session_token;
    const response = await fetch(`${t.apiUrl}/changeActiveProfile?session_token=${session}&profiles_id=2`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(response.status).toBe(200);
  });

  it('answers 404 "Item not found" for a profile the user does not have, 400 "Bad Request" for garbage', async () => {
    const session = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${(await invite()).user_token}`)).body
      .session_token;
    const unknown = await agentCall(t.apiUrl, 'POST', `changeActiveProfile?session_token=${session}&profiles_id=999`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(['ERROR_ITEM_NOT_FOUND', 'Item not found']);
    const notHeld = await agentCall(t.apiUrl, 'POST', `changeActiveProfile?session_token=${session}&profiles_id=3`);
    expect(notHeld.status).toBe(404);
    for (const bad of ['abc', '1.5', '-1', '']) {
      const response = await agentCall(t.apiUrl, 'POST', `changeActiveProfile?session_token=${session}&profiles_id=${bad}`);
      expect(response.status, bad).toBe(400);
      expect(response.body, bad).toEqual(['ERROR_BAD_REQUEST', 'Bad Request']);
    }
    const missing = await agentCall(t.apiUrl, 'POST', `changeActiveProfile?session_token=${session}`);
    expect(missing.status).toBe(400);
  });
});

describe('agent creation refusals (ERROR_CORE_ADD, in DESIGN.md order, each logged)', () => {
  const base = (invitation: { email: string; invitation_token: string }) => ({
    _email: invitation.email,
    _invitation_token: invitation.invitation_token,
    _serial: `REF-${Math.random().toString(36).slice(2, 8)}`,
    _uuid: crypto.randomUUID(),
    csr: '',
    version: '1.0.0',
    type: 'android',
  });

  it('refuses each bad field with its message, the first failing check winning', async () => {
    const invitation = await invite();
    const session = await guestSession(invitation);
    const cases: [Record<string, unknown>, string][] = [
      [{ _invitation_token: 'nope' }, 'Invalid invitation token'],
      [{ _invitation_token: undefined }, 'Invalid invitation token'],
      [{ _email: 'someone@else.org', _serial: undefined, _uuid: undefined }, 'Wrong email address'],
      [{ _email: undefined }, 'Wrong email address'],
      [{ _serial: undefined, _uuid: undefined, version: 'x' }, 'The device serial number or UUID is required'],
      [{ _serial: '', _uuid: '' }, 'The device serial number or UUID is required'],
      [
        { _serial: 'a/b', version: 'x' },
        'The device serial number or UUID contains characters that cannot be used (/, +, #, spaces or control characters)',
      ],
      [
        { _uuid: 'x#y' },
        'The device serial number or UUID contains characters that cannot be used (/, +, #, spaces or control characters)',
      ],
      [
        { _serial: 'SN 1' },
        'The device serial number or UUID contains characters that cannot be used (/, +, #, spaces or control characters)',
      ],
      [{ version: undefined, type: 'windows' }, 'The agent version is missing or invalid'],
      [{ version: 'v1.0' }, 'The agent version is missing or invalid'],
      [{ version: '1.' }, 'The agent version is missing or invalid'],
      [{ type: undefined }, 'The MDM type must be android or apple'],
      [{ type: 'windows' }, 'The MDM type must be android or apple'],
    ];
    for (const [change, message] of cases) {
      const response = await createAgent(session, { ...base(invitation), ...change });
      expect(response.status, message).toBe(400);
      expect(response.body, JSON.stringify(change)).toEqual(['ERROR_CORE_ADD', message]);
    }
    const { body } = await t.admin('GET', `/invitations/${invitation.id}`);
    expect(body.status).toBe('pending');
    const refused = body.log.filter((entry: { outcome: string }) => entry.outcome === 'refused');
    expect(refused).toHaveLength(cases.length - 2); // the two unknown-token attempts name no invitation
    expect(body.refused_attempts).toBe(cases.length - 2);
  });

  it('accepts the email in another case, and an uuid alone or a serial alone', async () => {
    for (const device of [{ _serial: undefined }, { _uuid: undefined }]) {
      const invitation = await invite();
      const session = await guestSession(invitation);
      const response = await createAgent(session, { ...base(invitation), _email: invitation.email.toUpperCase(), ...device });
      expect(response.status).toBe(201);
    }
  });

  it('refuses used, revoked and expired invitations, and logs it', async () => {
    const used = await invite();
    await enrollByHand(t.apiUrl, used);
    const again = await createAgent(await guestSession(used), base(used));
    expect(again.body).toEqual(['ERROR_CORE_ADD', 'This invitation has already been used']);

    const revoked = await invite();
    expect((await t.admin('POST', `/invitations/${revoked.id}/revoke`)).status).toBe(200);
    const r = await createAgent(await guestSession(revoked), base(revoked));
    expect(r.body).toEqual(['ERROR_CORE_ADD', 'This invitation has been revoked']);

    const expired = await invite({ days: 1 });
    await t.backend.services.repositories.invitations.setExpiry(expired.id, new Date(Date.now() - 1000).toISOString());
    const e = await createAgent(await guestSession(expired), base(expired));
    expect(e.body).toEqual(['ERROR_CORE_ADD', 'This invitation has expired']);
    const { body } = await t.admin('GET', `/invitations/${expired.id}`);
    expect(body.status).toBe('expired');
    expect(body.log[0].message).toBe('This invitation has expired');
    expect(body.last_used_at).not.toBeNull();

    for (const id of [used.id, revoked.id]) {
      const { body: seen } = await t.admin('GET', `/invitations/${id}`);
      expect(seen.log.some((entry: { outcome: string }) => entry.outcome === 'refused')).toBe(true);
    }
  });

  it("refuses an invitation presented by another user's session", async () => {
    const mine = await invite();
    const theirs = await invite();
    const response = await createAgent(await guestSession(theirs), { ...base(mine), _email: mine.email });
    expect(response.status).toBe(400);
    expect(response.body[0]).toBe('ERROR_CORE_ADD');
  });
});

describe('re-enrollment', () => {
  it('gives a known device (same serial, or same uuid) its existing computer and agent back', async () => {
    const first = await invite();
    const a = await enrollByHand(t.apiUrl, first, { serial: 'RE-0001', uuid: crypto.randomUUID() });
    const second = await invite({ email: first.email });
    const uuid = crypto.randomUUID();
    const b = await enrollByHand(t.apiUrl, second, { serial: 'RE-0001', uuid });
    expect(b.created.status).toBe(201);
    expect(b.created.body.id).toBe(a.created.body.id);
    const third = await invite({ email: first.email });
    const c = await enrollByHand(t.apiUrl, third, { serial: 'RE-0002-NEW', uuid });
    // A different serial but a known uuid: the serial is looked up first, then the uuid.
    expect(c.created.status).toBe(201);
    expect(c.created.body.id).toBe(a.created.body.id);
    const agents = (await t.admin('GET', '/agents')).body.items.filter(
      (agent: { id: number }) => agent.id === Number(a.created.body.id),
    );
    expect(agents.length).toBe(1);
    expect(await t.backend.services.agentRepository.countComputers({ uuid })).toBe(1);
  });

  it('keeps both records intact when the serial names one agent and the uuid another', async () => {
    const owner = await invite();
    const again = () => invite({ email: owner.email });
    const one = await enrollByHand(t.apiUrl, owner, { serial: 'CLASH-A', uuid: crypto.randomUUID() });
    const uuidOfB = crypto.randomUUID();
    const two = await enrollByHand(t.apiUrl, await again(), { serial: 'CLASH-B', uuid: uuidOfB });
    const three = await enrollByHand(t.apiUrl, await again(), { serial: 'CLASH-A', uuid: uuidOfB });
    expect(three.created.status).toBe(201);
    expect(three.created.body.id).toBe(one.created.body.id);
    expect(two.created.body.id).not.toBe(one.created.body.id);
  });

  it("does not hand one person's device to another who quotes its serial", async () => {
    const alice = await invite();
    const enrolled = await enrollByHand(t.apiUrl, alice, { serial: 'TAKEOVER-1' });
    const record = (
      await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${enrolled.created.body.id}?session_token=${enrolled.session}`)
    ).body;
    const mallory = await invite();
    const attempt = await enrollByHand(t.apiUrl, mallory, { serial: 'TAKEOVER-1' });
    expect(attempt.created.status).toBe(400);
    expect(attempt.created.body).toEqual([
      'ERROR_CORE_ADD',
      'This device is already enrolled for another user; ask your administrator to remove it first',
    ]);
    expect((await agentCall(t.apiUrl, 'GET', `initSession?user_token=${record.api_token}`)).status).toBe(200);
    const { body } = await t.admin('GET', `/invitations/${mallory.id}`);
    expect(body.status).toBe('pending');
    expect(body.log[0].message).toMatch(/already enrolled for another user/);
    // Once the admin removes the device, the new person may enroll it.
    expect((await t.admin('DELETE', `/agents/${enrolled.created.body.id}`)).status).toBe(204);
    const retry = await enrollByHand(t.apiUrl, await invite({ email: mallory.email, another: true }), { serial: 'TAKEOVER-1' });
    expect(retry.created.status).toBe(201);
  });

  it('answers no HEAD on the agent record (it would draw a password nobody sees)', async () => {
    const invitation = await invite();
    const { session, created } = await enrollByHand(t.apiUrl, invitation);
    const head = await fetch(`${t.apiUrl}/PluginMdmAgent/${created.body.id}?session_token=${session}`, { method: 'HEAD' });
    expect(head.status).toBe(404);
    const hashOf = async () => (await t.backend.services.agentRepository.byId(Number(created.body.id)))!.mqtt_password_hash;
    const before = await hashOf();
    await fetch(`${t.apiUrl}/PluginMdmAgent/${created.body.id}?session_token=${session}`, { method: 'HEAD' });
    expect(await hashOf()).toEqual(before);
  });

  it('retires the old api_token when a device enrolls again', async () => {
    const first = await invite();
    const a = await enrollByHand(t.apiUrl, first, { serial: 'RE-TOKEN' });
    const oldToken = (await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${a.created.body.id}?session_token=${a.session}`)).body
      .api_token;
    const second = await invite({ email: first.email });
    const b = await enrollByHand(t.apiUrl, second, { serial: 'RE-TOKEN' });
    const newToken = (await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${b.created.body.id}?session_token=${b.session}`)).body
      .api_token;
    expect(newToken).not.toBe(oldToken);
    expect((await agentCall(t.apiUrl, 'GET', `initSession?user_token=${oldToken}`)).status).toBe(401);
    expect((await agentCall(t.apiUrl, 'GET', `initSession?user_token=${newToken}`)).status).toBe(200);
  });
});

describe('bad input never ends in a 500', () => {
  it('answers clear 4xx to broken, wrong-typed, huge and unknown requests', async () => {
    const invitation = await invite();
    const session = await guestSession(invitation);
    const checks: [string, string, { rawBody?: string; body?: unknown; headers?: Record<string, string> }, number, string][] = [
      ['POST', `PluginMdmAgent?session_token=${session}`, { rawBody: '{"input": {' }, 400, 'ERROR_BAD_REQUEST'],
      ['POST', `PluginMdmAgent?session_token=${session}`, { rawBody: 'null' }, 400, 'ERROR_BAD_REQUEST'],
      [
        'POST',
        `PluginMdmAgent?session_token=${session}`,
        { rawBody: '{"input": {"__proto__": {"x": 1}}}' },
        400,
        'ERROR_BAD_REQUEST',
      ],
      ['POST', `PluginMdmAgent?session_token=${session}`, { body: [] }, 400, 'ERROR_BAD_REQUEST'],
      ['POST', `PluginMdmAgent?session_token=${session}`, { body: { input: 'x' } }, 400, 'ERROR_BAD_REQUEST'],
      ['POST', `PluginMdmAgent?session_token=${session}`, { body: { input: { _serial: { a: 1 } } } }, 400, 'ERROR_BAD_REQUEST'],
      ['POST', `PluginMdmAgent?session_token=${session}`, { body: { input: { _serial: ['a'] } } }, 400, 'ERROR_BAD_REQUEST'],
      ['POST', `PluginMdmAgent?session_token=${session}`, {}, 400, 'ERROR_BAD_REQUEST'],
      // The create input may carry an inventory (up to ~700 KB of base64): bigger bodies are refused unread.
      [
        'POST',
        `PluginMdmAgent?session_token=${session}`,
        { rawBody: JSON.stringify({ input: { csr: 'x'.repeat(1_000_000) } }) },
        413,
        'ERROR_BAD_REQUEST',
      ],
      [
        'POST',
        `PluginMdmAgent?session_token=${session}`,
        { rawBody: JSON.stringify({ input: { csr: 'x'.repeat(200_000) } }) },
        400,
        'ERROR_BAD_REQUEST',
      ],
      [
        'POST',
        `PluginMdmAgent?session_token=${session}`,
        { rawBody: '\u0000\u0001binary', headers: { 'content-type': 'application/octet-stream' } },
        400,
        'ERROR_BAD_REQUEST',
      ],
      ['GET', `PluginMdmAgent/999999?session_token=${session}`, {}, 404, 'ERROR_ITEM_NOT_FOUND'],
      ['GET', `PluginMdmAgent/abc?session_token=${session}`, {}, 400, 'ERROR_BAD_REQUEST'],
      ['GET', `PluginMdmAgent/0?session_token=${session}`, {}, 400, 'ERROR_BAD_REQUEST'],
      ['GET', `PluginMdmAgent/99999999999999999999999?session_token=${session}`, {}, 400, 'ERROR_BAD_REQUEST'],
      ['GET', `Computer/424242?session_token=${session}`, {}, 404, 'ERROR_ITEM_NOT_FOUND'],
      ['GET', `Entity/424242?session_token=${session}`, {}, 404, 'ERROR_ITEM_NOT_FOUND'],
      ['GET', `PluginMdmFleet/424242?session_token=${session}`, {}, 404, 'ERROR_ITEM_NOT_FOUND'],
      ['GET', `PluginMdmFile/424242?session_token=${session}`, {}, 404, 'ERROR_ITEM_NOT_FOUND'],
      ['GET', `PluginMdmPackage/424242?session_token=${session}`, {}, 404, 'ERROR_ITEM_NOT_FOUND'],
      ['GET', `NoSuchThing?session_token=${session}`, {}, 404, 'ERROR_RESOURCE_NOT_FOUND'],
      ['GET', 'getFullSession', {}, 401, 'ERROR_SESSION_TOKEN_MISSING'],
      ['GET', 'getFullSession?session_token=deadbeef', {}, 401, 'ERROR_SESSION_TOKEN_INVALID'],
      ['GET', 'PluginMdmAgent/1', {}, 401, 'ERROR_SESSION_TOKEN_MISSING'],
      ['GET', 'initSession', {}, 401, 'ERROR_LOGIN'],
      ['GET', 'initSession?user_token=wrong', {}, 401, 'ERROR_LOGIN'],
      ['GET', 'initSession?user_token[]=a', {}, 401, 'ERROR_LOGIN'],
    ];
    for (const [method, path, options, status, code] of checks) {
      const response = await agentCall(t.apiUrl, method, path, options);
      expect(response.status, `${method} ${path.slice(0, 60)}`).toBe(status);
      expect(Array.isArray(response.body), path).toBe(true);
      expect(response.body[0], `${method} ${path.slice(0, 60)} ${JSON.stringify(options).slice(0, 60)}`).toBe(code);
      expect(typeof response.body[1]).toBe('string');
    }
  });

  it("does not let one user read another user's agent record", async () => {
    const a = await invite();
    const enrolled = await enrollByHand(t.apiUrl, a);
    const other = await guestSession(await invite());
    const response = await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${enrolled.created.body.id}?session_token=${other}`);
    expect(response.status).toBe(404);
  });
});

describe('concurrency', () => {
  it('200 enrollments at once leave a consistent database', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({ email: `bulk${i}@load.example` }));
    const { status, body } = await t.admin('POST', '/invitations/bulk', { invitations: rows });
    expect(status).toBe(201);
    const results = await Promise.all(
      body.items.map((invitation: { user_token: string; invitation_token: string; email: string }, i: number) =>
        enrollByHand(t.apiUrl, invitation, { serial: `LOAD-${i}` }),
      ),
    );
    expect(results.every((r) => r.created.status === 201)).toBe(true);
    const ids = new Set(results.map((r) => r.created.body.id));
    expect(ids.size).toBe(200);
    const db = t.db;
    const agents = (await t.admin('GET', '/agents')).body.items as { serial: string | null }[];
    expect(agents.filter((agent) => agent.serial?.startsWith('LOAD-')).length).toBe(200);
    expect(await t.backend.services.agentRepository.countComputers({ serialPrefix: 'LOAD-' })).toBe(200);
    const used = await t.backend.services.invitations.list({ q: '@load.example', status: 'done' });
    expect(
      used.items.filter((invitation) => invitation.email.endsWith('@load.example') && invitation.agent !== null),
    ).toHaveLength(200);
    const enrolled = (await repositoriesOf(t).events.latest(1_000_000, 0)).filter(
      (e) => e.type === 'agent.enrolled' && /^load-/i.test(String(e.data?.serial)),
    );
    expect(enrolled.length).toBe(200);
    // The database's own checks (db/ is the one room below the repositories).
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  });
});
