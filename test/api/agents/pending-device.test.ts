// A device waiting for approval over real HTTP, SQLite and MQTT: it may read its record and wait;
// nothing it sends (inventory, position, task status) is taken and nothing is served to it (task
// rows, downloads) until an admin approves it. And a finished task status is final for the device.
import { describe, expect, it } from 'vitest';
import { fakeInventoryXml } from '../../../src-main/device/inventory.ts';
import { agentCall, type TestBackend } from '../../helpers/backend.ts';
import {
  agentRow,
  connectAgent,
  enrollAgent,
  eventually,
  readRecord,
  refusalCode,
  useBrokerBackend,
} from '../../helpers/mqtt.ts';
import type { EnrollmentCode as Code } from '../../../src-shared/contract/index.ts';

let t: TestBackend;
useBrokerBackend((backend) => {
  t = backend;
});

let serials = 0;
const nextSerial = () => `WAIT${++serials}X${process.pid}`;
const NOT_APPROVED = ['ERROR_AGENT_NOT_APPROVED', 'This device is waiting for approval by an administrator'];

async function upload(name: string, body: string): Promise<{ id: number }> {
  const response = await fetch(`${t.backend.info.admin_url}/api/files?name=${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body,
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: number };
}

/** A manual-approval code on its own fleet (with a file deployed to it), and a device enrolled with it, record read. */
async function pendingDevice(options: { inventory?: string } = {}) {
  const fleetName = `Waiting ${++serials}`;
  const fleet = (await t.admin('POST', '/fleets', { name: fleetName })).body as { id: number };
  const file = await upload(`secret-${serials}.txt`, 'for approved devices only');
  const deployed = await t.admin('POST', '/deployments', { kind: 'file', item_id: file.id, fleet_id: fleet.id });
  expect(deployed.status).toBe(201);
  const code = (await t.admin('POST', '/codes', { name: `Manual ${serials}`, fleet: fleetName, approval: 'manual' }))
    .body as Code;
  const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${code.user_token}`);
  const session = init.body.session_token as string;
  const full = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`);
  await agentCall(
    t.apiUrl,
    'POST',
    `changeActiveProfile?session_token=${session}&profiles_id=${full.body.plugin_mdm_guest_profiles_id}`,
  );
  const serial = nextSerial();
  const created = await agentCall(t.apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, {
    body: {
      input: {
        _invitation_token: code.token,
        _email: `waiting${serials}@example.com`,
        _serial: serial,
        _uuid: crypto.randomUUID(),
        csr: '',
        version: '2.0.0-rc.7',
        type: 'android',
        ...(options.inventory ? { inventory: options.inventory } : {}),
      },
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = Number(created.body.id);
  const agent = await readRecord(t, session, id);
  expect(agent.record.enroll_status).toBe('pending_approval');
  // The record still hands the device its api_token: it may open its own session, to wait.
  const own = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${agent.record.api_token}`);
  expect(own.status).toBe(200);
  const taskRow = (await t.admin('GET', `/agents/${id}/tasks`)).body.items[0] as { id: number; status: string };
  return { id, agent, file, deployment: deployed.body as { id: number }, taskRow, token: own.body.session_token as string };
}

const forgedInventory = (serial: string) =>
  Buffer.from(
    fakeInventoryXml({ serial, uuid: 'x', type: 'android' }).replace(/<SMODEL>[^<]*<\/SMODEL>/, '<SMODEL>Forged 9000</SMODEL>'),
  ).toString('base64');

