// Package installs verified by the device's own inventory, over the real broker, agent API and
// SQLite: simulated devices of both dialects take a package, report done, and list it in the
// inventory they send when asked (Inventory command); one told not to install reports done all
// the same, and its inventory gives it away.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { dialectOf } from '../../../src-main/device/dialect.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../src-main/cli/main.ts', import.meta.url));
const cli = async (...args: string[]) =>
  (await run(process.execPath, [CLI, ...args, '--data-dir', t.dataDir], { timeout: 60_000 })).stdout;

const APK = readFileSync(fileURLToPath(new URL('../../fixtures/field-app.apk', import.meta.url)));

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

async function device(fleet: string, options: { flyve?: boolean; install?: boolean } = {}): Promise<SimulatedDevice> {
  counter += 1;
  const email = `verify${counter}@example.com`;
  const { body } = await t.admin('POST', '/invitations', { email, fleet, send_email: false });
  const started = await startDevice({
    deeplink: body.deeplink,
    email,
    // Flyve release rc.7: inventory and task reports over HTTP; the spec's agent: over MQTT.
    ...(options.flyve ? { dialect: dialectOf('flyve', 'http') } : {}),
    ...(options.install === false ? { install: false } : {}),
    chunkSize: 16_384,
    mqtt: { backoff: { initialMs: 100, maxMs: 1000 } },
  });
  devices.push(started);
  return started;
}

async function upload(): Promise<{ id: number; version_name: string; version_code: number }> {
  const response = await fetch(`${t.backend.info.admin_url}/api/packages?name=field-app.apk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body: APK,
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: number; version_name: string; version_code: number };
}

const detail = async (id: number) => (await t.admin('GET', `/deployments/${id}`)).body;
const taskOf = async (id: number, phone: SimulatedDevice) =>
  (await detail(id)).tasks.find((task: { agent_id: number }) => task.agent_id === Number(phone.enrollment.agentId));
const askInventory = async (phone: SimulatedDevice) =>
  expect((await t.admin('POST', `/agents/${phone.enrollment.agentId}/commands`, { command: 'inventory' })).status).toBeLessThan(
    300,
  );

describe('installs verified by the inventory', () => {
  it('a package done is verified by the next inventory of each dialect; one never installed is not found', async () => {
    await t.admin('POST', '/fleets', { name: 'Verified' });
    const spec = await device('Verified');
    const flyve = await device('Verified', { flyve: true });
    const liar = await device('Verified', { install: false });
    const pkg = await upload();
    expect(pkg).toMatchObject({ version_code: 42, version_name: '4.2.0' });

    const created = (await t.admin('POST', '/deployments', { kind: 'package', item_id: pkg.id, fleet: 'Verified' })).body;
    await eventually(async () => (await detail(created.id)).done === 3, 20_000);
    // Done, but no inventory since: each task waits for one (the flyve agent's enrollment inventory came before).
    for (const phone of [spec, flyve, liar])
      expect((await taskOf(created.id, phone)).verification).toMatchObject({ state: 'awaiting_inventory', inventory_at: null });
    expect(liar.policies.state.apps['org.example.fieldapp']).toBeUndefined();

    for (const phone of [spec, flyve, liar]) await askInventory(phone);
    await eventually(
      async () => (await detail(created.id)).tasks.every((task: any) => task.verification.state !== 'awaiting_inventory'),
      20_000,
    );

    const inventoryOf = async (phone: SimulatedDevice) =>
      (await t.admin('GET', `/agents/${phone.enrollment.agentId}`)).body.inventory as {
        received_at: string;
        source: string;
        applications: { package: string | null; version: string | null }[];
      };
    for (const [phone, source] of [
      [spec, 'mqtt'],
      [flyve, 'http'],
    ] as const) {
      const inventory = await inventoryOf(phone);
      expect(inventory.source).toBe(source);
      expect(inventory.applications).toContainEqual(
        expect.objectContaining({ package: 'org.example.fieldapp', version: '4.2.0' }),
      );
      expect((await taskOf(created.id, phone)).verification).toEqual({
        state: 'verified',
        detail: 'org.example.fieldapp 4.2.0 is installed (version code 42)',
        inventory_at: inventory.received_at,
      });
    }
    const liarInventory = await inventoryOf(liar);
    expect(liarInventory.applications.map((app) => app.package)).not.toContain('org.example.fieldapp');
    const negative = await taskOf(created.id, liar);
    expect(negative.status).toBe('done'); // what the agent said…
    expect(negative.verification).toMatchObject({ state: 'not_found', inventory_at: liarInventory.received_at }); // …and what Android has
    expect(negative.verification.detail).toMatch(/^org\.example\.fieldapp is not in the inventory \(\d+ applications listed\)$/);

    // The device's own view (its panel, `policy status --agent`) says the same.
    const effective = (await t.admin('GET', `/agents/${liar.enrollment.agentId}/policies`)).body.items;
    expect(effective.find((p: { assignment_id: number }) => p.assignment_id === created.id).verification.state).toBe('not_found');
    const tasks = (await t.admin('GET', `/agents/${spec.enrollment.agentId}/tasks`)).body.items;
    expect(tasks.find((task: { deployment_id: number }) => task.deployment_id === created.id).verification.state).toBe(
      'verified',
    );
    // The CLI: a deployment's tasks, and a device's policies, with what the inventory showed.
    const status = await cli('deployment', 'status', String(created.id));
    expect(status).toContain(
      `: done  [verified: inventory of ${(await inventoryOf(spec)).received_at}: org.example.fieldapp 4.2.0 is installed (version code 42)]`,
    );
    expect(status).toMatch(
      /: done {2}\[not found in inventory: inventory of \S+: org\.example\.fieldapp is not in the inventory/,
    );
    expect(await cli('policy', 'status', '--agent', String(liar.enrollment.agentId))).toMatch(
      /deployApp "field-app\.apk" {2}from fleet "Verified" {2}done .*\[not found in inventory: /,
    );

    // Each check is a live event, kept in the device's history.
    const feed = (await t.admin('GET', `/agents/${liar.enrollment.agentId}`)).body.events as { type: string; message: string }[];
    expect(feed.find((event) => event.type === 'task.verified')?.message).toMatch(/not found in the inventory/);
  });
});
