// Deployments over the real broker and agent API: simulated devices obey deployApp, deployFile,
// removeApp and removeFile policies, report each task, and the server follows them.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { dialectOf } from '../../../src-main/device/dialect.ts';
import type { TaskReportChannel } from '../../../src-main/device/policy-agent.ts';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { closeClients, connectAgent, enrollAgent, eventually, inbox, nextEvent, ofAgent } from '../../helpers/mqtt.ts';

const APK = readFileSync(fileURLToPath(new URL('../../fixtures/field-app.apk', import.meta.url)));

let t: TestBackend;
let counter = 0;
const devices: SimulatedDevice[] = [];

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await Promise.all(devices.map((device) => device.stop()));
  await closeClients();
  await t.stop();
});

async function upload(kind: 'files' | 'packages', name: string, bytes: Buffer, query = ''): Promise<any> {
  const response = await fetch(`${t.backend.info.admin_url}/api/${kind}?name=${encodeURIComponent(name)}${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body: bytes,
  });
  expect(response.status).toBe(201);
  return response.json();
}

async function fleet(name: string): Promise<number> {
  const { status, body } = await t.admin('POST', '/fleets', { name });
  expect(status).toBe(201);
  return body.id;
}

async function device(fleetName: string, reports: TaskReportChannel = 'mqtt'): Promise<SimulatedDevice> {
  counter += 1;
  const email = `deploy${counter}@example.com`;
  const { body } = await t.admin('POST', '/invitations', { email, fleet: fleetName, send_email: false });
  const started = await startDevice({
    deeplink: body.deeplink,
    email,
    reports,
    chunkSize: 4096,
    mqtt: { backoff: { initialMs: 100, maxMs: 1000 } },
  });
  devices.push(started);
  return started;
}

async function deployment(id: number): Promise<any> {
  const { status, body } = await t.admin('GET', `/deployments/${id}`);
  expect(status).toBe(200);
  return body;
}

const allDone = (id: number, count: number) =>
  eventually(async () => {
    const d = await deployment(id);
    return d.done === count && d.total === count ? d : false;
  }, 20_000);

describe('packages', () => {
  it('an uploaded APK is described by its manifest, and devices read package_name, dl_filename and version_code', async () => {
    const item = await upload('packages', 'field-app.apk', APK);
    expect(item).toMatchObject({
      package_name: 'org.example.fieldapp',
      version_code: 42,
      version_name: '4.2.0',
      label: 'Field App',
    });
    expect(item.icon).toMatch(/^data:image\/png;base64,/);

    const other = await upload(
      'packages',
      'tool.ipa',
      Buffer.from('not an apk'),
      '&package_name=com.example.tool&version_code=7&version_name=1.0',
    );
    expect(other).toMatchObject({ package_name: 'com.example.tool', version_code: 7, version_name: '1.0', label: null });
    const bad = await fetch(`${t.backend.info.admin_url}/api/packages/${other.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ package_name: 'no dots here' }),
    });
    expect(bad.status).toBe(400);

    const phone = await device('Default fleet');
    const session = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${phone.enrollment.apiToken}`);
    const meta = await agentCall(t.apiUrl, 'GET', `PluginMdmPackage/${item.id}?session_token=${session.body.session_token}`);
    expect(meta.body).toMatchObject({
      id: item.id,
      name: 'field-app.apk',
      dl_filename: 'field-app.apk',
      package_name: 'org.example.fieldapp',
      version_code: 42,
    });
  });
});

describe('deploying to a fleet', () => {
  it('three devices take a package, report each step, and a device joining later gets it too', async () => {
    const fleetId = await fleet('Field team');
    const phones = [
      await device('Field team'),
      await device('Field team', 'http'),
      await device('Field team', 'mqtt-policy-topic'),
    ];
    const pkg = await upload('packages', 'field-app.apk', APK);

    const created = await t.admin('POST', '/deployments', { kind: 'package', item_id: pkg.id, fleet_id: fleetId });
    expect(created.status).toBe(201);
    expect(created.body.total).toBe(3);
    expect(created.body.topic).toBe(`/1/fleet/${fleetId}/Policy/deployApp/Task/${created.body.id}`);
    expect(created.body.message).toEqual({
      deployApp: 'org.example.fieldapp',
      id: pkg.id,
      versionCode: 42,
      taskId: created.body.id,
    });
    expect(await t.backend.broker.retained(created.body.topic)).toBe(JSON.stringify(created.body.message));

    const done = await allDone(created.body.id, 3);
    expect(done.progress).toBe('3 of 3 done');
    for (const task of done.tasks)
      expect(task.history.map((h: any) => h.status)).toEqual(['pending', 'received', 'in progress', 'done']);
    expect(new Set(done.tasks.flatMap((task: any) => task.history.slice(1).map((h: any) => h.source)))).toEqual(
      new Set(['mqtt', 'http']),
    );
    for (const phone of phones)
      expect(phone.policies.state.apps['org.example.fieldapp']).toMatchObject({
        packageId: pkg.id,
        versionCode: 42,
        size: APK.length,
      });

    const late = await device('Field team');
    await allDone(created.body.id, 4);
    expect(late.policies.state.apps['org.example.fieldapp']?.sha256).toBe(pkg.sha256);

    // Deploying the same package again to the same fleet is refused.
    expect((await t.admin('POST', '/deployments', { kind: 'package', item_id: pkg.id, fleet_id: fleetId })).status).toBe(409);

    // Removing with remove_on_delete off: the retained policy is cleared, the apps stay.
    const removed = await t.admin('DELETE', `/deployments/${created.body.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body.removal).toBeNull();
    expect(removed.body.removed.state).toBe('removed');
    await eventually(async () => (await t.backend.broker.retained(created.body.topic)) === null);
    expect(phones[0]!.policies.state.apps['org.example.fieldapp']).toBeDefined();
  });

  it('with remove_on_delete, removing the deployment publishes removeApp and the devices uninstall', async () => {
    const fleetId = await fleet('Kiosks');
    const phones = [await device('Kiosks'), await device('Kiosks')];
    const pkg = await upload('packages', 'field-app.apk', APK);
    const created = (
      await t.admin('POST', '/deployments', { kind: 'package', item_id: pkg.id, fleet_id: fleetId, remove_on_delete: true })
    ).body;
    await allDone(created.id, 2);

    const { body } = await t.admin('DELETE', `/deployments/${created.id}`);
    expect(body.removal).toMatchObject({
      policy: 'removeApp',
      total: 2,
      message: { removeApp: 'org.example.fieldapp', taskId: body.removal.id },
    });
    await allDone(body.removal.id, 2);
    for (const phone of phones) expect(phone.policies.state.apps['org.example.fieldapp']).toBeUndefined();
  });

  it('a file lands under its destination; removeFile takes it away; a deleted file fails with its reason', async () => {
    const fleetId = await fleet('Warehouse');
    const phone = await device('Warehouse');
    const manual = await upload('files', 'manual.pdf', Buffer.alloc(10_000, 7));
    const created = (
      await t.admin('POST', '/deployments', {
        kind: 'file',
        item_id: manual.id,
        fleet_id: fleetId,
        destination: '%SDCARD%/Docs',
        remove_on_delete: true,
      })
    ).body;
    // Stored and sent with the trailing "/" the agents need (they join folder and name with no separator).
    expect(created.message).toEqual({ deployFile: '%SDCARD%/Docs/', id: manual.id, version: 1, taskId: created.id });
    await allDone(created.id, 1);
    expect(phone.policies.state.files['%SDCARD%/Docs/manual.pdf']).toMatchObject({
      fileId: manual.id,
      size: 10_000,
      sha256: manual.sha256,
    });
    const { body } = await t.admin('DELETE', `/deployments/${created.id}`);
    expect(body.removal.message).toEqual({ removeFile: '%SDCARD%/Docs/manual.pdf', taskId: body.removal.id });
    await allDone(body.removal.id, 1);
    expect(phone.policies.state.files['%SDCARD%/Docs/manual.pdf']).toBeUndefined();

    // The file goes away before the device of a new fleet gets to it: it joins later and fails.
    const lostFleet = await fleet('Lost and found');
    const gone = await upload('files', 'gone.txt', Buffer.from('soon deleted'));
    const doomed = (await t.admin('POST', '/deployments', { kind: 'file', item_id: gone.id, fleet_id: lostFleet })).body;
    expect((await t.admin('DELETE', `/files/${gone.id}`)).status).toBe(204);
    await device('Lost and found');
    await eventually(async () => (await deployment(doomed.id)).failed === 1);
    const failed = (await deployment(doomed.id)).tasks[0];
    expect(failed.status).toBe('failed');
    expect(failed.history.map((h: any) => h.status)).toEqual(['pending', 'received', 'in progress', 'failed']);
    expect(failed.reason).toMatch(/404.*PluginMdmFile/);
  });
});

