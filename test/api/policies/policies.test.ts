// Value policies over the real broker, admin API and SQLite file: the catalogue's messages on the
// wire byte for byte, validation, unicity, the deploy/remove conflict, a device's own value beating
// its fleet's, incompatible by Android version and by permission, joining and leaving a fleet.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { closeClients, connectAgent, enrollAgent, eventually, inbox, type EnrolledAgent } from '../../helpers/mqtt.ts';

let t: TestBackend;
beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await closeClients();
  await t.stop();
});

const inventory = (androidVersion: string) =>
  Buffer.from(
    `<REQUEST><CONTENT><BIOS><SMODEL>Pixel</SMODEL></BIOS><OPERATINGSYSTEM><NAME>Android</NAME><VERSION>${androidVersion}</VERSION></OPERATINGSYSTEM></CONTENT></REQUEST>`,
  ).toString('base64');

async function fleet(name: string): Promise<{ id: number; topic: string }> {
  const { status, body } = await t.admin('POST', '/fleets', { name });
  expect(status).toBe(201);
  return { id: body.id, topic: `/1/fleet/${body.id}` };
}

/** An enrolled agent listening, as the Flyve agent does, on its own topic and its fleet's. */
async function listening(agent: EnrolledAgent, fleetTopic: string) {
  const client = await connectAgent(t, agent);
  const box = inbox(client);
  await client.subscribeAsync([`${agent.topic}/#`, `${fleetTopic}/#`], { qos: 1 });
  return { client, box };
}

async function set(body: Record<string, unknown>) {
  return t.admin('POST', '/policy-assignments', body);
}

const taskOf = async (assignmentId: number, agentId: number) => {
  const { body } = await t.admin('GET', `/policy-assignments/${assignmentId}`);
  return body.tasks.find((task: { agent_id: number }) => task.agent_id === agentId);
};

