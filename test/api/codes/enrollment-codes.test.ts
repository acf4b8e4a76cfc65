// Enrollment codes over real HTTP, SQLite and MQTT: one code, many people's devices.
import { describe, expect, it } from 'vitest';
import { decodeDeeplinkData, deeplinkEncodingOf } from '../../../src-main/backend/deeplink/codec.ts';
import { simulateEnrollment } from '../../../src-main/device/simulate.ts';
import { agentCall, type TestBackend } from '../../helpers/backend.ts';
import { agentRow, connectAgent, nextEvent, ofAgent, readRecord, refusalCode, useBrokerBackend } from '../../helpers/mqtt.ts';
import type { EnrollmentCode as Code } from '../../../src-shared/contract/index.ts';

let t: TestBackend;
useBrokerBackend((backend) => {
  t = backend;
});

let serials = 0;
const nextSerial = () => `CODE${++serials}X${process.pid}`;

async function makeCode(body: Record<string, unknown> = {}): Promise<Code> {
  const created = await t.admin('POST', '/codes', { name: `Code ${serials}`, ...body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body as Code;
}

/** initSession with the code's account token, then the switch to the guest profile, as the agent does. */
async function codeSession(code: { user_token: string }): Promise<string> {
  const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${code.user_token}`);
  expect(init.status).toBe(200);
  const session = init.body.session_token as string;
  const full = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`);
  expect(full.body.coreactiveprofile.id).not.toBe(full.body.plugin_mdm_guest_profiles_id);
  await agentCall(
    t.apiUrl,
    'POST',
    `changeActiveProfile?session_token=${session}&profiles_id=${full.body.plugin_mdm_guest_profiles_id}`,
  );
  return session;
}

function createAgent(session: string, code: { token: string }, input: Record<string, unknown>) {
  return agentCall(t.apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, {
    body: {
      input: {
        _invitation_token: code.token,
        _serial: nextSerial(),
        _uuid: crypto.randomUUID(),
        csr: '',
        version: '2.0.0',
        type: 'android',
        ...input,
      },
    },
  });
}

async function enrollWith(code: Code, email: string, input: Record<string, unknown> = {}) {
  const session = await codeSession(code);
  const created = await createAgent(session, code, { _email: email, ...input });
  return { session, created };
}

const codeLog = async (id: number) =>
  (await t.admin('GET', `/codes/${id}`)).body.log as {
    outcome: string;
    message: string;
    email: string | null;
    agent_id: number | null;
  }[];

describe('creating codes', () => {
  it('keeps name, fleet, domains, uses, expiry and approval; the deeplink carries the code account token and the code token', async () => {
    await t.admin('POST', '/fleets', { name: 'Front desk' });
    const code = await makeCode({
      name: 'Front door',
      fleet: 'Front desk',
      domains: ['Example.com', '@corp.example.org'],
      max_uses: 30,
      days: 30,
      approval: 'manual',
    });
    expect(code).toMatchObject({
      name: 'Front door',
      fleet: 'Front desk',
      domains: ['example.com', 'corp.example.org'],
      max_uses: 30,
      uses: 0,
      approval: 'manual',
      status: 'active',
    });
    const expires = Date.parse((code as unknown as { expires_at: string }).expires_at);
    expect(Math.round((expires - Date.now()) / 86_400_000)).toBe(30);
    const fields = decodeDeeplinkData(new URL(code.deeplink).searchParams.get('data'));
    expect(fields).toMatchObject({ backendUrl: t.apiUrl, userToken: code.user_token, invitationToken: code.token });
    expect(code.token).toMatch(/^[0-9a-f]{64}$/);

    const forever = await makeCode({ name: 'Poster' });
    expect(forever).toMatchObject({ domains: [], max_uses: null, approval: 'auto', expires_at: null });

    const png = await fetch(`${t.backend.info.admin_url}/api/codes/${code.id}/qr.png`, {
      headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
    });
    expect(png.headers.get('content-type')).toBe('image/png');
    expect((await png.arrayBuffer()).byteLength).toBeGreaterThan(500);
    const svg = await fetch(`${t.backend.info.admin_url}/api/codes/${code.id}/qr.svg`, {
      headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
    });
    expect(await svg.text()).toContain('<svg');
  });

  it('refuses bad input with a 400 naming it, and creates nothing', async () => {
    const before = (await t.admin('GET', '/codes')).body.items.length;
    for (const [body, message] of [
      [{ name: 'x', days: 0 }, /days|>= 1/],
      [{ name: 'x', days: 366 }, /<= 365|days/],
      [{ name: 'x', max_uses: 0 }, /max_uses|>= 1/],
      [{ name: 'x', domains: ['not a domain'] }, /"not a domain" is not a valid email domain/],
      [{ name: 'x', fleet: 'Nope' }, /Unknown fleet "Nope"/],
      [{ name: 'x', approval: 'sometimes' }, /approval/],
      [{ name: '' }, /name/],
      [{ name: 'x', colour: 'red' }, /colour|additional/],
    ] as const) {
      const result = await t.admin('POST', '/codes', body);
      expect(result.status, JSON.stringify(body)).toBe(400);
      expect(result.body.message).toMatch(message);
    }
    expect((await t.admin('GET', '/codes')).body.items.length).toBe(before);
    expect((await t.admin('GET', '/codes/9999')).status).toBe(404);
  });
});

describe('enrolling with a code', () => {
  it('creates (then reuses) the person, login = email, and ties each device to them; a second device is a second agent, the same device its own agent back', async () => {
    const code = await makeCode({ domains: ['example.com'] });
    const serial = nextSerial();
    const first = await enrollWith(code, 'Dana@Example.com', { _serial: serial, firstname: 'Dana', lastname: 'Scully' });
    expect(first.created.status, JSON.stringify(first.created.body)).toBe(201);
    const agentId = Number(first.created.body.id);

    const person = (await t.backend.services.users.byLogin('dana@example.com'))!;
    expect(person).toMatchObject({ login: 'dana@example.com', kind: 'person', firstname: 'Dana', lastname: 'Scully' });
    const summary = (await t.admin('GET', `/agents/${agentId}`)).body;
    expect(summary).toMatchObject({
      email: 'dana@example.com',
      enroll_status: 'enrolled',
      enrollment_code_id: code.id,
      invitation_id: null,
    });
    const computer = (await t.backend.services.agentRepository.computer(summary.computer_id))!;
    expect(computer.user_id).toBe(person.id);

    const record = await readRecord(t, first.session, agentId);
    expect(record.record).toMatchObject({ enroll_status: 'enrolled', topic: `/1/agent/${serial}` });
    const client = await connectAgent(t, record);
    client.end(true);

    const second = await enrollWith(code, 'dana@example.com');
    expect(second.created.status).toBe(201);
    expect(Number(second.created.body.id)).not.toBe(agentId);
    expect((await t.backend.services.users.byLogin('dana@example.com'))!.id).toBe(person.id);

    const again = await enrollWith(code, 'dana@example.com', { _serial: serial });
    expect(again.created.status).toBe(201);
    expect(Number(again.created.body.id)).toBe(agentId);

    const log = await codeLog(code.id);
    expect(log.filter((entry) => entry.outcome === 'used').map((entry) => entry.email)).toEqual([
      'dana@example.com',
      'dana@example.com',
      'Dana@Example.com',
    ]);
    expect((await t.admin('GET', `/codes/${code.id}`)).body.uses).toBe(3);

    // Someone else quoting that serial does not take the device over.
    const other = await enrollWith(code, 'eve@example.com', { _serial: serial });
    expect(other.created.body).toEqual([
      'ERROR_CORE_ADD',
      'This device is already enrolled for another user; ask your administrator to remove it first',
    ]);
  });

  it("reads the record only in the session that enrolled: the code's account token is on every poster", async () => {
    const code = await makeCode();
    const { session, created } = await enrollWith(code, 'fox@example.net');
    expect(created.status).toBe(201);
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body.id}?session_token=${session}`)).status).toBe(200);
    const stranger = await codeSession(code);
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body.id}?session_token=${stranger}`)).status).toBe(404);
  });

  it("refuses in DESIGN.md's order, each refusal in the code's log with the email given", async () => {
    const code = await makeCode({ domains: ['example.com', 'example.org'] });
    const session = await codeSession(code);
    const cases: [Record<string, unknown>, string][] = [
      [{ _email: 'not-an-address' }, 'Wrong email address: enter your own email address'],
      [{ _email: '' }, 'Wrong email address: enter your own email address'],
      [{ _email: 'mallory@evil.test' }, 'Wrong email address: this code is for addresses at @example.com, @example.org'],
      // The domain must match exactly, not as a suffix.
      [{ _email: 'mallory@notexample.com' }, 'Wrong email address: this code is for addresses at @example.com, @example.org'],
      [{ _email: 'gus@example.com', _serial: null, _uuid: null }, 'The device serial number or UUID is required'],
      [{ _email: 'gus@example.com', version: 'one' }, 'The agent version is missing or invalid'],
      [{ _email: 'gus@example.com', type: 'windows' }, 'The MDM type must be android or apple'],
      // Email is checked before the device: a bad address and a bad type name the address.
      [
        { _email: 'mallory@evil.test', type: 'windows' },
        'Wrong email address: this code is for addresses at @example.com, @example.org',
      ],
    ];
    for (const [input, message] of cases) {
      const result = await createAgent(session, code, input);
      expect(result.status, JSON.stringify(input)).toBe(400);
      expect(result.body).toEqual(['ERROR_CORE_ADD', message]);
    }
    const log = await codeLog(code.id);
    expect(log.length).toBe(cases.length);
    expect(log.every((entry) => entry.outcome === 'refused')).toBe(true);
    expect([...log].reverse().map((entry) => [entry.email, entry.message])).toEqual(
      cases.map(([input, message]) => [(input._email as string) || null, message]),
    );
    const view = (await t.admin('GET', `/codes/${code.id}`)).body;
    expect(view).toMatchObject({ uses: 0, refused_attempts: cases.length });

    // Not under the guest profile yet.
    const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${code.user_token}`);
    const refused = await createAgent(init.body.session_token, code, { _email: 'gus@example.com' });
    expect(refused.body).toEqual(['ERROR_CORE_ADD', 'Switch to the guest profile before enrolling']);

    // A code token quoted from another account's session.
    const invitation = (await t.admin('POST', '/invitations', { email: 'hal@example.com', send_email: false })).body;
    const invited = await codeSession(invitation);
    expect((await createAgent(invited, code, { _email: 'hal@example.com' })).body).toEqual([
      'ERROR_CORE_ADD',
      'This enrollment code belongs to another account',
    ]);
  });

  it('refuses a revoked, an expired and a used-up code before looking at the email', async () => {
    const revoked = await makeCode({ domains: ['example.com'] });
    const session = await codeSession(revoked);
    expect((await t.admin('POST', `/codes/${revoked.id}/revoke`)).body.status).toBe('revoked');
    expect((await createAgent(session, revoked, { _email: 'x@elsewhere.test' })).body).toEqual([
      'ERROR_CORE_ADD',
      'This enrollment code has been revoked',
    ]);
    expect((await codeLog(revoked.id))[0]).toMatchObject({
      outcome: 'refused',
      email: 'x@elsewhere.test',
      message: 'This enrollment code has been revoked',
    });

    const expired = await makeCode({ days: 1 });
    await t.backend.services.repositories.codes.setExpiry(expired.id, new Date(Date.now() - 1000).toISOString());
    expect((await t.admin('GET', `/codes/${expired.id}`)).body.status).toBe('expired');
    expect((await enrollWith(expired, 'ida@example.com')).created.body).toEqual([
      'ERROR_CORE_ADD',
      'This enrollment code has expired',
    ]);

    const once = await makeCode({ max_uses: 1 });
    expect((await enrollWith(once, 'jo@example.com')).created.status).toBe(201);
    expect((await t.admin('GET', `/codes/${once.id}`)).body).toMatchObject({ status: 'used_up', uses: 1 });
    expect((await enrollWith(once, 'kim@example.com')).created.body).toEqual([
      'ERROR_CORE_ADD',
      'This enrollment code has been used up',
    ]);
    expect((await codeLog(once.id))[0]).toMatchObject({ outcome: 'refused', email: 'kim@example.com' });
  });

  it('rotates the code token and its account token: printed copies stop working, and the event says so', async () => {
    const code = await makeCode();
    const rotatedEvent = nextEvent(t, (event) => event.type === 'code.rotated');
    const rotated = (await t.admin('POST', `/codes/${code.id}/rotate`)).body as Code;
    expect((await rotatedEvent).message).toMatch(/printed and shared copies .* no longer work/);
    expect(rotated.token).not.toBe(code.token);
    expect(rotated.user_token).not.toBe(code.user_token);
    expect(rotated.deeplink).not.toBe(code.deeplink);
    expect((await agentCall(t.apiUrl, 'GET', `initSession?user_token=${code.user_token}`)).status).toBe(401);
    const session = await codeSession(rotated);
    expect((await createAgent(session, code, { _email: 'lee@example.com' })).body).toEqual([
      'ERROR_CORE_ADD',
      'Invalid invitation token',
    ]);
    expect((await createAgent(session, rotated, { _email: 'lee@example.com' })).status).toBe(201);
  });

  it("refuses downloads to the code's account", async () => {
    const code = await makeCode();
    const upload = await fetch(`${t.backend.info.admin_url}/api/files?name=notes.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
      body: 'hello',
    });
    const file = (await upload.json()) as { id: number };
    const session = await codeSession(code);
    const download = await agentCall(t.apiUrl, 'GET', `PluginMdmFile/${file.id}?session_token=${session}`, {
      headers: { accept: 'application/octet-stream' },
    });
    expect(download.status).toBe(403);
    expect(download.body).toEqual(['ERROR_RIGHT_MISSING', 'An enrollment code cannot download files; the enrolled device can']);
  });
});