describe('the reference agents (Flyve dialect)', () => {
  it('rc.7 reports its tasks over REST (search + PUT PluginFlyvemdmTaskstatus), rc.6 under the policy topic', async () => {
    const fleetId = await fleet('Flyve phones');
    const phones: SimulatedDevice[] = [];
    for (const reports of ['http', 'mqtt'] as const) {
      counter += 1;
      const email = `flyve-deploy${counter}@example.com`;
      const { body } = await t.admin('POST', '/invitations', { email, fleet: 'Flyve phones', send_email: false });
      const phone = await startDevice({ deeplink: body.deeplink, email, dialect: dialectOf('flyve', reports), chunkSize: 4096 });
      devices.push(phone);
      phones.push(phone);
    }
    const pkg = await upload('packages', 'field-app.apk', APK);
    const created = (await t.admin('POST', '/deployments', { kind: 'package', item_id: pkg.id, fleet_id: fleetId })).body;
    const done = await allDone(created.id, 2);
    const sources = Object.fromEntries(
      done.tasks.map((task: any) => [task.agent_id, task.history.slice(1).map((h: any) => h.source)]),
    );
    expect(sources[phones[0]!.enrollment.agentId]).toEqual(['http', 'http', 'http']);
    expect(sources[phones[1]!.enrollment.agentId]).toEqual(['mqtt', 'mqtt', 'mqtt']);
    for (const phone of phones) expect(phone.policies.state.apps['org.example.fieldapp']?.sha256).toBe(pkg.sha256);
  });
});

