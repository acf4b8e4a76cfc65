// A device's own value set, then unset, over the real broker: the fleet's value applies again on the
// simulated device (the server sends the fleet's message anew, and the device runs it again) and its
// fleet task goes from overriden back to done.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';

let t: TestBackend;
const devices: SimulatedDevice[] = [];

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await Promise.all(devices.map((device) => device.stop()));
  await t.stop();
});

describe("a device's own value", () => {
  it('unset, gives way to its fleet value again, on the device and on the server', async () => {
    await t.admin('POST', '/fleets', { name: 'Own' });
    const email = 'own-value@example.com';
    const { body } = await t.admin('POST', '/invitations', { email, fleet: 'Own', send_email: false });
    const phone = await startDevice({ deeplink: body.deeplink, email, mqtt: { backoff: { initialMs: 100, maxMs: 1000 } } });
    devices.push(phone);
    const agentId = Number(phone.enrollment.agentId);
    const task = async (id: number) =>
      (await t.admin('GET', `/policy-assignments/${id}`)).body.tasks.find((x: { agent_id: number }) => x.agent_id === agentId);

    const fleetValue = (await t.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: true, fleet: 'Own' }))
      .body;
    await eventually(async () => (await task(fleetValue.id)).status === 'done', 20_000);
    const own = (await t.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: false, agent_id: agentId })).body;
    await eventually(async () => (await task(own.id)).status === 'done', 20_000);
    expect(phone.policies.state.settings.disableCamera).toMatchObject({ value: false, fromFleet: false });
    expect((await task(fleetValue.id)).status).toBe('overriden');

    expect((await t.admin('DELETE', `/policy-assignments/${own.id}`)).status).toBe(200);
    await eventually(async () => (await task(fleetValue.id)).status === 'done', 20_000);
    expect((await task(fleetValue.id)).history.map((h: { status: string }) => h.status).slice(-4)).toEqual([
      'overriden',
      'pending',
      'received',
      'done',
    ]);
    expect(phone.policies.state.settings.disableCamera).toMatchObject({ value: true, fromFleet: true, taskId: fleetValue.id });
    // The devices table's filter: by compliance state, on the server.
    const ids = async (query: string) =>
      (await t.admin('GET', `/compliance?${query}`)).body.items.map((c: { agent_id: number }) => c.agent_id);
    expect(await ids('state=compliant')).toContain(agentId);
    expect(await ids('state=failing')).not.toContain(agentId);
    const pending = (await t.admin('POST', '/policy-assignments', { policy: 'disableRoaming', value: true, agent_id: agentId }))
      .body;
    expect(await ids('state=pending')).toContain(agentId); // at once: nothing reported yet
    expect(await ids('state=compliant')).not.toContain(agentId);
    await eventually(async () => (await ids('state=compliant')).includes(agentId), 20_000);
    expect((await t.admin('GET', `/compliance?state=compliant&fleet_id=${fleetValue.fleet_id}`)).body.items).toEqual([
      expect.objectContaining({ agent_id: agentId, state: 'compliant', summary: 'all 2 done' }),
    ]);
    expect(pending.id).toBeGreaterThan(own.id);
    const refused = await t.admin('GET', '/compliance?state=fine');
    expect(refused.status).toBe(400);
  });
});