describe('manual approval', () => {
  it('holds the device as pending_approval: no MQTT login (CONNACK 5, the reason recorded), no downloads; approve lets it in', async () => {
    const code = await makeCode({ approval: 'manual' });
    const before = (await t.admin('GET', '/status')).body.counts;
    const { session, created } = await enrollWith(code, 'max@example.com');
    expect(created.status).toBe(201);
    expect(created.body.message).toMatch(/waiting for approval/);
    const id = Number(created.body.id);
    const record = await readRecord(t, session, id);
    expect(record.record.enroll_status).toBe('pending_approval');
    // The dashboard's funnel counts devices that came with a code (issue 19): one more, not enrolled yet.
    const waiting = (await t.admin('GET', '/status')).body.counts;
    expect(waiting.pending_approval).toBeGreaterThanOrEqual(1);
    expect(waiting).toMatchObject({ code_devices: before.code_devices + 1, code_enrolled: before.code_enrolled });
    expect((await t.admin('GET', `/codes/${code.id}`)).body.pending_approval).toBe(1);

    const refusedEvent = nextEvent(t, ofAgent(id, 'mqtt.login_refused'));
    expect(await refusalCode(t, record)).toBe(5);
    expect((await refusedEvent).data).toMatchObject({
      reason: 'the device is waiting for approval by an administrator',
      return_code: 5,
    });

    const upload = await fetch(`${t.backend.info.admin_url}/api/files?name=policy.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
      body: 'policy',
    });
    const file = (await upload.json()) as { id: number };
    const own = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${record.record.api_token}`);
    const download = () =>
      agentCall(t.apiUrl, 'GET', `PluginMdmFile/${file.id}?session_token=${own.body.session_token}`, {
        headers: { accept: 'application/octet-stream' },
      });
    expect((await download()).body).toEqual([
      'ERROR_AGENT_NOT_APPROVED',
      'This device is waiting for approval by an administrator',
    ]);

    const approved = await t.admin('POST', `/agents/${id}/approve`);
    expect(approved).toMatchObject({ status: 200, body: { enroll_status: 'enrolled' } });
    expect((await agentRow(t, id)).enroll_status).toBe('enrolled');
    expect((await t.admin('GET', '/status')).body.counts).toMatchObject({
      code_devices: before.code_devices + 1,
      code_enrolled: before.code_enrolled + 1,
      enrolled: before.enrolled + 1,
    });
    const client = await connectAgent(t, record);
    client.end(true);
    expect((await download()).status).toBe(200);
    expect(await t.admin('POST', `/agents/${id}/approve`)).toMatchObject({ status: 409, body: { error: 'ERROR_NOT_PENDING' } });
  });

  it("reject frees the device: its credentials stop working and another person's enrollment takes it", async () => {
    const code = await makeCode({ approval: 'manual' });
    const serial = nextSerial();
    const { session, created } = await enrollWith(code, 'ned@example.com', { _serial: serial });
    const id = Number(created.body.id);
    const record = await readRecord(t, session, id);
    expect((await t.admin('POST', `/agents/${id}/reject`)).body.enroll_status).toBe('rejected');
    expect(await refusalCode(t, record)).not.toBe(0);
    expect((await agentCall(t.apiUrl, 'GET', `initSession?user_token=${record.record.api_token}`)).status).toBe(401);

    const next = await enrollWith(code, 'olga@example.com', { _serial: serial });
    expect(next.created.status).toBe(201);
    expect(Number(next.created.body.id)).toBe(id);
    expect((await t.admin('GET', `/agents/${id}`)).body).toMatchObject({
      email: 'olga@example.com',
      enroll_status: 'pending_approval',
    });
    // Ned's session (the same code account) no longer reads what is now Olga's device; hers does.
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${session}`)).status).toBe(404);
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${next.session}`)).status).toBe(200);
  });

  it('approves in bulk, listing what it could not approve', async () => {
    const code = await makeCode({ approval: 'manual' });
    const ids: number[] = [];
    for (const email of ['p1@example.com', 'p2@example.com']) ids.push(Number((await enrollWith(code, email)).created.body.id));
    const result = await t.admin('POST', '/agents/approve', { ids: [...ids, 999999] });
    expect(result.body.approved).toEqual(ids);
    expect(result.body.skipped).toEqual([{ id: 999999, reason: 'Agent not found' }]);
    for (const id of ids) expect((await agentRow(t, id)).enroll_status).toBe('enrolled');
  });
});