describe('fleet membership', () => {
  it('a device moved out gets its open tasks canceled; moved back, they open again', async () => {
    const fleetId = await fleet('Movers');
    const other = await fleet('Elsewhere');
    const agent = await enrollAgent(t, { fleet: 'Movers' }); // enrolled, never connected: its task stays pending
    const manual = await upload('files', 'notes.txt', Buffer.from('hello'));
    const created = (await t.admin('POST', '/deployments', { kind: 'file', item_id: manual.id, fleet_id: fleetId })).body;
    expect(created.pending).toBe(1);

    await t.admin('PATCH', `/agents/${agent.id}`, { fleet_id: other });
    const moved = await deployment(created.id);
    expect(moved.tasks[0]).toMatchObject({ status: 'canceled', reason: 'the device left fleet "Movers"' });
    expect(moved.progress).toBe('0 of 0 done, 1 canceled');
    const tasks = (await t.admin('GET', `/agents/${agent.id}/tasks`)).body.items;
    expect(tasks[0].history.map((h: any) => h.status)).toEqual(['pending', 'canceled']);

    await t.admin('PATCH', `/agents/${agent.id}`, { fleet_id: fleetId });
    expect((await deployment(created.id)).tasks[0].status).toBe('pending');
  });

  it('an unenrolled device gets its open tasks canceled; enrolled again, they open again', async () => {
    const fleetId = await fleet('Leavers');
    const agent = await enrollAgent(t, { fleet: 'Leavers' });
    const item = await upload('files', 'leaver.txt', Buffer.from('bye'));
    const toFleet = (await t.admin('POST', '/deployments', { kind: 'file', item_id: item.id, fleet_id: fleetId })).body;
    const toDevice = (
      await t.admin('POST', '/deployments', {
        kind: 'file',
        item_id: item.id,
        agent_id: agent.id,
        destination: '%SDCARD%/own.txt',
      })
    ).body;
    expect([toFleet.pending, toDevice.pending]).toEqual([1, 1]);

    const client = await connectAgent(t, agent);
    const box = inbox(client);
    await client.subscribeAsync(`${agent.topic}/#`);
    expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'unenroll' })).status).toBe(202);
    await box.next((m) => m.topic === `${agent.topic}/Command/Unenroll`);
    const unenrolled = nextEvent(t, ofAgent(agent.id, 'agent.unenrolled'));
    await client.publishAsync(`${agent.topic}/Status/Unenroll`, JSON.stringify({ unenroll: 'unenrolled' }), { qos: 1 });
    await unenrolled;
    for (const id of [toFleet.id, toDevice.id]) {
      const after = await eventually(async () => {
        const d = await deployment(id);
        return d.tasks[0].status === 'canceled' ? d : false;
      });
      expect(after.tasks[0].reason).toBe('the device was unenrolled');
      expect(after.progress).toBe('0 of 0 done, 1 canceled');
    }

    const again = await enrollAgent(t, { fleet: 'Leavers', serial: agent.serial });
    expect(again.id).toBe(agent.id);
    for (const id of [toFleet.id, toDevice.id]) {
      await eventually(async () => (await deployment(id)).tasks[0].status === 'pending');
    }
  });

  it('a fleet with devices cannot be deleted; an empty one can, and its deployments go with it', async () => {
    const fleetId = await fleet('Temporary');
    const manual = await upload('files', 'temp.txt', Buffer.from('x'));
    const created = (await t.admin('POST', '/deployments', { kind: 'file', item_id: manual.id, fleet_id: fleetId })).body;
    expect((await t.admin('DELETE', `/fleets/${fleetId}`)).status).toBe(204);
    expect((await deployment(created.id)).state).toBe('removed');
    await eventually(async () => (await t.backend.broker.retained(created.topic)) === null);
    const busy = await fleet('Busy');
    await enrollAgent(t, { fleet: 'Busy' });
    const refused = await t.admin('DELETE', `/fleets/${busy}`);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/still has 1 device/);
    expect((await t.admin('DELETE', '/fleets/1')).status).toBe(409);
  });
});