describe('value policies', () => {
  it('serves the catalogue', async () => {
    const { status, body } = await t.admin('GET', '/policies');
    expect(status).toBe(200);
    expect(body.items).toHaveLength(42);
    expect(body.items.find((p: { symbol: string }) => p.symbol === 'maximumTimeToLock')).toMatchObject({
      type: 'int',
      unit: 'milliseconds',
      schema: { type: 'integer', minimum: 0, maximum: 86_400_000 },
    });
  });

  it('publishes each value type retained in the reference shape, and a removal clears it', async () => {
    const f = await fleet('Wire');
    const agent = await enrollAgent(t, { fleet: 'Wire' });
    const { box } = await listening(agent, f.topic);

    const camera = await set({ policy: 'disableCamera', value: true, fleet: 'Wire' });
    expect(camera.status).toBe(201);
    expect(camera.body).toMatchObject({ policy: 'disableCamera', value: true, label: 'Disable camera', total: 1, pending: 1 });
    const length = await set({ policy: 'passwordMinLength', value: 6, fleet_id: f.id });
    const enabled = await set({ policy: 'passwordEnabled', value: 'PASSWORD_PIN', fleet: String(f.id) });
    expect([length.status, enabled.status]).toEqual([201, 201]);

    const expected = [
      [`${f.topic}/Policy/disableCamera/Task/${camera.body.id}`, `{"disableCamera":"true","taskId":${camera.body.id}}`],
      [`${f.topic}/Policy/passwordMinLength/Task/${length.body.id}`, `{"passwordMinLength":6,"taskId":${length.body.id}}`],
      [
        `${f.topic}/Policy/passwordEnabled/Task/${enabled.body.id}`,
        `{"passwordEnabled":"PASSWORD_PIN","taskId":${enabled.body.id}}`,
      ],
    ];
    for (const [topic, text] of expected) expect((await box.next((m) => m.topic === topic)).text).toBe(text);

    // A device enrolled later gets them retained.
    const again = await enrollAgent(t, { fleet: 'Wire' });
    const { box: lateBox } = await listening(again, f.topic);
    for (const [topic, text] of expected) {
      const message = await lateBox.next((m) => m.topic === topic);
      expect([message.text, message.retain]).toEqual([text, true]);
    }

    // Unset: an empty retained message on the same topic, the open tasks canceled.
    const removed = await t.admin('DELETE', `/policy-assignments/${camera.body.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body.removed).toMatchObject({ state: 'removed', canceled: 2 });
    const cleared = await box.next((m) => m.topic === expected[0]![0] && m.text === '');
    expect(cleared.text).toBe('');
    const fresh = await enrollAgent(t, { fleet: 'Wire' });
    const { box: freshBox } = await listening(fresh, f.topic);
    await freshBox.next((m) => m.topic === expected[1]![0]);
    expect(freshBox.messages.filter((m) => m.topic === expected[0]![0])).toEqual([]);
  });

  it('refuses bad values with a clear 400 and a second value of a policy with a 409 naming the first', async () => {
    const f = await fleet('Rules');
    for (const [body, message] of [
      [{ policy: 'disableCamera', value: 'yes', fleet_id: f.id }, /disableCamera: expected true or false/],
      [{ policy: 'passwordMinLength', value: -1, fleet_id: f.id }, /expected an integer from 0 to 64 \(characters\)/],
      [{ policy: 'maximumTimeToLock', value: 86_400_001, fleet_id: f.id }, /0 to 86400000 \(milliseconds\)/],
      [
        { policy: 'passwordEnabled', value: 'PIN', fleet_id: f.id },
        /expected one of PASSWORD_NONE, PASSWORD_PIN, PASSWORD_PASSWD/,
      ],
      [{ policy: 'noSuchPolicy', value: true, fleet_id: f.id }, /Unknown policy "noSuchPolicy"/],
      [{ policy: 'deployApp', value: 'org.x', fleet_id: f.id }, /deployApp: expected package id/],
      [{ policy: 'disableCamera', value: true }, /exactly one target/],
      [{ policy: 'disableCamera', value: true, fleet: 'Nope' }, /Unknown fleet "Nope"/],
    ] as const) {
      const refused = await set(body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.message).toMatch(message);
    }
    expect((await set({ policy: 'disableCamera', value: { x: 1 }, fleet_id: f.id })).status).toBe(400);
    // Values are taken as they are, never coerced into another type (0 once became false, and was refused).
    expect((await set({ policy: 'passwordMinLength', value: true, fleet_id: f.id })).body.message).toMatch(/expected an integer/);
    expect((await set({ policy: 'disableCamera', value: 1, fleet_id: f.id })).body.message).toMatch(/expected true or false/);
    expect((await set({ policy: 'passwordMinLength', value: '6', fleet_id: f.id })).status).toBe(400);
    const zero = await set({ policy: 'periodicGeolocation', value: 0, fleet_id: f.id });
    expect([zero.status, zero.body.value, zero.body.message]).toEqual([201, 0, { periodicGeolocation: 0, taskId: zero.body.id }]);
    const no = await set({ policy: 'disableBluetooth', value: false, fleet_id: f.id });
    expect([no.status, no.body.value, no.body.message]).toEqual([201, false, { disableBluetooth: 'false', taskId: no.body.id }]);

    const first = await set({ policy: 'disableWifi', value: true, fleet_id: f.id });
    expect(first.status).toBe(201);
    const second = await set({ policy: 'disableWifi', value: false, fleet: 'Rules' });
    expect(second.status).toBe(409);
    expect(second.body).toEqual({
      error: 'ERROR_POLICY_ALREADY_SET',
      message: `disableWifi is already set on fleet "Rules" to true (assignment #${first.body.id}): unset it first`,
    });
    expect((await t.admin('DELETE', `/policy-assignments/${first.body.id}`)).status).toBe(200);
    expect((await t.admin('DELETE', `/policy-assignments/${first.body.id}`)).status).toBe(409);
    expect((await set({ policy: 'disableWifi', value: false, fleet: 'Rules' })).status).toBe(201);
  });

  it("makes a device's own value beat its fleet's: the fleet task is overriden, and applies again when the device's goes", async () => {
    const f = await fleet('Override');
    const agent = await enrollAgent(t, { fleet: 'Override' });
    const other = await enrollAgent(t, { fleet: 'Override' });
    const { client, box } = await listening(agent, f.topic);

    const fleetValue = await set({ policy: 'disableBluetooth', value: true, fleet_id: f.id });
    const fleetTopic = `${f.topic}/Policy/disableBluetooth/Task/${fleetValue.body.id}`;
    await box.next((m) => m.topic === fleetTopic);
    const own = await set({ policy: 'disableBluetooth', value: false, agent_id: agent.id });
    expect(own.status).toBe(201);
    const ownTopic = `${agent.topic}/Policy/disableBluetooth/Task/${own.body.id}`;
    expect((await box.next((m) => m.topic === ownTopic)).text).toBe(`{"disableBluetooth":"false","taskId":${own.body.id}}`);

    expect(await taskOf(fleetValue.body.id, agent.id)).toMatchObject({
      status: 'overriden',
      reason: `the device's own value applies (assignment #${own.body.id})`,
    });
    expect(await taskOf(fleetValue.body.id, other.id)).toMatchObject({ status: 'pending' });
    const effective = (await t.admin('GET', `/agents/${agent.id}/policies`)).body.items;
    expect(effective.filter((p: { policy: string }) => p.policy === 'disableBluetooth')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ source: 'fleet', value: true, status: 'overriden', effective: false }),
        expect.objectContaining({ source: 'device', value: false, status: 'pending', effective: true }),
      ]),
    );

    // The device reports on both tasks (it applies both messages): the overriden one stays overriden.
    client.publish(`${agent.topic}/Status/Task/${fleetValue.body.id}`, JSON.stringify({ status: 'done' }));
    client.publish(`${agent.topic}/Status/Task/${own.body.id}`, JSON.stringify({ status: 'done' }));
    await eventually(async () => (await taskOf(own.body.id, agent.id)).status === 'done');
    expect((await taskOf(fleetValue.body.id, agent.id)).status).toBe('overriden');

    // A device-level value of the same policy cannot be set twice either.
    expect((await set({ policy: 'disableBluetooth', value: true, agent_id: agent.id })).status).toBe(409);

    const before = box.messages.filter((m) => m.topic === fleetTopic).length;
    expect((await t.admin('DELETE', `/policy-assignments/${own.body.id}`)).status).toBe(200);
    expect(await taskOf(fleetValue.body.id, agent.id)).toMatchObject({
      status: 'pending',
      reason: "the device's own value was removed",
    });
    // The fleet's value is delivered again, so that the device applies it once more.
    await eventually(() => box.messages.filter((m) => m.topic === fleetTopic && m.text !== '').length > before);
  });

  it('marks incompatible what the device cannot apply: Android too old (inventory), system-only without permission', async () => {
    await fleet('Old phones');
    const old = await enrollAgent(t, { fleet: 'Old phones', extra: { has_system_permission: '0', inventory: inventory('4.4') } });
    const modern = await enrollAgent(t, {
      fleet: 'Old phones',
      extra: { has_system_permission: '1', inventory: inventory('13') },
    });
    const roaming = await set({ policy: 'disableRoaming', value: true, fleet: 'Old phones' }); // Android 5.0+
    const adb = await set({ policy: 'disableUsbAdb', value: true, fleet: 'Old phones' }); // system-only
    expect(roaming.body).toMatchObject({
      total: 2,
      incompatible: 1,
      pending: 1,
      progress: '0 of 2 done, 1 incompatible, 1 pending',
    });
    expect(await taskOf(roaming.body.id, old.id)).toMatchObject({
      status: 'incompatible',
      reason: 'Android 4.4 is older than 5.0, the minimum of this policy',
    });
    expect(await taskOf(roaming.body.id, modern.id)).toMatchObject({ status: 'pending' });
    expect(await taskOf(adb.body.id, old.id)).toMatchObject({
      status: 'incompatible',
      reason: 'this policy needs an agent with system permission, and this one reported none',
    });
    expect(await taskOf(adb.body.id, modern.id)).toMatchObject({ status: 'pending' });

    // A new inventory changes what the server knows: the upgraded phone's task opens again, the other closes.
    const put = async (agent: EnrolledAgent, version: string) => {
      const session = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${agent.record.api_token}`)).body.session_token;
      const response = await agentCall(t.apiUrl, 'PUT', `PluginFlyvemdmAgent/${agent.id}`, {
        headers: { 'Session-Token': session },
        body: { input: { _inventory: inventory(version) } },
      });
      expect(response.status).toBe(200);
    };
    await put(old, '6.0.1');
    await eventually(async () => (await taskOf(roaming.body.id, old.id)).status === 'pending');
    await put(modern, '4.1');
    await eventually(async () => (await taskOf(roaming.body.id, modern.id)).status === 'incompatible');
    expect((await taskOf(adb.body.id, old.id)).status).toBe('incompatible'); // still no system permission

    const compliance = (await t.admin('GET', `/compliance?fleet_id=${roaming.body.fleet_id}`)).body.items;
    expect(compliance.map((c: { agent_id: number; state: string }) => [c.agent_id, c.state])).toEqual([
      [old.id, 'failing'],
      [modern.id, 'failing'],
    ]);
    expect(compliance[0].summary).toBe('1 incompatible, 1 pending');
  });

  it('gives a device joining a fleet its policies, cancels them when it leaves, and counts its compliance', async () => {
    const a = await fleet('Join A');
    await fleet('Join B');
    const agent = await enrollAgent(t, { fleet: 'Join A' });
    const policy = await set({ policy: 'disableNfc', value: true, fleet_id: a.id });
    const bPolicy = await set({ policy: 'passwordMinLength', value: 8, fleet: 'Join B' });
    expect(bPolicy.body.total).toBe(0);
    const { client } = await listening(agent, a.topic);
    client.publish(`${agent.topic}/Status/Task/${policy.body.id}`, JSON.stringify({ status: 'received' }));
    client.publish(`${agent.topic}/Status/Task/${policy.body.id}`, JSON.stringify({ status: 'done' }));
    await eventually(async () => (await taskOf(policy.body.id, agent.id)).status === 'done');
    let mine = (await t.admin('GET', `/compliance?fleet_id=${a.id}`)).body.items.find(
      (c: { agent_id: number }) => c.agent_id === agent.id,
    );
    expect(mine).toMatchObject({ state: 'compliant', summary: 'all 1 done' });
    // An agent cannot claim the server's decision.
    client.publish(`${agent.topic}/Status/Task/${policy.body.id}`, JSON.stringify({ status: 'overriden' }));

    expect((await t.admin('PATCH', `/agents/${agent.id}`, { fleet: 'Join B' })).status).toBe(200);
    await eventually(async () => (await taskOf(bPolicy.body.id, agent.id))?.status === 'pending');
    // done stays done in the old fleet's history; an open task there would have been canceled.
    expect((await taskOf(policy.body.id, agent.id)).status).toBe('done');
    mine = (await t.admin('GET', '/compliance')).body.items.find((c: { agent_id: number }) => c.agent_id === agent.id);
    expect(mine).toMatchObject({ fleet_id: bPolicy.body.fleet_id, state: 'pending', summary: '1 pending' });

    const open = await set({ policy: 'disableGPS', value: true, fleet: 'Join B' });
    expect((await t.admin('PATCH', `/agents/${agent.id}`, { fleet: 'Join A' })).status).toBe(200);
    await eventually(async () => (await taskOf(open.body.id, agent.id)).status === 'canceled');
    expect((await taskOf(open.body.id, agent.id)).reason).toBe('the device left fleet "Join B"');
  });
});

describe('deployments keep the reference conflict rule', () => {
  it('refuses to deploy a file while its removal is in force, naming the removal', async () => {
    const f = await fleet('Conflict');
    const upload = await fetch(`${t.backend.info.admin_url}/api/files?name=notes.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
      body: Buffer.from('hello'),
    });
    const file = (await upload.json()) as { id: number };
    const deploy = () =>
      t.admin('POST', '/deployments', {
        kind: 'file',
        item_id: file.id,
        fleet: String(f.id),
        destination: '%SDCARD%/Docs/',
        remove_on_delete: true,
      });
    const first = await deploy();
    expect(first.status).toBe(201);
    const { body } = await t.admin('DELETE', `/deployments/${first.body.id}`);
    const removalId = body.removal.id;
    const refused = await deploy();
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      error: 'ERROR_POLICY_CONFLICT',
      message: `removeFile "%SDCARD%/Docs/notes.txt" is in force on fleet "Conflict" (assignment #${removalId}): remove it first (DELETE /api/policy-assignments/${removalId})`,
    });
    expect((await t.admin('DELETE', `/deployments/${removalId}`)).status).toBe(200);
    expect((await deploy()).status).toBe(201);
  });
});