describe('concurrency', () => {
  // Also shows that a code's shared account is not held to one person's session and attempt limits.
  it('50 devices racing for the last 10 uses: exactly 10 enroll, the rest are refused as used up', async () => {
    const code = await makeCode({ max_uses: 15 });
    for (let i = 0; i < 5; i++) expect((await enrollWith(code, `early${i}@example.com`)).created.status).toBe(201);
    // Every device has its session ready, then all create their agent at once.
    const sessions = await Promise.all(Array.from({ length: 50 }, () => codeSession(code)));
    const results = await Promise.all(
      sessions.map((session, i) => createAgent(session, code, { _email: `racer${i}@example.com` })),
    );
    const won = results.filter((result) => result.status === 201);
    const lost = results.filter((result) => result.status === 400);
    expect(won.length).toBe(10);
    expect(lost.length).toBe(40);
    for (const result of lost) expect(result.body).toEqual(['ERROR_CORE_ADD', 'This enrollment code has been used up']);
    const view = (await t.admin('GET', `/codes/${code.id}`)).body;
    expect(view).toMatchObject({ uses: 15, status: 'used_up', refused_attempts: 40 });
    const agents = (await t.admin('GET', '/agents')).body.items.filter(
      (agent: { enrollment_code_id: number | null }) => agent.enrollment_code_id === code.id,
    );
    expect(agents.length).toBe(15);
  });
});

