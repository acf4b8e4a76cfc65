// The deploy commands of the CLI against a running backend (its DIR/server.json), with simulated
// devices on the broker taking what is deployed.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../src-main/cli/main.ts', import.meta.url));
const APK = fileURLToPath(new URL('../../fixtures/field-app.apk', import.meta.url));

let t: TestBackend;
const devices: SimulatedDevice[] = [];

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--data-dir', t.dataDir], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await Promise.all(devices.map((device) => device.stop()));
  await t.stop();
});

describe('mdm-console deploy, deployments, undeploy, fleet', () => {
  it('deploys an APK to a fleet by name, lists it, removes it (and the app), and manages fleets', async () => {
    expect((await cli('fleet', 'add', 'Couriers')).stdout).toMatch(/Fleet #\d+ "Couriers" created/);
    const added = JSON.parse((await cli('package', 'add', APK, '--json')).stdout);
    expect(added).toMatchObject({ package_name: 'org.example.fieldapp', version_code: 42 });
    for (let i = 0; i < 2; i++) {
      const email = `courier${i}@example.com`;
      const { body } = await t.admin('POST', '/invitations', { email, fleet: 'Couriers', send_email: false });
      devices.push(await startDevice({ deeplink: body.deeplink, email }));
    }

    const deployed = await cli('deploy', `package:${added.id}`, '--fleet', 'Couriers', '--json');
    expect(deployed.code).toBe(0);
    const deployment = JSON.parse(deployed.stdout);
    expect(deployment).toMatchObject({
      policy: 'deployApp',
      total: 2,
      remove_on_delete: true,
      message: { deployApp: 'org.example.fieldapp', versionCode: 42 },
    });
    expect(deployment.tasks).toHaveLength(2);
    await eventually(
      async () => JSON.parse((await cli('deployments', '--fleet', 'Couriers', '--json')).stdout)[0]?.done === 2,
      20_000,
    );
    expect((await cli('deployments')).stdout).toContain('2 of 2 done');

    const removed = JSON.parse((await cli('undeploy', String(deployment.id), '--json')).stdout);
    expect(removed.removal).toMatchObject({ policy: 'removeApp', total: 2 });
    await eventually(() => devices.every((device) => device.policies.state.apps['org.example.fieldapp'] === undefined), 20_000);

    // Errors: a clear message and exit code 2, never a stack trace.
    const twice = await cli('undeploy', String(deployment.id));
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/already removed/);
    expect((await cli('deploy', `package:${added.id}`)).stderr).toMatch(/exactly one of --fleet NAME or --agent ID/);
    expect((await cli('deploy', 'package:999', '--fleet', 'Couriers')).stderr).toMatch(/Package #999 not found/);
    expect((await cli('deploy', 'file:1', '--fleet', 'Nowhere')).stderr).toMatch(/not found|Unknown fleet/);

    // Fleets by name: rename, refuse to delete one with devices, delete an empty one.
    expect((await cli('fleet', 'rename', 'Couriers', 'Bike couriers')).stdout).toContain(
      'renamed from "Couriers" to "Bike couriers"',
    );
    const busy = await cli('fleet', 'delete', 'Bike couriers');
    expect(busy.code).toBe(2);
    expect(busy.stderr).toMatch(/still has 2 devices/);
    await cli('fleet', 'add', 'Empty');
    expect(JSON.parse((await cli('fleet', 'delete', 'Empty', '--json')).stdout)).toMatchObject({ name: 'Empty', deleted: true });
  }, 180_000); // a dozen CLI processes, each a Node start
});
