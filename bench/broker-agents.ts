// How many simulated agents one broker holds connected, and at what memory (a rough figure).
// Starts `serve` in a child process on loopback, enrolls N agents through the REST API with the
// simulator, connects them all with mqtt.js as the simulator does (will, T/# subscription, online),
// pings them all, reads the server's RSS from /proc, then stops everything.
//
//   node bench/broker-agents.ts [--agents 2000] [--concurrency 50]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import mqtt, { type MqttClient } from 'mqtt';
import { enrollDevice, mqttCredentialsOf } from '../src-main/device/enroll.ts';
import type { MqttCredentials } from '../src-main/device/enroll.ts';

const { values } = parseArgs({ options: { agents: { type: 'string' }, concurrency: { type: 'string' } } });
const AGENTS = Number(values.agents ?? 2000);
const CONCURRENCY = Number(values.concurrency ?? 50);
const DEADLINE = Date.now() + 15 * 60_000; // the whole run stops by itself
const CLI = fileURLToPath(new URL('../src-main/cli/main.ts', import.meta.url));

const dataDir = mkdtempSync(join(tmpdir(), 'mdm-bench-broker-'));
const server = spawn(
  process.execPath,
  [CLI, 'serve', '--data-dir', dataDir, '--port', '0', '--admin-port', '0', '--mqtt-port', '0', '--mqtt-tls-port', '0', '--host', '127.0.0.1', '--public-host', '127.0.0.1'],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
  return Math.round(Number(line.split(/\s+/)[1]) / 1024);
}

async function pool<T>(items: T[], size: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: size }, async () => {
      while (next < items.length) {
        if (Date.now() > DEADLINE) throw new Error('deadline reached');
        const index = next++;
        await work(items[index]!, index);
      }
    }),
  );
}

const clients: MqttClient[] = [];
try {
  let info: { admin_url: string; admin_token: string; mqtt_port: number } | undefined;
  while (!info) {
    try {
      info = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8'));
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${info!.admin_url}/api${path}`, {
      method,
      headers: { authorization: `Bearer ${info!.admin_token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return response.json() as Promise<any>;
  };
  const idle = rssMiB(server.pid!);

  let started = Date.now();
  const invitations: { email: string; deeplink: string }[] = [];
  for (let offset = 0; offset < AGENTS; offset += 1000) {
    const rows = Array.from({ length: Math.min(1000, AGENTS - offset) }, (_, i) => ({ email: `bench${offset + i}@example.com` }));
    const created = await admin('POST', '/invitations/bulk', { invitations: rows, send_email: false });
    invitations.push(...created.items.map((item: { email: string; deeplink: string }) => ({ email: item.email, deeplink: item.deeplink })));
  }
  const credentials: MqttCredentials[] = [];
  await pool(invitations, CONCURRENCY, async (invitation) => {
    credentials.push(mqttCredentialsOf(await enrollDevice(invitation)));
  });
  const enrollSeconds = (Date.now() - started) / 1000;
  const enrolled = rssMiB(server.pid!);

  started = Date.now();
  await pool(credentials, CONCURRENCY * 2, async (agent) => {
    const client = mqtt.connect({
      host: agent.host,
      port: agent.port,
      username: agent.username,
      password: agent.password,
      clientId: agent.username,
      reconnectPeriod: 0,
      keepalive: 60,
      will: { topic: `${agent.topic}/Status/Online`, payload: Buffer.from('{"online":false}'), qos: 1, retain: true },
    });
    client.on('error', () => {});
    clients.push(client);
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('close', () => reject(new Error('closed before CONNACK')));
    });
    await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
    await client.publishAsync(`${agent.topic}/Status/Online`, '{"online":true}', { qos: 1, retain: true });
    client.on('message', (topic) => {
      if (topic.endsWith('/Command/Ping')) void client.publishAsync(`${agent.topic}/Status/Ping`, '!', { qos: 1 });
    });
  });
  const connectSeconds = (Date.now() - started) / 1000;
  const status = await admin('GET', '/status');
  const connected = rssMiB(server.pid!);

  // One ping to every agent through the admin API, answered by each.
  started = Date.now();
  const agents: { id: number }[] = (await admin('GET', '/agents')).items;
  await pool(agents, CONCURRENCY, async (agent) => {
    await admin('POST', `/agents/${agent.id}/commands`, { command: 'ping' });
  });
  const pingSeconds = (Date.now() - started) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const afterPings = rssMiB(server.pid!);

  console.log(
    JSON.stringify(
      {
        agents: AGENTS,
        connected_agents: status.mqtt.connected_agents,
        online_in_db: status.counts.online,
        enroll_seconds: enrollSeconds,
        connect_seconds: connectSeconds,
        ping_all_seconds: pingSeconds,
        server_rss_mib: { idle, after_enrollment: enrolled, all_connected: connected, after_pinging_all: afterPings },
        per_connection_kib: Math.round(((connected - enrolled) * 1024) / Math.max(status.mqtt.connected_agents, 1)),
      },
      null,
      2,
    ),
  );
} finally {
  await Promise.all(clients.map((client) => client.endAsync(true).catch(() => {})));
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('close', resolve));
  rmSync(dataDir, { recursive: true, force: true });
}
