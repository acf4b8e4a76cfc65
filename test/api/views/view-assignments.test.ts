// Saved views as targets of policies and deployments (issue 25, item 2), over the real broker,
// agent API, admin API and SQLite, with simulated agents that obey what they receive: a device whose
// inventory changes so that it enters a view receives the view's policy on its own topic; when it
// changes back, its task is canceled, the retained message cleared, and its fleet's value applies
// again. A view's value beats the fleet's; the device's own value beats the view's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectEnrolledDevice, startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { runCli } from '../../helpers/cli.ts';
import { BrokerAgentRepository } from '../../../src-main/backend/agents/broker-repository.ts';

let t: TestBackend;
const devices: SimulatedDevice[] = [];
beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await Promise.all(devices.map((device) => device.stop()));
  await t.stop();
});

async function device(fleet: string, androidVersion: string): Promise<SimulatedDevice> {
  const email = `view${devices.length}@example.com`;
  const { body } = await t.admin('POST', '/invitations', { email, fleet, send_email: false });
  const started = await startDevice({
    deeplink: body.deeplink,
    email,
    androidVersion,
    mqtt: { backoff: { initialMs: 100, maxMs: 1000 } },
  });
  devices.push(started);
  return started;
}

const idOf = (phone: SimulatedDevice) => Number(phone.enrollment.agentId);
/** The device sends its inventory (over MQTT, as asked by the Inventory command); resolves once the server has its OS. */
async function inventoried(phone: SimulatedDevice, osVersion: string) {
  expect((await t.admin('POST', `/agents/${idOf(phone)}/commands`, { command: 'inventory' })).status).toBeLessThan(300);
  await eventually(async () => (await t.admin('GET', `/agents/${idOf(phone)}`)).body.os_version === osVersion, 20_000);
}
/** The device "updates" its OS: it reconnects reporting another Android version, and sends its inventory. */
async function runs(phone: SimulatedDevice, androidVersion: string): Promise<SimulatedDevice> {
  await phone.stop();
  devices.splice(devices.indexOf(phone), 1);
  const again = await connectEnrolledDevice(
    { ...phone.enrollment, androidVersion },
    { mqtt: { backoff: { initialMs: 100, maxMs: 1000 } } },
  );
  devices.push(again);
  await inventoried(again, androidVersion);
  return again;
}
const camera = (phone: SimulatedDevice) => phone.policies.state.settings.disableCamera;
const effective = async (phone: SimulatedDevice) =>
  (
    (await t.admin('GET', `/agents/${idOf(phone)}/policies`)).body.items as {
      source_name: string;
      status: string;
      effective: boolean;
      reason: string | null;
    }[]
  ).map((p) => `${p.source_name}: ${p.status}${p.effective ? ' (applies)' : ''}`);

