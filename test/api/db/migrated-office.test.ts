// After `mdm-console migrate-db`, the office's devices keep working against `serve` on PostgreSQL
// (the URL in MDM_CONSOLE_DATABASE_URL), started with the same data dir on the same ports and
// knowing nothing of the move: a session token issued before it still answers; over MQTT with
// the credentials they had, they obey a deployment made after the move and report it done; each
// device's token opens a session and reads its record, and the file deployed before the move
// downloads whole and by ranges. Skipped until `serve` takes a database URL.
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresSql } from '../../../src-main/backend/db/postgres-sql.ts';
import { USAGES } from '../../../src-main/cli/usage.ts';
import { connectEnrolledDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { downloadAndVerify } from '../../../src-main/device/download.ts';
import { agentCall } from '../../helpers/backend.ts';
import { CLI, runCli } from '../../helpers/cli.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { populateOffice, type PopulatedOffice } from '../../helpers/populated-office.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const SERVE_ON_POSTGRES = USAGES.serve?.includes('--database-url') === true;

let office: PopulatedOffice;
let database: TestDatabase;
let dataDir: string;
let server: ChildProcess | undefined;
let output = '';
let info: { api_url: string; admin_url: string; admin_token: string };
/** A session token the server issued before the move (sessions table). */
let oldSession: string;
const devices: SimulatedDevice[] = [];

const admin = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${info.admin_url}/api${path}`, {
    method,
    headers: {
      authorization: `Bearer ${info.admin_token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
};

describe.skipIf(!SERVE_ON_POSTGRES)('an office moved to PostgreSQL', () => {
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mdm-migrated-'));
    office = await populateOffice(dataDir);
    const db = new Database(join(dataDir, 'mdm-console.sqlite'), { readonly: true });
    oldSession = db
      .prepare('SELECT token FROM sessions WHERE agent_id IS NOT NULL ORDER BY created_at DESC')
      .pluck()
      .get() as string;
    db.close();
    database = await createTestDatabase('migrated');
    const moved = await runCli(dataDir, ['migrate-db', '--to', database.url]);
    expect(moved.code, moved.stderr).toBe(0);
    // What migrate-db says to run: serve with the URL in the environment, the same data dir and ports.
    const { port, adminPort, mqttPort, mqttTlsPort } = office.ports;
    server = spawn(
      process.execPath,
      [
        CLI,
        'serve',
        '--data-dir',
        dataDir,
        '--port',
        String(port),
        '--admin-port',
        String(adminPort),
        '--mqtt-port',
        String(mqttPort),
        '--mqtt-tls-port',
        String(mqttTlsPort),
        '--public-host',
        '127.0.0.1',
        '--host',
        '127.0.0.1',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MDM_CONSOLE_DATABASE_URL: database.url } },
    );
    server.stdout!.on('data', (chunk) => (output += chunk));
    server.stderr!.on('data', (chunk) => (output += chunk));
    const end = Date.now() + 30_000;
    while (!existsSync(join(dataDir, 'server.json'))) {
      if (Date.now() > end || server.exitCode !== null) throw new Error(`serve did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    info = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8'));
  }, 180_000);

  afterAll(async () => {
    await Promise.all(devices.map((device) => device.stop()));
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves at the address the devices know', () => {
    expect(info.api_url).toBe(office.devices[0]!.enrollment.backendUrl.replace(/\/$/, ''));
  });

  it('a session token issued before the move still answers', async () => {
    expect(oldSession).toBeTruthy();
    const full = await agentCall(info.api_url, 'GET', `getFullSession?session_token=${oldSession}`);
    expect(full.status, JSON.stringify(full.body)).toBe(200);
  });

  it('over MQTT with the credentials they had, the devices obey a deployment made after the move (written to PostgreSQL) and report it done', async () => {
    for (const device of office.devices) {
      devices.push(
        await connectEnrolledDevice(device.enrollment, { chunkSize: 4096, mqtt: { backoff: { initialMs: 100, maxMs: 1000 } } }),
      );
    }
    const response = await fetch(`${info.admin_url}/api/files?name=after-the-move.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${info.admin_token}`, 'content-type': 'application/octet-stream' },
      body: Buffer.from('moved to PostgreSQL\n'.repeat(1000)),
    });
    expect(response.status).toBe(201);
    const file = (await response.json()) as { id: number };
    expect(file.id).toBeGreaterThan(office.file.id);
    const fleets = (await admin('GET', '/fleets')).body as
      { items?: { id: number; name: string }[] } | { id: number; name: string }[];
    const warehouse = (Array.isArray(fleets) ? fleets : fleets.items!).find((fleet) => fleet.name === 'Warehouse')!;
    const deployed = await admin('POST', '/deployments', { kind: 'file', item_id: file.id, fleet_id: warehouse.id });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    await eventually(async () => {
      const { body } = await admin('GET', `/deployments/${deployed.body.id}`);
      return body.done === 2 && body.total === 2;
    }, 30_000);
    // The server runs on PostgreSQL: the deployment and its tasks are rows there.
    const sql = new PostgresSql(database.url);
    try {
      expect(await sql.value<number>('SELECT count(*) FROM policy_tasks WHERE deployment_id = ?', [deployed.body.id])).toBe(2);
    } finally {
      await sql.close();
    }
  }, 60_000);

  it("each device's token opens a session that reads its own record, and the file deployed before the move downloads whole and by ranges", async () => {
    for (const device of office.devices) {
      const init = await agentCall(info.api_url, 'GET', `initSession?user_token=${device.enrollment.apiToken}`);
      expect(init.status, JSON.stringify(init.body)).toBe(200);
      // (Reading its record gives a device a new MQTT password: the MQTT test ran first, with the one it had.)
      const record = await agentCall(
        info.api_url,
        'GET',
        `PluginMdmAgent/${device.agentId}?session_token=${init.body.session_token}`,
      );
      expect(record.status, JSON.stringify(record.body)).toBe(200);
      expect(record.body.topic).toBe(device.enrollment.agent.topic);
      const download = await downloadAndVerify({
        backendUrl: device.enrollment.backendUrl,
        apiToken: device.enrollment.apiToken,
        target: `file:${office.file.id}`,
      });
      expect(download.checks.filter((check) => check.status === 'failed')).toEqual([]);
      expect(download.sha256).toBe(office.file.sha256);
      expect(download.rangesChecked.length).toBeGreaterThanOrEqual(4);
    }
  }, 60_000);
});