describe('a device waiting for approval', () => {
  it('may read its record and its session, nothing more: every report, task call and download is a 403 ERROR_AGENT_NOT_APPROVED', async () => {
    const { id, agent, file, deployment, taskRow, token } = await pendingDevice();
    expect(taskRow.status).toBe('pending');

    // What it may do while it waits.
    expect((await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${token}`)).status).toBe(200);
    const reread = await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${token}`);
    expect(reread.status).toBe(200);
    const credentials = { serial: agent.serial, password: reread.body.mqttpasswd as string }; // each read draws a new one
    expect((await agentCall(t.apiUrl, 'GET', `Computer/${agent.record.computers_id}?session_token=${token}`)).status).toBe(200);

    const refused = [
      // The Flyve agents' HTTP reports (release rc.7): inventory, presence, ping reply.
      await agentCall(t.apiUrl, 'PUT', `PluginMdmAgent/${id}?session_token=${token}`, {
        body: { input: { _inventory: forgedInventory(agent.serial) } },
      }),
      await agentCall(t.apiUrl, 'PUT', `PluginMdmAgent/${id}?session_token=${token}`, { body: { input: { is_online: true } } }),
      await agentCall(t.apiUrl, 'PUT', `PluginMdmAgent/${id}?session_token=${token}`, { body: { input: { _pong: '!' } } }),
      // The Flyve names reach the same routes.
      await agentCall(t.apiUrl, 'PUT', `PluginFlyvemdmAgent/${id}?session_token=${token}`, { body: { input: { _pong: '!' } } }),
      await agentCall(t.apiUrl, 'POST', `PluginMdmGeolocation?session_token=${token}`, {
        body: { input: { _agents_id: id, latitude: '48.85', longitude: '2.35', _datetime: '1700000000' } },
      }),
      // Its task rows: neither read nor written.
      await agentCall(
        t.apiUrl,
        'GET',
        `search/PluginMdmTaskstatus/?criteria[0][field]=5&criteria[0][value]=${id}&criteria[1][field]=6&criteria[1][value]=${deployment.id}&forcedisplay=2&session_token=${token}`,
      ),
      await agentCall(t.apiUrl, 'GET', `PluginMdmTaskstatus/${taskRow.id}?session_token=${token}`),
      await agentCall(t.apiUrl, 'PUT', `PluginMdmTaskstatus/${taskRow.id}?session_token=${token}`, {
        body: { input: { status: 'done' } },
      }),
      // The file it was deployed: neither its bytes nor its metadata.
      await agentCall(t.apiUrl, 'GET', `PluginMdmFile/${file.id}?session_token=${token}`, {
        headers: { accept: 'application/octet-stream' },
      }),
      await agentCall(t.apiUrl, 'GET', `PluginMdmFile/${file.id}?session_token=${token}`),
    ];
    for (const answer of refused)
      expect({ status: answer.status, body: answer.body }).toEqual({ status: 403, body: NOT_APPROVED });
    // The session header form, as the Flyve agents send it.
    const byHeader = await agentCall(t.apiUrl, 'PUT', `PluginMdmAgent/${id}`, {
      headers: { 'session-token': token },
      body: { input: { _inventory: forgedInventory(agent.serial) } },
    });
    expect({ status: byHeader.status, body: byHeader.body }).toEqual({ status: 403, body: NOT_APPROVED });

    // Nothing of it is shown as fact.
    const detail = (await t.admin('GET', `/agents/${id}`)).body;
    expect(detail).toMatchObject({ enroll_status: 'pending_approval', model: null, inventory: null, positions: [] });
    expect(detail.last_report).toBeNull();
    expect(detail.is_online).toBeFalsy();
    expect((await t.admin('GET', `/agents/${id}/tasks`)).body.items[0]).toMatchObject({ id: taskRow.id, status: 'pending' });
    expect((await t.backend.services.events.forAgent(id)).map((e) => e.type)).not.toContain('agent.inventory');

    // MQTT is closed to it too (so are Status/Inventory, Status/Geolocation and Status/Task/<id> there).
    expect(await refusalCode(t, credentials)).toBe(5);
    expect(await refusalCode(t, credentials)).toBe(5);
    // A waiting device retries: the history notes its refused logins once, not at every attempt.
    expect((await t.backend.services.events.forAgent(id)).filter((e) => e.type === 'mqtt.login_refused')).toHaveLength(1);

    // Approved: the very same session is now heard.
    expect((await t.admin('POST', `/agents/${id}/approve`)).status).toBe(200);
    const report = await agentCall(t.apiUrl, 'PUT', `PluginMdmAgent/${id}?session_token=${token}`, {
      body: { input: { _inventory: forgedInventory(agent.serial) } },
    });
    expect(report.status).toBe(200);
    expect((await t.admin('GET', `/agents/${id}`)).body.model).toBe('Forged 9000');
    const put = await agentCall(t.apiUrl, 'PUT', `PluginMdmTaskstatus/${taskRow.id}?session_token=${token}`, {
      body: { input: { status: 'received' } },
    });
    expect(put.status).toBe(200);
    const download = await agentCall(t.apiUrl, 'GET', `PluginMdmFile/${file.id}?session_token=${token}`, {
      headers: { accept: 'application/octet-stream' },
    });
    expect(download.status).toBe(200);
  });

  it('the inventory it sent at enrollment is not shown as its own until it is approved', async () => {
    const serial = `FORGED${process.pid}`;
    const { id } = await pendingDevice({ inventory: forgedInventory(serial) });
    const detail = (await t.admin('GET', `/agents/${id}`)).body;
    expect(detail).toMatchObject({ enroll_status: 'pending_approval', model: null, manufacturer: null, inventory: null });
    expect((await agentRow(t, id)).model).toBeNull();
  });

  it('a rejected device is refused alike (its token is dead: 401)', async () => {
    const { id, token } = await pendingDevice();
    expect((await t.admin('POST', `/agents/${id}/reject`)).status).toBe(200);
    const answer = await agentCall(t.apiUrl, 'PUT', `PluginMdmAgent/${id}?session_token=${token}`, {
      body: { input: { _pong: '!' } },
    });
    expect(answer.status).toBe(401);
  });
});

describe('a finished task status is final for the device', () => {
  it('done → pending (or anything else) is a 409 over HTTP and refused over MQTT; the same status again changes nothing', async () => {
    const fleetName = `Final ${process.pid}`;
    const fleet = (await t.admin('POST', '/fleets', { name: fleetName })).body as { id: number };
    const device = await enrollAgent(t, { fleet: fleetName });
    const file = await upload(`final-${process.pid}.txt`, 'final');
    const deployment = (await t.admin('POST', '/deployments', { kind: 'file', item_id: file.id, fleet_id: fleet.id })).body as {
      id: number;
    };
    const taskRow = (await t.admin('GET', `/agents/${device.id}/tasks`)).body.items[0] as { id: number };
    const token = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${device.record.api_token}`)).body.session_token;
    const put = (status: string) =>
      agentCall(t.apiUrl, 'PUT', `PluginMdmTaskstatus/${taskRow.id}?session_token=${token}`, { body: { input: { status } } });

    expect((await put('received')).status).toBe(200);
    expect((await put('pending')).status).toBe(200); // still open: a device may say it has not started after all
    expect((await put('done')).status).toBe(200);
    const back = await put('pending');
    expect(back.status).toBe(409);
    expect(back.body).toEqual([
      'ERROR_TASK_CLOSED',
      `Task ${deployment.id} is already done on this device: a finished status is final (deploy again to run it again)`,
    ]);
    expect((await put('failed')).status).toBe(409);
    expect((await put('done')).status).toBe(200); // a retry of the last report

    // Over MQTT: refused and noted, the status unchanged.
    const client = await connectAgent(t, device);
    await client.publishAsync(`${device.topic}/Status/Task/${deployment.id}`, JSON.stringify({ status: 'pending' }), { qos: 1 });
    const refusal = await eventually(async () =>
      (await t.backend.services.events.forAgent(device.id)).find((e) => e.type === 'task.report_refused'),
    );
    expect(refusal.message).toMatch(/already done on this device/);
    const tasks = (await t.admin('GET', `/agents/${device.id}/tasks`)).body.items as { status: string; history: unknown[] }[];
    expect(tasks[0]!.status).toBe('done');
  });

  it('failed is final too', async () => {
    const fleetName = `Failed ${process.pid}`;
    const fleet = (await t.admin('POST', '/fleets', { name: fleetName })).body as { id: number };
    const device = await enrollAgent(t, { fleet: fleetName });
    const file = await upload(`failed-${process.pid}.txt`, 'failed');
    await t.admin('POST', '/deployments', { kind: 'file', item_id: file.id, fleet_id: fleet.id });
    const taskRow = (await t.admin('GET', `/agents/${device.id}/tasks`)).body.items[0] as { id: number };
    const token = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${device.record.api_token}`)).body.session_token;
    const put = (status: string) =>
      agentCall(t.apiUrl, 'PUT', `PluginMdmTaskstatus/${taskRow.id}?session_token=${token}`, { body: { input: { status } } });
    expect((await put('failed')).status).toBe(200);
    expect((await put('in progress')).status).toBe(409);
    expect((await put('done')).status).toBe(409);
  });
});
