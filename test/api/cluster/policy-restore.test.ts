// Two `serve` nodes on one PostgreSQL database and a real Mosquitto that loses its retained messages
// (restarted without its persistence file): the policies are published again from the database by
// the node holding the `policy-republish` duty, so a policy set through node A and removed through
// node B does not come back to the device from node A's memory, and the active ones do come back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestBackend } from '../../helpers/backend.ts';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';
import { BROKER_MODES_UNDER_TEST, startMosquitto, type MosquittoProcess } from '../../helpers/external-brokers.ts';
import { enrollAgent, eventually, readRecord } from '../../helpers/mqtt.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

describe.runIf(BROKER_MODES_UNDER_TEST.includes('mosquitto'))(
  'policies restored after a broker lost them, with two nodes',
  () => {
    let database: TestDatabase;
    let mosquitto: MosquittoProcess;
    const nodes = new Map<string, ChildBackend>();
    const dirs: string[] = [];
    let token = '';
    const clients: MqttClient[] = [];

    async function startNode(name: string): Promise<ChildBackend> {
      const dataDir = mkdtempSync(join(tmpdir(), `mdm-restore-${name}-`));
      dirs.push(dataDir);
      const node = await startChildBackend({
        dataDir,
        databaseUrl: database.url,
        nodeName: name,
        mqttBroker: 'mosquitto',
        mqttBrokerUrl: mosquitto.adminUrl,
      });
      nodes.set(name, node);
      return node;
    }

    function viewOf(node: ChildBackend): TestBackend {
      const admin = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(`${node.info.admin_url}/api${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        return { status: response.status, body: text ? JSON.parse(text) : undefined };
      };
      return { apiUrl: node.info.api_url, admin } as unknown as TestBackend;
    }

    async function connected(node: ChildBackend): Promise<boolean> {
      const response = await fetch(`${node.info.admin_url}/api/status`, { headers: { authorization: `Bearer ${token}` } });
      return ((await response.json()) as { mqtt?: { connected: boolean } }).mqtt?.connected === true;
    }

    beforeAll(async () => {
      database = await createTestDatabase('policy_restore');
      mosquitto = await startMosquitto();
      const first = await startNode('node-a');
      token = first.info.admin_token;
      await startNode('node-b');
      for (const node of nodes.values()) await eventually(() => connected(node), 60_000);
    }, 240_000);

    afterAll(async () => {
      for (const client of clients) await client.endAsync(true).catch(() => {});
      for (const node of nodes.values()) await node.stop();
      await mosquitto?.destroy();
      await database?.drop();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }, 120_000);

    it('a policy removed through node B is not published again by node A; the active one is', async () => {
      const a = viewOf(nodes.get('node-a')!);
      const b = viewOf(nodes.get('node-b')!);
      const enrolled = await enrollAgent(a);
      const agent = { ...(await readRecord(a, enrolled.session, enrolled.id)), serial: enrolled.serial };

      // Two policies on the device, both set through node A; one removed through node B.
      const kept = await a.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: true, agent_id: agent.id });
      expect(kept.status).toBe(201);
      const removed = await a.admin('POST', '/policy-assignments', { policy: 'passwordMinLength', value: 6, agent_id: agent.id });
      expect(removed.status).toBe(201);
      expect((await b.admin('DELETE', `/policy-assignments/${removed.body.id}`)).status).toBe(200);

      // The broker restarts having lost every retained message; both nodes connect again.
      await mosquitto.stop();
      rmSync(join(mosquitto.dir, 'mosquitto.db'), { force: true });
      await mosquitto.restart();
      for (const node of nodes.values()) await eventually(() => connected(node), 60_000);

      // What the device finds retained under its topic once the nodes are back.
      const received = new Map<string, string>();
      const device = await mqtt.connectAsync({
        host: '127.0.0.1',
        port: mosquitto.port,
        username: agent.serial,
        password: agent.password,
        clientId: agent.serial,
        reconnectPeriod: 0,
      });
      clients.push(device);
      device.on('message', (topic, payload) => {
        if (topic.includes('/Policy/') && payload.length > 0) received.set(topic, payload.toString());
      });
      await device.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
      await eventually(() => [...received.keys()].some((topic) => topic.includes('/Policy/disableCamera/')), 30_000);
      // Given time for every node's restore to arrive.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect([...received.keys()].filter((topic) => topic.includes('/Policy/passwordMinLength/'))).toEqual([]);
    }, 180_000);
  },
);