describe('task reports', () => {
  it("a device cannot report another device's task, over MQTT or REST; bad statuses are refused", async () => {
    await fleet('Reporters');
    const mine = await enrollAgent(t, { fleet: 'Reporters' });
    const theirs = await enrollAgent(t, { fleet: 'Reporters' });
    const manual = await upload('files', 'theirs.txt', Buffer.from('theirs'));
    const created = (await t.admin('POST', '/deployments', { kind: 'file', item_id: manual.id, agent_id: theirs.id })).body;
    expect(created.topic).toBe(`${theirs.topic}/Policy/deployFile/Task/${created.id}`);

    // MQTT: on its own topic, about the other's task: refused and noted.
    const client = await connectAgent(t, mine);
    await client.publishAsync(`${mine.topic}/Status/Task/${created.id}`, JSON.stringify({ status: 'done' }), { qos: 1 });
    await eventually(async () =>
      (await t.backend.services.events.forAgent(mine.id)).some((e) => e.type === 'task.report_refused'),
    );
    // On the other's topic: the ACL drops it.
    await client.publishAsync(`${theirs.topic}/Status/Task/${created.id}`, JSON.stringify({ status: 'done' }), { qos: 1 });

    // REST: the search shows nothing of the other's, and its row cannot be written.
    const mySession = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${mine.record.api_token}`)).body.session_token;
    const search = await agentCall(
      t.apiUrl,
      'GET',
      `search/PluginMdmTaskstatus/?criteria[0][field]=5&criteria[0][searchtype]=contains&criteria[0][value]=${theirs.id}&criteria[1][field]=6&criteria[1][searchtype]=contains&criteria[1][value]=${created.id}&forcedisplay=2&session_token=${mySession}`,
    );
    expect(search.status).toBe(200);
    expect(search.body).toMatchObject({ totalcount: 0, data: [] });
    const rowId = (await deployment(created.id)).tasks[0].id;
    const put = await agentCall(t.apiUrl, 'PUT', `PluginMdmTaskstatus/${rowId}?session_token=${mySession}`, {
      body: { input: { status: 'done' } },
    });
    expect(put.status).toBe(404);

    // Its owner finds it, and may set it; an unknown status is a 400 that changes nothing.
    const theirSession = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${theirs.record.api_token}`)).body
      .session_token;
    const found = await agentCall(
      t.apiUrl,
      'GET',
      `search/PluginMdmTaskstatus/?criteria[0][field]=5&criteria[0][searchtype]=contains&criteria[0][value]=${theirs.id}&criteria[1][field]=6&criteria[1][searchtype]=contains&criteria[1][value]=${created.id}&forcedisplay=2&session_token=${theirSession}`,
    );
    expect(found.body.data).toEqual([{ 2: rowId, 5: theirs.id, 6: created.id, 7: 'pending' }]);
    const unknown = await agentCall(t.apiUrl, 'PUT', `PluginMdmTaskstatus/${rowId}?session_token=${theirSession}`, {
      body: { input: { status: 'finished' } },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body[1]).toMatch(/Unknown task status "finished"/);
    const badCriteria = await agentCall(
      t.apiUrl,
      'GET',
      `search/PluginMdmTaskstatus/?criteria[0][field]=5&criteria[0][value]=abc&session_token=${theirSession}`,
    );
    expect(badCriteria.status).toBe(400);
    const ok = await agentCall(t.apiUrl, 'PUT', `PluginMdmTaskstatus/${rowId}?session_token=${theirSession}`, {
      body: { input: { status: 'failed', reason: 'no space left' } },
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual([{ [String(rowId)]: true, message: '' }]);
    expect((await deployment(created.id)).tasks[0]).toMatchObject({ status: 'failed', reason: 'no space left' });

    // A person's session (not a device) has no business here.
    const person = await t.admin('POST', '/invitations', { email: `person${Date.now()}@example.com`, send_email: false });
    const personSession = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${person.body.user_token}`)).body
      .session_token;
    expect((await agentCall(t.apiUrl, 'GET', `search/PluginMdmTaskstatus?session_token=${personSession}`)).status).toBe(403);
  });

  it('rc.6 reports under the fleet policy topic are taken in and reach no other device', async () => {
    const fleetId = await fleet('Listeners');
    const reporter = await enrollAgent(t, { fleet: 'Listeners' });
    const listener = await enrollAgent(t, { fleet: 'Listeners' });
    const manual = await upload('files', 'rc6.txt', Buffer.from('rc6'));
    const created = (await t.admin('POST', '/deployments', { kind: 'file', item_id: manual.id, fleet_id: fleetId })).body;
    const listening = await connectAgent(t, listener);
    const seen = inbox(listening);
    await listening.subscribeAsync(`/1/fleet/${fleetId}/#`, { qos: 1 });
    const client = await connectAgent(t, reporter);
    await client.publishAsync(`${created.topic}/Status/Task/${created.id}`, JSON.stringify({ status: 'received' }), { qos: 1 });
    await eventually(
      async () => (await deployment(created.id)).tasks.find((task: any) => task.agent_id === reporter.id).status === 'received',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen.messages.some((m: { topic: string }) => m.topic.includes('/Status/Task/'))).toBe(false);
    expect(seen.messages.some((m: { topic: string }) => m.topic === created.topic)).toBe(true);
  });
});
