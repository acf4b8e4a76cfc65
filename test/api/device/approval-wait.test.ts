// Approval end to end with the simulator over real HTTP, SQLite and MQTT: a device enrolled with a
// manual-approval code waits (the `agent --stay` process and the console's simulated device keep
// trying the broker) and comes online once approved; enrolling it again keeps it approved; the
// console's simulated devices come back after a server restart.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  resumeSimulatedDevices,
  simulatedDeviceApproved,
  simulateEnrollment,
  stopSimulatedDevices,
} from '../../../src-main/device/simulate.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { CLI, runCli } from '../../helpers/cli.ts';
import { agentRow, eventually } from '../../helpers/mqtt.ts';
import type { EnrollmentCode as Code } from '../../../src-shared/contract/index.ts';

let t: TestBackend;
beforeAll(async () => {
  t = await startTestBackend();
});
afterEach(async () => {
  await stopSimulatedDevices();
});
afterAll(async () => {
  await t.stop();
});

let counter = 0;
const nextSerial = () => `APPROVE${++counter}X${process.pid}`;

async function manualCode(): Promise<Code> {
  const created = await t.admin('POST', '/codes', { name: `Manual ${++counter}`, approval: 'manual' });
  expect(created.status).toBe(201);
  return created.body as Code;
}

/** is_online is SQLite's 0 or 1: `eventually` waits for true. */
const isOnline = async (backend: TestBackend, id: number) => (await agentRow(backend, id)).is_online === 1;

const agentBySerial = async (serial: string) =>
  (
    (await t.admin('GET', '/agents')).body.items as { id: number; serial: string; enroll_status: string; is_online: boolean }[]
  ).find((a) => a.serial === serial);