describe('a policy assigned to a saved view', () => {
  it('follows the devices that enter and leave the view as their inventory changes, above the fleet’s value, below the device’s own', async () => {
    await t.admin('POST', '/fleets', { name: 'Field' });
    expect((await t.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: false, fleet: 'Field' })).status).toBe(
      201,
    );
    const modern = await device('Field', '13');
    let updating = await device('Field', '12');
    await inventoried(modern, '13');
    await inventoried(updating, '12');
    await eventually(() => camera(updating)?.value === false && camera(modern)?.value === false, 20_000);

    const view = await t.admin('POST', '/views', { name: 'Android 13+', where: 'os>=13 type=android' });
    expect(view.body).toMatchObject({ count: 2 - 1 });
    const assigned = await t.admin('POST', `/views/${view.body.id}/assignments`, { policy: 'disableCamera', value: true });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(201);
    expect(assigned.body).toMatchObject({ view: 'Android 13+', policy: 'disableCamera', value: true, devices: 1 });

    // Delivered on the member's own topic: it beats the fleet's value there; the other device keeps the fleet's.
    await eventually(() => camera(modern)?.value === true && camera(modern)?.fromFleet === false, 20_000);
    expect(camera(updating)).toMatchObject({ value: false, fromFleet: true });
    const expected = [`view "Android 13+" (${modern.enrollment.serial}): done (applies)`, 'fleet "Field": overriden'];
    await eventually(
      async () => JSON.stringify((await effective(modern)).sort()) === JSON.stringify([...expected].sort()),
      20_000,
    );

    // The second device updates to Android 13: its inventory moves it into the view, and it gets the policy.
    updating = await runs(updating, '13');
    await eventually(() => camera(updating)?.value === true && camera(updating)?.fromFleet === false, 20_000);
    await eventually(async () => (await t.admin('GET', `/views/${view.body.id}/assignments`)).body.items[0]?.done === 2, 20_000);
    expect((await t.admin('GET', '/views')).body.items[0]).toMatchObject({ count: 2, assignments: 1 });

    // Back to Android 12: it leaves the view; the view's row on it is removed (an open task would be
    // canceled), its topic cleared, and the fleet's value applies again.
    updating = await runs(updating, '12');
    await eventually(() => camera(updating)?.value === false, 20_000);
    expect(camera(updating)).toMatchObject({ value: false, fromFleet: true });
    const tasks = (await t.admin('GET', `/agents/${idOf(updating)}/tasks`)).body.items as {
      deployment: { target_name: string; state: string };
    }[];
    expect(
      tasks.filter((task) => task.deployment.target_name.includes('view "Android 13+"')).map((task) => task.deployment.state),
    ).toEqual(['removed']);
    const events = (await t.admin('GET', '/events?limit=200')).body.items as {
      type: string;
      agent_id: number | null;
      message: string;
    }[];
    expect(
      events.some(
        (e) =>
          e.type === 'deployment.removed' &&
          e.agent_id === idOf(updating) &&
          e.message.endsWith('the device left view "Android 13+"'),
      ),
    ).toBe(true);
    await eventually(async () => (await effective(updating)).join() === 'fleet "Field": done (applies)', 20_000);
    expect((await t.admin('GET', `/views/${view.body.id}/assignments`)).body.items[0]).toMatchObject({ devices: 1, done: 1 });

    // The device's own value beats the view's; unset, the view's applies again.
    const own = await t.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: false, agent_id: idOf(modern) });
    expect(own.status, JSON.stringify(own.body)).toBe(201);
    await eventually(() => camera(modern)?.value === false && camera(modern)?.fromFleet === false, 20_000);
    expect((await t.admin('GET', `/views/${view.body.id}/assignments`)).body.items[0]).toMatchObject({ devices: 0 });
    expect((await t.admin('DELETE', `/policy-assignments/${own.body.id}`)).status).toBe(200);
    await eventually(() => camera(modern)?.value === true && camera(modern)?.fromFleet === false, 20_000);
    expect((await t.admin('GET', `/views/${view.body.id}/assignments`)).body.items[0]).toMatchObject({ devices: 1 });

    // A view with an assignment is not deleted; removing the assignment gives the fleet's value back everywhere.
    expect((await t.admin('DELETE', `/views/${view.body.id}`)).body).toMatchObject({ error: 'ERROR_VIEW_IN_USE' });
    const removed = await t.admin('DELETE', `/view-assignments/${assigned.body.id}`);
    expect(removed.body).toMatchObject({ state: 'removed', devices: 0 });
    await eventually(() => camera(modern)?.value === false && camera(modern)?.fromFleet === true, 20_000);
    expect((await t.admin('DELETE', `/views/${view.body.id}`)).status).toBe(204);
    const audit = (await t.admin('GET', '/audit?limit=50')).body.items as { action: string }[];
    expect(audit.map((entry) => entry.action)).toEqual(expect.arrayContaining(['view.assigned', 'view.unassigned']));
  }, 180_000);

  it('refuses what it cannot carry with a clear error', async () => {
    const view = (await t.admin('POST', '/views', { name: 'Everyone', where: '' })).body;
    for (const [body, status, message] of [
      [{ policy: 'disableCamera', value: 'yes' }, 400, /disableCamera: expected true or false/],
      [{ policy: 'noSuch', value: true }, 400, /Unknown policy "noSuch"/],
      [{ policy: 'deployApp', value: 999 }, 404, /Package #999 not found/],
      [{ policy: 'disableCamera', value: true, destination: '/x' }, 400, /destination is for deployFile only/],
    ] as const) {
      const answer = await t.admin('POST', `/views/${view.id}/assignments`, body);
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.body.message).toMatch(message);
    }
    expect((await t.admin('POST', `/views/${view.id}/assignments`, { policy: 'disableCamera', value: true })).status).toBe(201);
    expect((await t.admin('POST', `/views/${view.id}/assignments`, { policy: 'disableCamera', value: false })).status).toBe(409);
    expect((await t.admin('POST', '/views/9999/assignments', { policy: 'disableCamera', value: true })).status).toBe(404);
    expect((await t.admin('DELETE', '/view-assignments/9999')).status).toBe(404);
  });

  it('follows terms of time on the timer, and is set, listed and unset from the CLI with --view', async () => {
    const phone = await device('Field', '11');
    await inventoried(phone, '11');
    const cli = async (...args: string[]) => {
      const result = await runCli(t.dataDir, args);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout;
    };
    await cli('view', 'add', 'Silent', '--where', 'last_contact>7d fleet=Field');
    expect(await cli('policy', 'set', 'disableBluetooth', 'true', '--view', 'silent')).toMatch(
      /^Policy #\d+ {2}disableBluetooth true {2}view "Silent" {2}0 device\(s\)/,
    );
    // Not seen for ten days (what the server would record of a device gone quiet): the next evaluation
    // (each minute; run here at once) moves it into the view, and the policy waits for it, retained.
    await new BrokerAgentRepository(t.sql).setPresence(idOf(phone), false, new Date(Date.now() - 10 * 86_400_000).toISOString());
    await t.backend.deployments.syncViews();
    const status = JSON.parse(await cli('policy', 'status', '--view', 'Silent', '--json')) as {
      devices: number;
      pending: number;
    }[];
    expect(status).toEqual([expect.objectContaining({ devices: 1 })]);
    // Seen again: the next evaluation takes it out.
    await new BrokerAgentRepository(t.sql).setPresence(idOf(phone), true, new Date().toISOString());
    await t.backend.deployments.syncViews();
    expect(JSON.parse(await cli('policy', 'status', '--view', 'Silent', '--json'))).toEqual([
      expect.objectContaining({ devices: 0 }),
    ]);
    // The view's devices' compliance (none in it now); by expression, the phone alone.
    expect(await cli('compliance', '--view', 'Silent')).toBe('No enrolled device.\n');
    expect(await cli('compliance', '--where', `serial=${phone.enrollment.serial}`)).toMatch(
      new RegExp(`${phone.enrollment.serial}`),
    );
    expect(await cli('policy', 'unset', 'disableBluetooth', '--view', 'Silent')).toMatch(/^Unset: #\d+ {2}disableBluetooth true/);
    const both = await runCli(t.dataDir, ['policy', 'set', 'disableCamera', 'true', '--view', 'Silent', '--fleet', 'Field']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give exactly one of --fleet NAME|ID, --agent ID or --view NAME');
  }, 120_000);
});
