// The device simulator obeys value policies over the real broker: it reports received then done,
// keeps what it applied (its own value beating its fleet's), and reports incompatible what its
// Android version or its missing system permission cannot apply, as an agent would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { dialectOf } from '../../../src-main/device/dialect.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';

let t: TestBackend;
let counter = 0;
const devices: SimulatedDevice[] = [];

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await Promise.all(devices.map((device) => device.stop()));
  await t.stop();
});

async function device(fleet: string, options: { androidVersion?: string; system?: boolean; flyve?: boolean } = {}) {
  counter += 1;
  const email = `policy-sim${counter}@example.com`;
  const { body } = await t.admin('POST', '/invitations', { email, fleet, send_email: false });
  const started = await startDevice({
    deeplink: body.deeplink,
    email,
    ...(options.flyve ? { dialect: dialectOf('flyve', 'mqtt') } : {}),
    ...(options.androidVersion ? { androidVersion: options.androidVersion } : {}),
    ...(options.system ? { system: true } : {}),
    mqtt: { backoff: { initialMs: 100, maxMs: 1000 } },
  });
  devices.push(started);
  return started;
}

const detail = async (id: number) => (await t.admin('GET', `/policy-assignments/${id}`)).body;
const statusOf = async (id: number, agentId: string) =>
  (await detail(id)).tasks.find((task: { agent_id: number }) => task.agent_id === Number(agentId));

describe('the simulator and value policies', () => {
  it('applies them, reports received then done, and reports incompatible what it cannot apply', async () => {
    await t.admin('POST', '/fleets', { name: 'Sim' });
    const modern = await device('Sim', { androidVersion: '13', system: true, flyve: true });
    const old = await device('Sim', { androidVersion: '4.4' }); // the spec's agent: no inventory at enrollment
    const plain = await device('Sim', { androidVersion: '12' });

    const camera = (await t.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: true, fleet: 'Sim' })).body;
    const pin = (await t.admin('POST', '/policy-assignments', { policy: 'passwordEnabled', value: 'PASSWORD_PIN', fleet: 'Sim' }))
      .body;
    const roaming = (await t.admin('POST', '/policy-assignments', { policy: 'disableRoaming', value: true, fleet: 'Sim' })).body;
    const adb = (await t.admin('POST', '/policy-assignments', { policy: 'disableUsbAdb', value: true, fleet: 'Sim' })).body;

    await eventually(async () => (await detail(camera.id)).done === 3, 20_000);
    await eventually(async () => (await detail(pin.id)).done === 3, 20_000);
    for (const d of [modern, old, plain]) {
      expect(d.policies.state.settings.disableCamera).toMatchObject({ value: true, taskId: camera.id, fromFleet: true });
      expect(d.policies.state.settings.passwordEnabled).toMatchObject({ value: 'PASSWORD_PIN' });
    }
    const history = (await statusOf(camera.id, plain.enrollment.agentId)).history.map((h: { status: string }) => h.status);
    expect(history).toEqual(['pending', 'received', 'done']);

    // disableRoaming needs Android 5.0: the old phone says so itself (the server had no inventory of it).
    await eventually(async () => (await detail(roaming.id)).incompatible === 1 && (await detail(roaming.id)).done === 2, 20_000);
    expect(await statusOf(roaming.id, old.enrollment.agentId)).toMatchObject({
      status: 'incompatible',
      reason: 'Android 4.4 cannot apply disableRoaming (needs 5.0)',
    });
    // disableUsbAdb is system-only: only the system agent applies it.
    await eventually(async () => (await detail(adb.id)).incompatible === 2 && (await detail(adb.id)).done === 1, 20_000);
    expect((await statusOf(adb.id, modern.enrollment.agentId)).status).toBe('done');
    expect(modern.policies.state.settings.disableUsbAdb).toMatchObject({ value: true });
    expect(old.policies.state.settings.disableUsbAdb).toBeUndefined();

    // Its own value beats its fleet's, on the device and on the server.
    const own = (
      await t.admin('POST', '/policy-assignments', {
        policy: 'disableCamera',
        value: false,
        agent_id: Number(plain.enrollment.agentId),
      })
    ).body;
    await eventually(async () => (await statusOf(own.id, plain.enrollment.agentId)).status === 'done', 20_000);
    expect(plain.policies.state.settings.disableCamera).toMatchObject({ value: false, taskId: own.id, fromFleet: false });
    expect((await statusOf(camera.id, plain.enrollment.agentId)).status).toBe('overriden');

    // Unset: the retained message is cleared and the device forgets the value.
    await t.admin('DELETE', `/policy-assignments/${pin.id}`);
    await eventually(() => modern.policies.state.settings.passwordEnabled === undefined);
    const compliance = (await t.admin('GET', '/compliance')).body.items;
    expect(compliance.find((c: { agent_id: number }) => c.agent_id === Number(modern.enrollment.agentId))).toMatchObject({
      state: 'compliant',
    });
    expect(compliance.find((c: { agent_id: number }) => c.agent_id === Number(old.enrollment.agentId))).toMatchObject({
      state: 'failing',
      summary: '2 incompatible',
    });
  });
});
