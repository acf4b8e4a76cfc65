// A late duplicate of POST PluginMdmAgent (test/cluster/enroll-kill found it under load): a device
// gives up on a slow enrollment, starts again with a new session and finishes (record read, MQTT
// password in hand); then the first attempt's POST, still in a slow node or behind the balancer,
// arrives. It is a replay of an enrollment that already happened: answered as that enrollment (201,
// the same agent id) and it changes nothing; the password the device holds keeps logging in. A
// genuine re-enrollment (a session opened after the enrollment, e.g. after a factory reset) still
// resets the agent and its password. Real HTTP, the embedded broker and an external Mosquitto
// (dynamic security: a re-enrollment deletes the device's broker client), a real mqtt.js client.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EnrollmentCode } from '../../../src-shared/contract/index.ts';
import type { AgentRow } from '../../../src-main/backend/agents/repository.ts';
import { agentCall, startTestBackend, TEST_ENGINE, type TestBackend } from '../../helpers/backend.ts';
import { BROKER_MODES_UNDER_TEST, brokerReady, startMosquitto, type MosquittoProcess } from '../../helpers/external-brokers.ts';
import { agentRow, closeClients, connectAgent, eventually, refusalCode } from '../../helpers/mqtt.ts';

let t: TestBackend;

async function makeCode(name: string): Promise<EnrollmentCode> {
  const created = await t.admin('POST', '/codes', { name });
  expect(created.status).toBe(201);
  return created.body as EnrollmentCode;
}

/** initSession, getFullSession, changeActiveProfile: a session ready to enroll. */
async function openSession(userToken: string, apiUrl = t.apiUrl): Promise<string> {
  const init = await agentCall(apiUrl, 'GET', `initSession?user_token=${userToken}`);
  expect(init.status).toBe(200);
  const session = init.body.session_token as string;
  const full = await agentCall(apiUrl, 'GET', `getFullSession?session_token=${session}`);
  const guest = full.body.plugin_mdm_guest_profiles_id as number;
  expect((await agentCall(apiUrl, 'POST', `changeActiveProfile?session_token=${session}&profiles_id=${guest}`)).status).toBe(200);
  return session;
}

function post(session: string, code: EnrollmentCode, device: { serial: string; uuid: string; email: string }, apiUrl = t.apiUrl) {
  return agentCall(apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, {
    body: {
      input: {
        _email: device.email,
        _invitation_token: code.token,
        _serial: device.serial,
        _uuid: device.uuid,
        version: '2.0.0',
        type: 'android',
      },
    },
  });
}

