// Several nodes on one external broker (issue 23, item 2): what agents report is read once across
// the nodes, by the node holding the `mqtt-ingest` duty through a persistent MQTT session; when that
// node is killed (kill -9) another takes the session over and nothing reported meanwhile is lost.
// Presence still comes from the broker on every node. Two `serve` nodes in child processes on one
// PostgreSQL database and a real Mosquitto.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestBackend } from '../../helpers/backend.ts';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';
import { BROKER_MODES_UNDER_TEST, startMosquitto, type MosquittoProcess } from '../../helpers/external-brokers.ts';
import { enrollAgent, eventually, readRecord } from '../../helpers/mqtt.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const INGEST_DUTY = 'mqtt-ingest';

describe.runIf(BROKER_MODES_UNDER_TEST.includes('mosquitto'))('several nodes on Mosquitto: reports read once', () => {
  let database: TestDatabase;
  let db: pg.Pool;
  let mosquitto: MosquittoProcess;
  const nodes = new Map<string, ChildBackend>();
  const dirs: string[] = [];
  /** An API token (kept in the database, so every node takes it; each node's admin token is its data dir's). */
  let token = '';
  const clients: MqttClient[] = [];

  async function startNode(name: string): Promise<ChildBackend> {
    const dataDir = mkdtempSync(join(tmpdir(), `mdm-ingest-${name}-`));
    dirs.push(dataDir);
    const node = await startChildBackend({
      dataDir,
      databaseUrl: database.url,
      nodeName: name,
      // Short leases: a killed node's duties are taken over within a few seconds.
      dutyTiming: { leaseMs: 3_000, renewEveryMs: 500 },
      mqttBroker: 'mosquitto',
      mqttBrokerUrl: mosquitto.adminUrl,
    });
    nodes.set(name, node);
    return node;
  }

  /** The test's view of a node: enough for the helpers that enroll agents. */
  function viewOf(node: ChildBackend): TestBackend {
    const admin = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${node.info.admin_url}/api${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    };
    return { apiUrl: node.info.api_url, admin } as unknown as TestBackend;
  }

  async function status(node: ChildBackend): Promise<{ connected: boolean; connected_agents: number }> {
    const response = await fetch(`${node.info.admin_url}/api/status`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await response.json()) as { mqtt?: { connected: boolean; connected_agents: number } };
    if (!body.mqtt) throw new Error(`no broker status from ${node.info.admin_url}: ${JSON.stringify(body)}`);
    return body.mqtt;
  }

  const holder = async () =>
    (
      await db.query<{ holder: string }>(`SELECT holder FROM duty_leases WHERE duty = $1 AND expires_at > $2`, [
        INGEST_DUTY,
        new Date().toISOString(),
      ])
    ).rows[0]?.holder;

  /** The latitudes of the agent's recorded positions, one per report taken in. */
  const latitudes = async (agentId: number) =>
    (
      await db.query<{ data: string }>(`SELECT data FROM events WHERE type = 'agent.geolocation' AND agent_id = $1 ORDER BY id`, [
        agentId,
      ])
    ).rows.map((row) => (JSON.parse(row.data) as { latitude: number }).latitude);

  beforeAll(async () => {
    database = await createTestDatabase('ingest-once');
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    mosquitto = await startMosquitto();
    const first = await startNode('node-a');
    const created = await fetch(`${first.info.admin_url}/api/tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.info.admin_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'several nodes', role: 'admin' }),
    });
    expect(created.status).toBe(201);
    token = ((await created.json()) as { token: string }).token;
    await startNode('node-b');
    for (const node of nodes.values()) await eventually(async () => (await status(node)).connected, 60_000);
  }, 240_000);

  afterAll(async () => {
    for (const client of clients) await client.endAsync(true).catch(() => {});
    for (const node of nodes.values()) await node.stop();
    await db?.end();
    await mosquitto?.destroy();
    await database?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('a report is recorded once; the ingesting node killed, reports sent meanwhile are taken in by the other, none lost', async () => {
    const a = viewOf(nodes.get('node-a')!);
    const b = viewOf(nodes.get('node-b')!);
    // Enrolled through node A; its record read again through node B, which made nothing of it on the
    // broker: the password B draws must work all the same (B's view of the broker was stale).
    const enrolled = await enrollAgent(a);
    const agent = { ...(await readRecord(b, enrolled.session, enrolled.id)), serial: enrolled.serial };
    const device = await mqtt.connectAsync({
      host: '127.0.0.1',
      port: mosquitto.port,
      username: agent.serial,
      password: agent.password,
      clientId: agent.serial,
      reconnectPeriod: 0,
      will: { topic: `${agent.topic}/Status/Online`, payload: Buffer.from('{"online": false}'), qos: 1, retain: true },
    });
    clients.push(device);
    // A device answers pings (a node checks presence it finds only retained with one).
    device.on('message', (topic) => {
      if (topic === `${agent.topic}/Command/Ping`) void device.publishAsync(`${agent.topic}/Status/Ping`, '!', { qos: 1 });
    });
    await device.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
    await device.publishAsync(`${agent.topic}/Status/Online`, '{"online": true}', { qos: 1, retain: true });
    const report = (latitude: number) =>
      device.publishAsync(
        `${agent.topic}/Status/Geolocation`,
        JSON.stringify({ latitude, longitude: 2.35, datetime: Math.floor(Date.now() / 1000) }),
        { qos: 1 },
      );

    // Presence from the broker on every node.
    for (const node of nodes.values()) await eventually(async () => (await status(node)).connected_agents === 1, 20_000);
    const online = await a.admin('GET', `/agents/${agent.id}`);
    expect(online.body.is_online).toBe(true);

    const first = [48.1, 48.2, 48.3, 48.4, 48.5];
    for (const latitude of first) await report(latitude);
    await eventually(async () => (await latitudes(agent.id)).length >= first.length, 20_000);
    // Given time for a second reader to show itself, each report is there once.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await latitudes(agent.id)).toEqual(first);

    // The node reading reports dies without a word; reports keep coming meanwhile.
    const ingesting = (await holder())!;
    expect(['node-a', 'node-b']).toContain(ingesting);
    const victim = nodes.get(ingesting)!;
    victim.child.kill('SIGKILL');
    await new Promise((resolve) => victim.child.once('exit', resolve));
    nodes.delete(ingesting);
    const survivor = [...nodes.values()][0]!;
    const second = [49.1, 49.2, 49.3, 49.4, 49.5];
    for (const latitude of second) await report(latitude);

    await eventually(async () => (await latitudes(agent.id)).length >= first.length + second.length, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await latitudes(agent.id)).toEqual([...first, ...second]);
    expect(await holder()).toBe(ingesting === 'node-a' ? 'node-b' : 'node-a');
    // Presence, derived afresh by the new reader (a ping answered), and still followed by the survivor.
    await eventually(async () => (await viewOf(survivor).admin('GET', `/agents/${agent.id}`)).body.is_online === true, 20_000);
    expect((await status(survivor)).connected_agents).toBe(1);
  }, 180_000);
});