/** `agent … --stay` as a user runs it; its output so far, and a way to wait for a line. */
function stayingAgent(args: string[]) {
  const child: ChildProcess = spawn(process.execPath, [CLI, 'agent', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => output,
    waitFor: (text: string | RegExp) =>
      eventually(
        () => (typeof text === 'string' ? output.includes(text) : text.test(output)) || child.exitCode !== null,
        30_000,
      ).then(() => {
        if (!(typeof text === 'string' ? output.includes(text) : text.test(output)))
          throw new Error(`the agent exited (${child.exitCode}) before saying ${String(text)}:\n${output}`);
      }),
  };
}

describe('agent --stay with a manual-approval code', () => {
  it('keeps trying while it waits, comes online once approved, and running it again with the same serial keeps it approved', async () => {
    const code = await manualCode();
    const serial = nextSerial();
    const agent = stayingAgent([
      '--deeplink',
      code.deeplink,
      '--email',
      'wait@example.com',
      '--serial',
      serial,
      '--stay',
      '--approval-retry',
      '0.2',
    ]);
    try {
      await agent.waitFor('waiting for approval by an administrator, trying again every 0.2 s');
      await agent.waitFor('still waiting for approval'); // it tried again, and is still there
      const waiting = await agentBySerial(serial);
      expect(waiting).toMatchObject({ enroll_status: 'pending_approval', is_online: false });
      expect(agent.child.exitCode).toBeNull();

      expect((await t.admin('POST', `/agents/${waiting!.id}/approve`)).status).toBe(200);
      await agent.waitFor('mqtt: approved: the broker let the device in');
      await eventually(async () => (await agentBySerial(serial))?.is_online === true);
    } finally {
      agent.child.kill('SIGINT');
    }
    expect(await agent.exited).toBe(0);
    const id = (await agentBySerial(serial))!.id;
    expect((await agentRow(t, id)).is_online).toBeFalsy();

    // The same device again (the app reinstalled): it stays approved and connects at once.
    const again = await runCli('', ['agent', '--deeplink', code.deeplink, '--email', 'wait@example.com', '--serial', serial]);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain('pending_approval');
    expect((await agentRow(t, id)).enroll_status).toBe('enrolled');
    const reenrolled = (await t.backend.services.events.forAgent(id)).find((e) => e.type === 'agent.reenrolled');
    expect(reenrolled?.message).toMatch(/enrolled before: it needs no new approval/);
  });

  it('without --stay a waiting device leaves, saying why and what to do', async () => {
    const code = await manualCode();
    const result = await runCli('', [
      'agent',
      '--deeplink',
      code.deeplink,
      '--email',
      'nostay@example.com',
      '--serial',
      nextSerial(),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/waiting for approval by an administrator: run with --stay to wait/);
  });

  it('refuses --approval-retry without --stay, and a retry that is not a number of seconds', async () => {
    const code = await manualCode();
    for (const args of [
      ['--approval-retry', '5'],
      ['--stay', '--approval-retry', 'soon'],
      ['--stay', '--approval-retry', '0'],
    ]) {
      const result = await runCli('', ['agent', '--deeplink', code.deeplink, '--email', 'x@example.com', ...args]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/--approval-retry/);
    }
  });
});

describe("the console's simulated device", () => {
  it('says it waits for approval (not "enrolled"), keeps trying, and comes online once approved', async () => {
    const code = await manualCode();
    const result = await simulateEnrollment(
      { deeplink: code.deeplink, email: 'sim-wait@example.com', firstname: null, lastname: null, type: 'android' },
      { stayOnline: true, approvalRetryMs: 200 },
    );
    expect(result).toMatchObject({ ok: true, waiting_for_approval: true, error: null });
    expect(result.log.join('\n')).toMatch(/waits for approval by an administrator: it comes online once approved/);
    const id = result.agent_id!;
    // Its tries are refused (CONNACK 5): still waiting, offline.
    await eventually(async () => (await t.backend.services.events.forAgent(id)).some((e) => e.type === 'mqtt.login_refused'));
    expect(await agentRow(t, id)).toMatchObject({ enroll_status: 'pending_approval' });
    expect((await agentRow(t, id)).is_online).toBeFalsy();

    expect((await t.admin('POST', `/agents/${id}/approve`)).status).toBe(200);
    await eventually(() => isOnline(t, id));
  });

  it('told of its approval, it tries at once instead of at its next retry', async () => {
    const code = await manualCode();
    const result = await simulateEnrollment(
      { deeplink: code.deeplink, email: 'sim-told@example.com', firstname: null, lastname: null, type: 'apple' },
      { stayOnline: true, approvalRetryMs: 3_600_000 },
    );
    const id = result.agent_id!;
    expect(result.waiting_for_approval).toBe(true);
    expect((await t.admin('POST', `/agents/${id}/approve`)).status).toBe(200);
    simulatedDeviceApproved(id);
    await eventually(() => isOnline(t, id));
  });

  it('an invitation (no approval) says enrolled, not waiting', async () => {
    const invited = await t.admin('POST', '/invitations', { email: 'sim-inv@example.com', send_email: false });
    const result = await simulateEnrollment(
      { deeplink: invited.body.deeplink, email: 'sim-inv@example.com', firstname: null, lastname: null, type: 'android' },
      { stayOnline: true },
    );
    expect(result).toMatchObject({ ok: true, waiting_for_approval: false });
    await eventually(() => isOnline(t, result.agent_id!));
  });
});

describe('simulated devices after a server restart', () => {
  it('come back online from the state file; an unenrolled one is forgotten', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-restart-'));
    const stateFile = join(dataDir, 'simulated-devices.json');
    let first: TestBackend | null = await startTestBackend({ dataDir });
    let second: TestBackend | null = null;
    try {
      const code = (await first.admin('POST', '/codes', { name: 'Restart' })).body as Code;
      const simulate = (email: string) =>
        simulateEnrollment(
          { deeplink: code.deeplink, email, firstname: null, lastname: null, type: 'android' },
          { stayOnline: true, stateFile },
        );
      const staying = await simulate('stays@example.com');
      const leaving = await simulate('leaves@example.com');
      for (const result of [staying, leaving]) await eventually(() => isOnline(first!, result.agent_id!));
      expect(statSync(stateFile).mode & 0o777).toBe(0o600);
      expect((JSON.parse(readFileSync(stateFile, 'utf8')) as { devices: unknown[] }).devices).toHaveLength(2);

      // The server stops (its simulated devices with it), and starts again on the same ports.
      const { info } = first.backend;
      await stopSimulatedDevices();
      await first.stop();
      first = null;
      second = await startTestBackend({
        dataDir,
        port: Number(new URL(info.api_url).port),
        mqttPort: info.mqtt_port,
        mqttTlsPort: info.mqtt_tls_port,
      });
      expect((await agentRow(second, staying.agent_id!)).is_online).toBeFalsy();
      expect(await resumeSimulatedDevices(stateFile)).toBe(2);
      for (const result of [staying, leaving]) await eventually(() => isOnline(second!, result.agent_id!));

      // Unenrolled: it leaves for good, and is not brought back by the next restart.
      const unenroll = await second.admin('POST', `/agents/${leaving.agent_id}/commands`, { command: 'unenroll' });
      expect(unenroll.status).toBeLessThan(300);
      await eventually(() => {
        const devices = (JSON.parse(readFileSync(stateFile, 'utf8')) as { devices: { agent_id: number }[] }).devices;
        return devices.length === 1 && devices[0]!.agent_id === staying.agent_id;
      });
    } finally {
      await stopSimulatedDevices();
      await first?.stop();
      await second?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