async function readRecord(session: string, id: number, apiUrl = t.apiUrl) {
  const read = await agentCall(apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${session}`);
  expect(read.status, JSON.stringify(read.body)).toBe(200);
  return read.body as { mqttpasswd: string; api_token: string; name: string };
}

async function eventTypes(agentId: number): Promise<string[]> {
  const rows = await t.sql.all<{ type: string }>('SELECT type FROM events WHERE agent_id = ? ORDER BY id', [agentId]);
  return rows.map((row) => row.type);
}

async function usesOf(code: EnrollmentCode): Promise<number> {
  return Number(await t.sql.value('SELECT uses FROM enrollment_codes WHERE id = ?', [code.id]));
}

let n = 0;
const newDevice = () => {
  n += 1;
  const serial = `RP${n}X${Math.random().toString(36).slice(2, 8).toUpperCase()}`;
  return { serial, uuid: crypto.randomUUID(), email: `${serial.toLowerCase()}@example.com` };
};

const MODES = BROKER_MODES_UNDER_TEST.filter((mode) => mode === 'embedded' || mode === 'mosquitto');

describe.each(MODES)('a late duplicate of POST PluginMdmAgent (broker %s)', (mode) => {
  let mosquitto: MosquittoProcess | undefined;
  beforeAll(async () => {
    if (mode === 'mosquitto') {
      mosquitto = await startMosquitto();
      t = await startTestBackend({ mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
    } else {
      t = await startTestBackend();
    }
    await brokerReady(t.backend);
  }, 120_000);
  afterEach(async () => {
    await closeClients();
  });
  afterAll(async () => {
    await t?.stop();
    await mosquitto?.destroy();
  }, 60_000);

  it("from a session opened before the device's enrollment: the same 201, nothing changed, the password still logs in", async () => {
    const code = await makeCode('Replay desk');
    const device = newDevice();
    const first = await openSession(code.user_token); // the attempt the device gave up on
    const second = await openSession(code.user_token); // the retry, which goes through
    const created = await post(second, code, device);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = Number(created.body.id);
    const record = await readRecord(second, id);
    const before = await agentRow(t, id);
    const uses = await usesOf(code);
    const events = await eventTypes(id);

    // The first attempt's POST arrives now.
    const late = await post(first, code, device);
    expect(late.status, JSON.stringify(late.body)).toBe(201);
    expect(late.body).toEqual(created.body);

    // Nothing changed: the row, the code's uses, the events (no agent.reenrolled).
    expect(await agentRow(t, id)).toEqual(before);
    expect(await usesOf(code)).toBe(uses);
    expect(await eventTypes(id)).toEqual(events);
    // The device's password logs in, its api_token opens a session.
    const client = await connectAgent(t, { serial: device.serial, password: record.mqttpasswd });
    expect(client.connected).toBe(true);
    expect((await agentCall(t.apiUrl, 'GET', `initSession?user_token=${record.api_token}`)).status).toBe(200);
    // The late session did not become the enrolling one: it reads no record (so draws no password).
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${first}`)).status).toBe(404);
  });

  it('the enrolling session posting again is a duplicate too', async () => {
    const code = await makeCode('Replay desk, same session');
    const device = newDevice();
    const session = await openSession(code.user_token);
    const created = await post(session, code, device);
    expect(created.status).toBe(201);
    const id = Number(created.body.id);
    const record = await readRecord(session, id);
    const before = await agentRow(t, id);

    const again = await post(session, code, device);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(created.body);
    expect(await agentRow(t, id)).toEqual(before);
    expect((await connectAgent(t, { serial: device.serial, password: record.mqttpasswd })).connected).toBe(true);
  });

  it('through an invitation (single use, used by the retry): refused with a 400, nothing changed, the password still logs in', async () => {
    const device = newDevice();
    const invited = await t.admin('POST', '/invitations', { email: device.email, send_email: false });
    expect(invited.status).toBe(201);
    const invitation = invited.body as { user_token: string; invitation_token: string };
    const asCode = { token: invitation.invitation_token } as EnrollmentCode;
    const first = await openSession(invitation.user_token); // the attempt the device gave up on
    const second = await openSession(invitation.user_token); // the retry, which goes through
    const created = await post(second, asCode, device);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = Number(created.body.id);
    const record = await readRecord(second, id);
    const before = await agentRow(t, id);

    // The first attempt's POST arrives now: the invitation is used, so it is refused (docs/agent-api.md).
    const late = await post(first, asCode, device);
    expect(late.status, JSON.stringify(late.body)).toBe(400);
    expect(late.body[0]).toBe('ERROR_CORE_ADD');
    expect(await agentRow(t, id)).toEqual(before);
    expect(await eventTypes(id)).not.toContain('agent.reenrolled');
    expect((await connectAgent(t, { serial: device.serial, password: record.mqttpasswd })).connected).toBe(true);
  });

  it('a session opened after the enrollment (a factory reset) still re-enrolls: new password, the old one refused', async () => {
    const code = await makeCode('Reset desk');
    const device = newDevice();
    const session = await openSession(code.user_token);
    const created = await post(session, code, device);
    const id = Number(created.body.id);
    const old = await readRecord(session, id);

    const fresh = await openSession(code.user_token);
    const again = await post(fresh, code, device);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.id).toBe(String(id));
    expect((await agentRow(t, id)).mqtt_password_hash).toBeNull();
    expect(await eventTypes(id)).toContain('agent.reenrolled');
    await eventually(async () => (await refusalCode(t, { serial: device.serial, password: old.mqttpasswd })) !== 0, 10_000);
    expect((await agentCall(t.apiUrl, 'GET', `initSession?user_token=${old.api_token}`)).status).toBe(401);

    const record = await readRecord(fresh, id);
    expect((await connectAgent(t, { serial: device.serial, password: record.mqttpasswd })).connected).toBe(true);
    // and the session that enrolled it before is now one opened before the current enrollment
    const late = await post(session, code, device);
    expect(late.status).toBe(201);
    expect(await refusalCode(t, { serial: device.serial, password: record.mqttpasswd })).toBe(0);
  });
});

