// Bulk jobs from the CLI (issue 25): `command --fleet NAME ping`, `command --where EXPR lock`,
// `command --ids … delete` asking for the count, `jobs`, `job ID`, with --json; against a running
// backend and simulated devices connected to its broker.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../src-main/cli/main.ts', import.meta.url));

let t: TestBackend;
const couriers: SimulatedDevice[] = [];
let office: SimulatedDevice;

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--data-dir', t.dataDir], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function enrolled(fleet: string, email: string): Promise<SimulatedDevice> {
  const { body } = await t.admin('POST', '/invitations', { email, fleet, send_email: false });
  return startDevice({ deeplink: body.deeplink, email });
}

beforeAll(async () => {
  t = await startTestBackend();
  await t.admin('POST', '/fleets', { name: 'Couriers' });
  for (let i = 0; i < 3; i++) couriers.push(await enrolled('Couriers', `courier${i}@example.com`));
  office = await enrolled('Default fleet', 'desk@example.com');
});
afterAll(async () => {
  await Promise.all([...couriers, office].map((device) => device.stop()));
  await t.stop();
});

const idsOf = async (fleet: string) =>
  ((await t.admin('GET', `/agents?fleet=${encodeURIComponent(fleet)}`)).body.items as { id: number }[]).map((a) => a.id);

describe('mdm-console command with a selection', () => {
  it('--fleet NAME ping: one job, followed until every device answered (--json)', async () => {
    const pinged = await cli('command', '--fleet', 'Couriers', 'ping', '--json');
    expect(pinged.stderr).toBe('');
    expect(pinged.code).toBe(0);
    const job = JSON.parse(pinged.stdout);
    expect(job).toMatchObject({ action: 'ping', state: 'done', total: 3, selection: 'fleet Couriers' });
    expect(job.counts).toMatchObject({ answered: 3, sent: 0, offline: 0 });
  });

  it('--where EXPR lock, in words; jobs lists it and job ID shows each device', async () => {
    const locked = await cli('command', '--where', 'fleet=Couriers', 'lock');
    expect(locked.code).toBe(0);
    expect(locked.stdout).toMatch(/^Job #(\d+): Lock 3 devices \(where fleet=Couriers\) — done: 3 (sent|answered)/);
    const id = Number(/^Job #(\d+)/.exec(locked.stdout)![1]);
    for (const agentId of await idsOf('Couriers')) expect((await t.backend.services.agentRepository.byId(agentId))!.lock).toBe(1);
    expect((await t.backend.services.agentRepository.byId((await idsOf('Default fleet'))[0]!))!.lock).toBe(0);

    const list = await cli('jobs');
    expect(list.stdout.split('\n')[0]).toMatch(
      new RegExp(`^#${id} .* Lock {2}3 devices {2}done {2}3 (sent|answered) {2}\\(where fleet=Couriers\\)`),
    );
    const detail = JSON.parse((await cli('job', String(id), '--json')).stdout);
    expect(detail.results).toHaveLength(3);
    const text = await cli('job', String(id));
    expect(text.stdout.trim().split('\n')).toHaveLength(4);
    expect((await cli('job', String(id), '--status', 'nonsense')).stderr).toMatch(/--status must be one of sent, answered/);
  });

  it('delete asks for the count: a script must say --yes --count N, a wrong count does nothing', async () => {
    const [first, second] = await idsOf('Couriers');
    const ids = `${first},${second}`;
    const unasked = await cli('command', '--ids', ids, 'delete');
    expect(unasked.code).toBe(2);
    expect(unasked.stderr).toMatch(/delete cannot be undone: the selection holds 2 devices\. Confirm with --yes --count 2/);
    expect((await cli('command', '--ids', ids, 'delete', '--yes')).stderr).toMatch(/--yes needs --count N/);
    const wrong = await cli('command', '--ids', ids, 'delete', '--yes', '--count', '3');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/The selection now holds 2 devices, not 3: nothing was done/);
    expect(await idsOf('Couriers')).toHaveLength(3);

    const done = await cli('command', '--ids', ids, 'delete', '--yes', '--count', '2', '--json');
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ action: 'delete', state: 'done', counts: { done: 2 } });
    expect(await idsOf('Couriers')).toHaveLength(1);
  });

  it('says what is wrong before anything is sent', async () => {
    expect((await cli('command', '--fleet', 'Couriers', 'explode')).stderr).toMatch(/unknown action "explode"/);
    expect((await cli('command', '--fleet', 'Couriers', 'move')).stderr).toMatch(/move needs --to FLEET/);
    expect((await cli('command', '--ids', '1', '--fleet', 'Couriers', 'ping')).stderr).toMatch(/--ids names the devices/);
    expect((await cli('command', '--where', 'os<<10', 'ping')).stderr).toMatch(/where: .*column/);
    expect((await cli('command', '--fleet', 'Nowhere', 'ping')).stderr).toMatch(/Unknown fleet "Nowhere"/);
    const moved = await cli('command', '--fleet', 'Couriers', 'move', '--to', 'Default fleet', '--json');
    expect(JSON.parse(moved.stdout)).toMatchObject({ action: 'move', counts: { done: 1 }, params: { fleet: 'Default fleet' } });
  });
});
