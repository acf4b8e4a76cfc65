// The policy commands of the CLI against a running backend (its DIR/server.json): the catalogue,
// set / status / unset by fleet name or id and by device, compliance, and clear refusals.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { closeClients, connectAgent, enrollAgent, eventually } from '../../helpers/mqtt.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../src-main/cli/main.ts', import.meta.url));

let t: TestBackend;

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
  await closeClients();
  await t.stop();
});

describe('mdm-console policies, policy, compliance', () => {
  it('lists the catalogue, by category too', async () => {
    const all = JSON.parse((await cli('policies', '--json')).stdout);
    expect(all).toHaveLength(42);
    const text = (await cli('policies', '--category', 'password')).stdout;
    expect(text).toContain('Security > Authentication > Password');
    expect(text).toMatch(
      /maximumTimeToLock\s+Maximum time to lock: .*\n\s+int 0\.\.86400000 milliseconds; default 60000, recommended 60000; Android ≥ 3\.0/,
    );
    expect(text).not.toContain('disableCamera');
    expect((await cli('policies')).stdout).toMatch(/disableUsbAdb .*\n.*system agent only/);
  });

  it('sets, shows and unsets policies on a fleet by name or id and on a device, and reports compliance', async () => {
    const fleet = (await t.admin('POST', '/fleets', { name: 'Field' })).body;
    const agent = await enrollAgent(t, { fleet: 'Field' });

    const camera = await cli('policy', 'set', 'disableCamera', 'yes', '--fleet', String(fleet.id), '--json');
    expect(camera.code, camera.stderr).toBe(0);
    const created = JSON.parse(camera.stdout);
    expect(created).toMatchObject({
      policy: 'disableCamera',
      value: true,
      message: { disableCamera: 'true', taskId: created.id },
    });
    expect(created.tasks).toEqual([expect.objectContaining({ agent_id: agent.id, status: 'pending' })]);
    const pin = await cli('policy', 'set', 'passwordEnabled', 'pin', '--fleet', 'Field');
    expect(pin.stdout).toMatch(
      /^Policy #\d+ {2}passwordEnabled = PASSWORD_PIN → fleet "Field" {2}active {2}0 of 1 done, 1 pending/,
    );
    expect((await cli('policy', 'set', 'maximumTimeToLock', '30000', '--agent', String(agent.id))).code).toBe(0);

    // The device does what it is told and says so.
    const client = await connectAgent(t, agent);
    client.publish(`${agent.topic}/Status/Task/${created.id}`, JSON.stringify({ status: 'done' }));
    await eventually(async () =>
      JSON.parse((await cli('policy', 'status', '--fleet', 'Field', '--json')).stdout).some(
        (a: { done: number }) => a.done === 1,
      ),
    );

    const fleetStatus = (await cli('policy', 'status', '--fleet', String(fleet.id))).stdout;
    expect(fleetStatus).toContain(`Fleet "Field" (#${fleet.id}):`);
    expect(fleetStatus).toMatch(/disableCamera = true → fleet "Field" {2}active {2}1 of 1 done/);
    const agentStatus = (await cli('policy', 'status', '--agent', String(agent.id))).stdout;
    expect(agentStatus).toMatch(/maximumTimeToLock = 30000 {2}from the device {2}pending/);
    expect(agentStatus).toMatch(/disableCamera = true {2}from fleet "Field" {2}done/);

    const compliance = JSON.parse((await cli('compliance', '--fleet', 'Field', '--json')).stdout);
    expect(compliance).toEqual([
      expect.objectContaining({ agent_id: agent.id, state: 'pending', done: 1, pending: 2, summary: '2 pending' }),
    ]);
    expect((await cli('compliance')).stdout).toContain(`(agent ${agent.id}, fleet ${fleet.id})  pending  2 pending`);
    // --state: only the devices in that state (the console's compliance filter).
    expect(JSON.parse((await cli('compliance', '--state', 'pending', '--json')).stdout).map((c: any) => c.agent_id)).toContain(
      agent.id,
    );
    expect(JSON.parse((await cli('compliance', '--state', 'compliant', '--json')).stdout)).toEqual([]);
    expect((await cli('compliance', '--state', 'fine')).stderr).toMatch(/--state takes one of compliant, pending, failing, none/);

    const unset = await cli('policy', 'unset', 'disableCamera', '--fleet', 'Field');
    expect(unset.stdout).toMatch(/^Unset: #\d+ {2}disableCamera = true → fleet "Field" {2}removed/);
    expect((await cli('policy', 'unset', 'disableCamera', '--fleet', 'Field')).stderr).toMatch(/disableCamera is not set there/);
    const byId = JSON.parse((await cli('policy', 'status', '--agent', String(agent.id), '--json')).stdout).find(
      (p: { policy: string }) => p.policy === 'maximumTimeToLock',
    );
    expect((await cli('policy', 'unset', String(byId.assignment_id))).code).toBe(0);
  }, 120_000);

  it('refuses what the catalogue or the server refuses, with the reason', async () => {
    await t.admin('POST', '/fleets', { name: 'Strict' });
    const cases: [string[], RegExp][] = [
      [['policy', 'set', 'disableCamera', 'maybe', '--fleet', 'Strict'], /disableCamera takes true or false/],
      [
        ['policy', 'set', 'passwordMinLength', '65', '--fleet', 'Strict'],
        /takes a whole number from 0 to 64 \(characters\), not "65"/,
      ],
      [
        ['policy', 'set', 'passwordEnabled', 'face', '--fleet', 'Strict'],
        /takes one of PASSWORD_NONE \(No\), PASSWORD_PIN \(PIN\)/,
      ],
      [
        ['policy', 'set', 'disablecamera', 'true', '--fleet', 'Strict'],
        /Unknown policy "disablecamera" \(did you mean disableCamera\?\)/,
      ],
      [
        ['policy', 'set', 'deployApp', 'org.x', '--fleet', 'Strict'],
        /deployApp takes a package id \(see: packages\), not "org.x"/,
      ],
      [['policy', 'set', 'deployApp', 'file:1', '--fleet', 'Strict'], /deployApp takes a package id/],
      [
        ['policy', 'set', 'removeApp', 'org.x', '--fleet', 'Strict', '--destination', '/x/'],
        /--destination is for deployFile only/,
      ],
      [['policy', 'set', 'disableCamera', 'true'], /exactly one of --fleet NAME\|ID or --agent ID/],
      [['policy', 'set', 'disableCamera', 'true', '--fleet', 'Nowhere'], /Unknown fleet "Nowhere"/],
      [['policy', 'frobnicate'], /usage: policy set SYMBOL VALUE/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(...args);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stderr, args.join(' ')).toMatch(message);
    }
    expect((await cli('policy', 'set', 'disableWifi', 'on', '--fleet', 'Strict')).code).toBe(0);
    const twice = await cli('policy', 'set', 'disableWifi', 'off', '--fleet', 'Strict');
    expect(twice.stderr).toMatch(/disableWifi is already set on fleet "Strict" to true \(assignment #\d+\): unset it first/);
  }, 120_000);

  it('takes a fleet id wherever it takes a fleet name (deploy --fleet 1 used to answer Unknown fleet "1")', async () => {
    const upload = await fetch(`${t.backend.info.admin_url}/api/files?name=readme.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
      body: Buffer.from('read me'),
    });
    const file = (await upload.json()) as { id: number };
    // The deployment kinds are policies like the others: set, refused by the conflict rule, unset.
    const byPolicy = await cli(
      'policy',
      'set',
      'deployFile',
      `file:${file.id}`,
      '--fleet',
      'Default fleet',
      '--destination',
      '/sdcard/Docs',
      '--json',
    );
    expect(byPolicy.code, byPolicy.stderr).toBe(0);
    expect(JSON.parse(byPolicy.stdout)).toMatchObject({
      policy: 'deployFile',
      item_id: file.id,
      remove_on_delete: true,
      message: { deployFile: '/sdcard/Docs/', id: file.id },
    });
    const undo = await cli('policy', 'set', 'removeFile', '/sdcard/Docs/readme.txt', '--fleet', '1');
    expect(undo.stderr).toMatch(/deployFile "readme.txt" is in force on fleet "Default fleet" \(assignment #\d+\)/);
    const unset = await cli('policy', 'unset', 'deployFile', '--fleet', '1', '--json');
    expect(unset.code, unset.stderr).toBe(0);
    expect(JSON.parse(unset.stdout).removal).toMatchObject({
      policy: 'removeFile',
      message: { removeFile: '/sdcard/Docs/readme.txt' },
    });
    const removeApp = await cli('policy', 'set', 'removeApp', 'org.example.gone', '--fleet', '1');
    expect(removeApp.stdout).toMatch(/^Policy #\d+ {2}removeApp "org.example.gone" → fleet "Default fleet" {2}active/);

    const deployed = await cli('deploy', `file:${file.id}`, '--fleet', '1', '--json');
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(JSON.parse(deployed.stdout)).toMatchObject({ fleet_id: 1, target_name: 'fleet "Default fleet"' });
    const invited = await cli('invite', '--email', 'byid@example.com', '--fleet', '1', '--no-email', '--json');
    expect(invited.code, invited.stderr).toBe(0);
    expect(JSON.parse(invited.stdout)).toMatchObject({ fleet: 'Default fleet' });
  });
});
