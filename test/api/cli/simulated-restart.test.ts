// "Simulate a device" across a restart of `serve`, as a user runs it: the simulated devices (one
// waiting for approval, then approved; one enrolled at once) come back online when the server
// starts again on the same ports, and obey the policies assigned to them then.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { CLI } from '../../helpers/cli.ts';
import { eventually } from '../../helpers/mqtt.ts';

vi.setConfig({ testTimeout: 180_000 });

const dataDir = mkdtempSync(join(tmpdir(), 'mdm-sim-restart-'));
const servers: ChildProcess[] = [];
afterAll(() => {
  for (const server of servers) if (server.exitCode === null) server.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

interface Info {
  admin_url: string;
  admin_token: string;
  api_url: string;
  mqtt_port: number;
  mqtt_tls_port: number;
}

/** `serve` on the data dir; resolves with server.json once the banner is printed. */
async function serve(ports: { port: number; mqttPort: number; mqttTlsPort: number }) {
  rmSync(join(dataDir, 'server.json'), { force: true });
  const child = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--data-dir',
      dataDir,
      '--port',
      String(ports.port),
      '--admin-port',
      '0',
      '--mqtt-port',
      String(ports.mqttPort),
      '--mqtt-tls-port',
      String(ports.mqttTlsPort),
      '--public-host',
      '127.0.0.1',
      '--host',
      '127.0.0.1',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  servers.push(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  await eventually(
    () => (existsSync(join(dataDir, 'server.json')) && output.includes('Press Ctrl+C')) || child.exitCode !== null,
    60_000,
  );
  if (child.exitCode !== null) throw new Error(`serve exited: ${output}`);
  const info = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as Info;
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${info.admin_url}/api${path}`, {
      method,
      headers: {
        authorization: `Bearer ${info.admin_token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
  };
  return { info, admin, output: () => output, stop };
}

it('devices simulated from the console reconnect after serve restarts; one that waited for approval comes online once approved', async () => {
  const first = await serve({ port: 0, mqttPort: 0, mqttTlsPort: 0 });
  const manual = (await first.admin('POST', '/codes', { name: 'Front desk', approval: 'manual' })).body;
  const auto = (await first.admin('POST', '/codes', { name: 'Lobby' })).body;
  const waiting = await first.admin('POST', `/codes/${manual.id}/simulate`, { email: 'waits@example.com' });
  expect(waiting.body).toMatchObject({ ok: true, waiting_for_approval: true });
  const enrolled = await first.admin('POST', `/codes/${auto.id}/simulate`, { email: 'at-once@example.com' });
  expect(enrolled.body).toMatchObject({ ok: true, waiting_for_approval: false });
  const online = async (server: typeof first, id: number) => (await server.admin('GET', `/agents/${id}`)).body.is_online === true;

  await eventually(() => online(first, enrolled.body.agent_id), 20_000);
  expect(await online(first, waiting.body.agent_id)).toBe(false);
  expect((await first.admin('POST', `/agents/${waiting.body.agent_id}/approve`)).status).toBe(200);
  await eventually(() => online(first, waiting.body.agent_id), 20_000); // told at once, not in 30 s

  await first.stop();
  const second = await serve({
    port: Number(new URL(first.info.api_url).port),
    mqttPort: first.info.mqtt_port,
    mqttTlsPort: first.info.mqtt_tls_port,
  });
  try {
    expect(second.output()).toContain('Simulated devices:     2 from the last run reconnecting');
    for (const id of [waiting.body.agent_id, enrolled.body.agent_id]) await eventually(() => online(second, id), 30_000);
    // Back, they obey policies as before the restart: a value assigned to each reaches done.
    for (const id of [waiting.body.agent_id, enrolled.body.agent_id]) {
      const assigned = await second.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: true, agent_id: id });
      expect(assigned.status).toBe(201);
      await eventually(
        async () => (await second.admin('GET', `/policy-assignments/${assigned.body.id}`)).body.tasks[0]?.status === 'done',
        30_000,
      );
    }
  } finally {
    await second.stop();
  }
});
