// The device simulator on the broker: enrolls, connects with its issued credentials, answers and
// obeys commands, reconnects after a broker restart, and as `agent --stay` serves the CLI's commands.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollDevice, mqttCredentialsOf } from '../../../src-main/device/enroll.ts';
import { MqttAgent, startMqttAgent, type MqttAgentEvent } from '../../../src-main/device/mqtt-agent.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { agentRow, eventually, nextEvent, ofAgent, run } from '../../helpers/mqtt.ts';

const CLI = fileURLToPath(new URL('../../../src-main/cli/main.ts', import.meta.url));

let t: TestBackend;
let counter = 0;

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t.stop();
});

async function invitation(backend: TestBackend) {
  counter += 1;
  const email = `sim${counter}@example.com`;
  const { body } = await backend.admin('POST', '/invitations', { email, send_email: false });
  return { email, deeplink: body.deeplink as string };
}

/** Enrolls through the simulator and connects it; `events` collects what the agent did. */
async function simulatedAgent(backend: TestBackend, options: { tls?: boolean } = {}) {
  if (options.tls) await backend.admin('PATCH', '/settings', { mqtt_tls: true });
  const { email, deeplink } = await invitation(backend);
  const enrollment = await enrollDevice({ deeplink, email });
  const id = Number(enrollment.agentId);
  const events: MqttAgentEvent[] = [];
  const online = nextEvent(backend, ofAgent(id, 'agent.online'));
  const agent = await startMqttAgent({
    ...mqttCredentialsOf(enrollment),
    backoff: { initialMs: 100, maxMs: 1000 },
    onEvent: (e) => events.push(e),
  });
  await online;
  return { id, agent, events, enrollment };
}

describe('the simulator as an MQTT agent', () => {
  it('goes online with its issued credentials, answers ping, obeys lock, wipe, fleet moves and unenroll', async () => {
    const { id, agent, events } = await simulatedAgent(t);
    expect(agent.state.connected).toBe(true);
    expect((await agentRow(t, id)).is_online).toBe(1);

    const reply = nextEvent(t, ofAgent(id, 'agent.ping_reply'));
    expect((await t.admin('POST', `/agents/${id}/commands`, { command: 'ping' })).status).toBe(202);
    await reply;
    expect(agent.state.pings).toBe(1);

    await t.admin('POST', `/agents/${id}/commands`, { command: 'lock' });
    await eventually(() => agent.state.locked);
    await t.admin('POST', `/agents/${id}/commands`, { command: 'unlock' });
    await eventually(() => !agent.state.locked);
    await t.admin('POST', `/agents/${id}/commands`, { command: 'wipe' });
    await eventually(() => agent.state.wiped);

    const fleet = (await t.admin('POST', '/fleets', { name: `Sim fleet ${id}` })).body;
    await t.admin('PATCH', `/agents/${id}`, { fleet_id: fleet.id });
    await eventually(() => agent.state.fleetTopics.includes(`/1/fleet/${fleet.id}`));
    // Subscribed to its new fleet's topic: what the backend publishes there reaches it.
    await eventually(async () => {
      await t.backend.broker.publish(`/1/fleet/${fleet.id}/apps`, 'fleet-app');
      return events.some((e) => e.type === 'message' && e.topic === `/1/fleet/${fleet.id}/apps`);
    });

    const unenrolled = nextEvent(t, ofAgent(id, 'agent.unenrolled'));
    await t.admin('POST', `/agents/${id}/commands`, { command: 'unenroll' });
    await unenrolled;
    expect(await agent.finished).toBe('unenrolled');
    expect((await agentRow(t, id)).enroll_status).toBe('unenrolled');
    await eventually(async () => (await agentRow(t, id)).is_online === 0);
  });

  it('leaves cleanly on stop(): offline, no will needed', async () => {
    const { id, agent } = await simulatedAgent(t);
    const offline = nextEvent(t, ofAgent(id, 'agent.offline'));
    await agent.stop();
    // Its {"online": false} is a sign of life; the DISCONNECT that follows is what takes it offline.
    expect((await offline).data).toMatchObject({ reason: 'disconnected' });
    expect(await agent.finished).toBe('stopped');
  });

  it('gives up when the broker refuses its login', async () => {
    const { email, deeplink } = await invitation(t);
    const enrollment = await enrollDevice({ deeplink, email });
    await expect(startMqttAgent({ ...mqttCredentialsOf(enrollment), password: 'wrong' })).rejects.toThrow(
      /bad user name or password/,
    );
  });
});

describe('a broker restart', () => {
  for (const tls of [false, true]) {
    it(`finds the simulator reconnecting with back-off${tls ? ' over TLS, to the same pinned certificate' : ''}`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'mdm-restart-'));
      let backend = await startTestBackend({ dataDir });
      let agent: MqttAgent | undefined;
      try {
        const started = await simulatedAgent(backend, { tls });
        agent = started.agent;
        expect(started.enrollment.agent.tls).toBe(tls ? 1 : 0);
        const ports = { mqttPort: backend.backend.info.mqtt_port, mqttTlsPort: backend.backend.info.mqtt_tls_port };
        await backend.stop();
        await eventually(() => started.events.some((e) => e.type === 'connection-lost'));

        backend = await startTestBackend({ dataDir, ...ports });
        const online = nextEvent(backend, ofAgent(started.id, 'agent.online'), 20_000);
        await online;
        await eventually(() => started.events.filter((e) => e.type === 'connected').length === 2);
        expect((await agentRow(backend, started.id)).is_online).toBe(1);
        if (tls) expect(agent.state.fingerprint).toBe(backend.backend.info.mqtt_tls_fingerprint);
        // Still serving commands after the reconnection.
        const reply = nextEvent(backend, ofAgent(started.id, 'agent.ping_reply'));
        await backend.admin('POST', `/agents/${started.id}/commands`, { command: 'ping' });
        await reply;
      } finally {
        await agent?.stop();
        await backend.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});

describe('mdm-console agent --stay, driven by mdm-console command', () => {
  it('a command sent from the CLI reaches the device and its reply is recorded; Ctrl+C leaves cleanly', async () => {
    const { email, deeplink } = await invitation(t);
    const serial = `STAY${Date.now() % 100000}`;
    const child = spawn(
      process.execPath,
      [CLI, 'agent', '--deeplink', deeplink, '--email', email, '--serial', serial, '--stay'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    try {
      await eventually(() => output.includes('staying connected'), 20_000);
      const id = ((await t.admin('GET', '/agents')).body.items as { id: number; serial: string }[]).find(
        (a) => a.serial === serial,
      )!.id;
      expect((await agentRow(t, id)).is_online).toBe(1);

      const ping = await run(process.execPath, [CLI, 'command', String(id), 'ping', '--data-dir', t.dataDir], {
        timeoutMs: 30_000,
      });
      expect(ping.code).toBe(0);
      expect(ping.stdout).toMatch(/reply: .* answered the ping/);
      const lock = await run(process.execPath, [CLI, 'command', String(id), 'lock', '--data-dir', t.dataDir], {
        timeoutMs: 30_000,
      });
      expect(lock.code).toBe(0);
      await eventually(() => output.includes('device LOCKED'));
      expect((await t.backend.services.events.forAgent(id)).map((e) => e.type)).toEqual(
        expect.arrayContaining(['agent.command', 'agent.ping_reply']),
      );

      const offline = nextEvent(t, ofAgent(id, 'agent.offline'));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      await offline;
      expect(output).toContain('left the broker');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