describe("the agent app setting (issue 9's dialect)", () => {
  it("gives codes the reference encoding and flyve:// app link while the agent app is Flyve's, and a Flyve-dialect device enrolls", async () => {
    expect((await t.admin('PATCH', '/settings', { agent_app: 'flyve' })).status).toBe(200);
    try {
      const code = await makeCode({ domains: ['example.com'] });
      const data = new URL(code.deeplink).searchParams.get('data')!;
      expect(deeplinkEncodingOf(data)).toBe('flyve');
      expect((code as unknown as { app_link: string }).app_link).toMatch(/^flyve:\/\/register\?data=/);
      expect(decodeDeeplinkData(data)).toMatchObject({
        backendUrl: t.apiUrl,
        userToken: code.user_token,
        invitationToken: code.token,
      });
      const result = await simulateEnrollment({
        deeplink: code.deeplink,
        email: 'rita@example.com',
        firstname: null,
        lastname: null,
        type: 'android',
        agent_app: 'flyve',
      });
      expect(result, result.log.join('\n')).toMatchObject({ ok: true, error: null });
      expect((await t.admin('GET', `/agents/${result.agent_id}`)).body).toMatchObject({
        email: 'rita@example.com',
        enrollment_code_id: code.id,
      });
    } finally {
      await t.admin('PATCH', '/settings', { agent_app: 'spec' });
    }
    const spec = await makeCode();
    expect(deeplinkEncodingOf(new URL(spec.deeplink).searchParams.get('data')!)).toBe('spec');
  });
});

describe('the device simulator with a code', () => {
  it('enrolls with --deeplink and --email exactly as with an invitation; the simulate route makes up an allowed address', async () => {
    const code = await makeCode({ domains: ['example.com'] });
    const result = await simulateEnrollment({
      deeplink: code.deeplink,
      email: 'quinn@example.com',
      firstname: null,
      lastname: null,
      type: 'apple',
    });
    expect(result).toMatchObject({ ok: true, error: null });
    expect((await t.admin('GET', `/agents/${result.agent_id}`)).body).toMatchObject({
      email: 'quinn@example.com',
      enrollment_code_id: code.id,
      type: 'apple',
    });
    const refused = await simulateEnrollment({
      deeplink: code.deeplink,
      email: 'quinn@elsewhere.test',
      firstname: null,
      lastname: null,
      type: 'android',
    });
    expect(refused).toMatchObject({ ok: false, error: 'Wrong email address: this code is for addresses at @example.com' });
  });
});