// Two nodes on one PostgreSQL database: the stale POST's node reads the device (enrolled through an
// older session) before the retry's enrollment commits on the other node, and writes after it. The
// per-process serial queue orders nothing across nodes; the re-enrollment's UPDATE itself must
// refuse to go back to an older session, and the stale transaction roll back whole. The interleaving
// is made deterministic by holding the stale node right after its read: its agent repository's
// loginOwner (the next call after the device is read, outside the transaction) waits for the
// retry to finish on the other node. SQLite is one file for one node: the race needs several.
describe.skipIf(TEST_ENGINE !== 'postgres')('a late duplicate racing the retry on another node (PostgreSQL)', () => {
  let t2: TestBackend;
  let mosquitto: MosquittoProcess;
  beforeAll(async () => {
    // Several nodes share an external broker (the embedded one serves one node).
    mosquitto = await startMosquitto();
    const broker = { mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl } as const;
    t = await startTestBackend(broker);
    t2 = await startTestBackend({ ...broker, databaseUrl: t.backend.options.databaseUrl!, nodeName: 'replay-second' });
    await brokerReady(t.backend);
    await brokerReady(t2.backend);
  }, 120_000);
  afterEach(async () => {
    await closeClients();
  });
  afterAll(async () => {
    await t2?.stop();
    await t?.stop();
    await mosquitto?.destroy();
  }, 60_000);

  it("the stale node's re-enrollment, read before the retry committed and written after, changes nothing", async () => {
    const code = await makeCode('Replay race desk');
    const device = newDevice();
    // Enrolled once (e.g. before a factory reset): the stale POST reads this enrollment.
    const original = await openSession(code.user_token);
    const id = Number((await post(original, code, device)).body.id);
    const stale = await openSession(code.user_token); // the attempt the device gives up on
    const retry = await openSession(code.user_token, t2.apiUrl); // the retry, through the other node

    let retried:
      { created: Awaited<ReturnType<typeof post>>; password: string; row: AgentRow; uses: number; events: string[] } | undefined;
    const repository = t.backend.services.agentRepository;
    const loginOwner = repository.loginOwner.bind(repository);
    let armed = true;
    repository.loginOwner = async (login: string) => {
      if (armed && login === device.serial) {
        armed = false;
        const created = await post(retry, code, device, t2.apiUrl);
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const password = (await readRecord(retry, id, t2.apiUrl)).mqttpasswd;
        retried = { created, password, row: await agentRow(t2, id), uses: await usesOf(code), events: await eventTypes(id) };
      }
      return loginOwner(login);
    };
    let late: Awaited<ReturnType<typeof post>>;
    try {
      late = await post(stale, code, device);
    } finally {
      repository.loginOwner = loginOwner;
    }
    expect(retried, 'the retry ran between the stale read and its write').toBeDefined();
    expect(late.status, JSON.stringify(late.body)).toBe(201);
    expect(late.body).toEqual(retried!.created.body);
    // The retry's enrollment stands, whole: the row (its session, its password), the code's uses, the events.
    expect(retried!.row.mqtt_password_hash).not.toBeNull();
    expect(await agentRow(t2, id)).toEqual(retried!.row);
    expect(await usesOf(code)).toBe(retried!.uses);
    expect(await eventTypes(id)).toEqual(retried!.events);
    expect((await connectAgent(t2, { serial: device.serial, password: retried!.password })).connected).toBe(true);
    // The stale session did not become the enrolling one.
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${stale}`)).status).toBe(404);
  });
});
