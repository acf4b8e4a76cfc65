// Failure behaviour of the external broker modes: broker unreachable at start, broker restarted
// during operation (reconnect, reconcile, no command lost), backend restarted (stale accounts
// removed), a RabbitMQ node down (agents go on through the other), the auth endpoint down or slow.
import mqtt from 'mqtt';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { enrollDevice, mqttCredentialsOf } from '../../../src-main/device/enroll.ts';
import { startMqttAgent, type MqttAgent } from '../../../src-main/device/mqtt-agent.ts';
import { startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { ENROLL_STATUS } from '../../../src-main/backend/agents/status.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { withStoredAgents } from '../../helpers/stored-agents.ts';
import { BROKER_MODES_UNDER_TEST, brokerReady, startMosquitto, type MosquittoProcess } from '../../helpers/external-brokers.ts';
import {
  agentRow,
  closeClients,
  connectAgent,
  enrollAgent,
  eventually,
  inbox,
  nextEvent,
  ofAgent,
  refusalCode,
} from '../../helpers/mqtt.ts';
import { startRabbitCluster, type RabbitCluster } from '../../helpers/rabbitmq.ts';

const agents: MqttAgent[] = [];
const devices: SimulatedDevice[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.stop().catch(() => {})));
  await Promise.all(devices.splice(0).map((device) => device.stop().catch(() => {})));
  await closeClients();
});

async function uploadFile(t: TestBackend, name: string): Promise<number> {
  const response = await fetch(`${t.backend.info.admin_url}/api/files?name=${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body: Buffer.from(`contents of ${name}`),
  });
  return ((await response.json()) as { id: number }).id;
}

async function deviceIn(t: TestBackend, fleet: string, email: string): Promise<SimulatedDevice> {
  const { body } = await t.admin('POST', '/invitations', { email, fleet, send_email: false });
  const device = await startDevice({
    deeplink: body.deeplink,
    email,
    reports: 'mqtt',
    mqtt: { backoff: { initialMs: 100, maxMs: 1000 } },
  });
  devices.push(device);
  return device;
}

const taskStatuses = async (t: TestBackend, deploymentId: number): Promise<string[]> =>
  ((await t.admin('GET', `/deployments/${deploymentId}`)).body.tasks as { status: string }[]).map((task) => task.status);

async function simulated(t: TestBackend, email: string) {
  const { body } = await t.admin('POST', '/invitations', { email, send_email: false });
  const enrollment = await enrollDevice({ deeplink: body.deeplink, email });
  const id = Number(enrollment.agentId);
  const online = nextEvent(t, ofAgent(id, 'agent.online'));
  const agent = await startMqttAgent({
    ...mqttCredentialsOf(enrollment),
    backoff: { initialMs: 100, maxMs: 1000 },
    firstConnectTimeoutMs: 60_000,
  });
  agents.push(agent);
  await online;
  return { id, agent };
}

describe.runIf(BROKER_MODES_UNDER_TEST.includes('mosquitto'))('Mosquitto failures', () => {
  it('unreachable at start: a clear message, retries, the agent API and console work; then it connects and applies what was issued meanwhile', async () => {
    const mosquitto = await startMosquitto({ notYet: true });
    const t = await startTestBackend({ mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
    try {
      await eventually(() => t.backend.broker.status().problem?.includes('ECONNREFUSED'));
      const status = await t.admin('GET', '/status');
      expect(status.body.mqtt).toMatchObject({ mode: 'mosquitto', connected: false });
      const events = (await t.admin('GET', '/events?limit=50')).body.items as { type: string; message: string }[];
      expect(events.find((e) => e.type === 'broker.unreachable')?.message).toMatch(
        /unreachable.*ECONNREFUSED.*retrying with back-off/,
      );
      // The agent API enrolls and serves records; commands are kept in the records.
      const agent = await enrollAgent(t);
      expect(agent.record.port).toBe(mosquitto.port);
      expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'ping' })).status).toBe(409);
      expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'lock' })).status).toBe(202);
      // The console's data: the device list shows the agent, offline.
      const list = await t.admin('GET', '/agents');
      expect(list.status).toBe(200);
      expect(list.body.items.find((row: { id: number }) => row.id === agent.id)).toMatchObject({ is_online: false, lock: 1 });

      await mosquitto.restart();
      await brokerReady(t.backend);
      // The password drawn while the broker was away was applied; the lock is waiting, retained.
      const client = await connectAgent(t, agent);
      const box = inbox(client);
      await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
      await box.next((m) => m.topic === `${agent.topic}/Command/Lock` && m.text === '{"lock":"now"}');
    } finally {
      await t.stop();
      await mosquitto.destroy();
    }
  });

  describe('a running broker', () => {
    let mosquitto: MosquittoProcess;
    let t: TestBackend;
    let dataDir: string;
    beforeAll(async () => {
      mosquitto = await startMosquitto();
      dataDir = mkdtempSync(join(tmpdir(), 'mdm-failures-'));
      t = await startTestBackend({ dataDir, mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
      await brokerReady(t.backend);
    });
    afterAll(async () => {
      await t.stop();
      await mosquitto.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('restarted (crashed) during operation: the backend reconnects, the agent gets the lock sent while it was down', async () => {
      const { id, agent } = await simulated(t, 'crash@example.com');
      await mosquitto.stop({ crash: true });
      await eventually(() => !t.backend.broker.status().connected);
      await eventually(async () => (await agentRow(t, id)).is_online === 0);
      const sent = await t.admin('POST', `/agents/${id}/commands`, { command: 'lock' });
      expect(sent.body).toMatchObject({ online: false, retained: true });
      await mosquitto.restart();
      await brokerReady(t.backend);
      await eventually(() => agent.state.locked, 20_000);
      await eventually(async () => (await agentRow(t, id)).is_online === 1);
    });

    it('restarted (crashed): the fleet policies it lost are published again, and a removal made while it was down reaches it', async () => {
      const fleet = `Crash fleet ${Date.now()}`;
      const fleetId = (await t.admin('POST', '/fleets', { name: fleet })).body.id as number;
      const kept = (
        await t.admin('POST', '/deployments', { kind: 'file', item_id: await uploadFile(t, 'kept.txt'), fleet_id: fleetId })
      ).body;
      const dropped = (
        await t.admin('POST', '/deployments', { kind: 'file', item_id: await uploadFile(t, 'dropped.txt'), fleet_id: fleetId })
      ).body;
      await eventually(async () => (await t.backend.broker.retained(dropped.topic)) !== null);
      await mosquitto.stop({ crash: true });
      await eventually(() => !t.backend.broker.status().connected);
      expect((await t.admin('DELETE', `/deployments/${dropped.id}`)).status).toBe(200);
      await mosquitto.restart();
      await brokerReady(t.backend);
      // A device joining after the restart takes the kept policy (the crash lost the broker's copy) and never the dropped one.
      const phone = await deviceIn(t, fleet, 'after-crash@example.com');
      await eventually(async () => (await taskStatuses(t, kept.id)).join() === 'done', 30_000);
      expect(await t.backend.broker.retained(dropped.topic)).toBeNull();
      expect(Object.keys(phone.policies.state.tasks).map(Number)).toEqual([kept.id]);
    });

    it('restarted (crashed): the value policies it lost, a device-level one too, are published again; one unset while it was down stays cleared', async () => {
      const fleet = `Values fleet ${Date.now()}`;
      const fleetId = (await t.admin('POST', '/fleets', { name: fleet })).body.id as number;
      const agent = await enrollAgent(t, { fleet });
      const set = async (body: Record<string, unknown>) => {
        const { status, body: created } = await t.admin('POST', '/policy-assignments', body);
        expect(status).toBe(201);
        return created as { id: number; topic: string; message: unknown };
      };
      const camera = await set({ policy: 'disableCamera', value: true, fleet_id: fleetId });
      const wifi = await set({ policy: 'disableWifi', value: true, fleet_id: fleetId });
      const own = await set({ policy: 'passwordMinLength', value: 8, agent_id: agent.id });
      await eventually(async () => (await t.backend.broker.retained(wifi.topic)) !== null);
      await mosquitto.stop({ crash: true });
      await eventually(() => !t.backend.broker.status().connected);
      expect((await t.admin('DELETE', `/policy-assignments/${wifi.id}`)).status).toBe(200);
      await mosquitto.restart();
      await brokerReady(t.backend);
      // The device connecting after the restart, subscribed as the Flyve agent is, reads them retained.
      const client = await connectAgent(t, agent);
      const box = inbox(client);
      await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 }, [`/1/fleet/${fleetId}/#`]: { qos: 1 } });
      for (const kept of [camera, own]) {
        const message = await box.next((m) => m.topic === kept.topic && m.text !== '', 20_000);
        expect([message.text, message.retain]).toEqual([JSON.stringify(kept.message), true]);
      }
      await eventually(async () => (await t.backend.broker.retained(wifi.topic)) === null);
      expect(box.messages.filter((m) => m.topic === wifi.topic && m.text !== '')).toEqual([]);
    });

    it('after its own restart the backend reconciles: an agent unenrolled meanwhile loses its account', async () => {
      const keep = await enrollAgent(t);
      const drop = await enrollAgent(t);
      await t.stop();
      await withStoredAgents(dataDir, (agents) =>
        agents.setEnrollStatus(drop.id, ENROLL_STATUS.unenrolled, new Date().toISOString()),
      );
      t = await startTestBackend({ dataDir, mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
      await brokerReady(t.backend);
      expect(await refusalCode(t, drop)).not.toBe(0);
      const client = await connectAgent(t, keep);
      expect(client.connected).toBe(true);
    });
  });
});

describe.runIf(BROKER_MODES_UNDER_TEST.includes('rabbitmq'))('RabbitMQ cluster failures', () => {
  let rabbit: RabbitCluster;
  let t: TestBackend;
  let dataDir: string;
  beforeAll(async () => {
    rabbit = await startRabbitCluster();
    dataDir = mkdtempSync(join(tmpdir(), 'mdm-rabbit-failures-'));
    t = await startTestBackend({
      dataDir,
      mqttBroker: 'rabbitmq',
      mqttBrokerUrl: rabbit.backendUrl,
      mqttAuthPort: rabbit.authPort,
      mqttAuthSecret: rabbit.authSecret,
    });
    await brokerReady(t.backend);
  }, 240_000);
  afterAll(async () => {
    await t?.stop();
    await rabbit?.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }, 120_000);

  it('an agent on the other node gets its commands; when its node goes down it goes on through the first, and finds its lock there', async () => {
    const agent = await enrollAgent(t);
    const [first, second] = rabbit.nodes;
    // The agent on the second node (the backend's link is on the first), able to fail over to the first.
    const client = mqtt.connect({
      servers: [
        { host: '127.0.0.1', port: second!.mqttPort },
        { host: '127.0.0.1', port: first!.mqttPort },
      ],
      username: agent.serial,
      password: agent.password,
      clientId: agent.serial,
      reconnectPeriod: 200,
      will: { topic: `${agent.topic}/Status/Online`, payload: Buffer.from('{"online": false}'), qos: 1, retain: true },
    });
    client.on('error', () => {});
    const box = inbox(client);
    const sayOnline = async () => {
      await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
      await client.publishAsync(`${agent.topic}/Status/Online`, '{"online": true}', { qos: 1, retain: true });
    };
    try {
      await new Promise<void>((resolve) => client.once('connect', () => resolve()));
      await sayOnline();
      await eventually(async () => (await agentRow(t, agent.id)).is_online === 1);
      await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'lock' });
      await box.next((m) => m.topic === `${agent.topic}/Command/Lock`);

      // Its node stops: it reconnects to the first node, whose retained store never saw the lock.
      box.messages.length = 0;
      client.on('connect', () => void sayOnline().catch(() => {}));
      await second!.stop();
      const again = await box.next((m) => m.topic === `${agent.topic}/Command/Lock` && m.text === '{"lock":"now"}', 60_000);
      expect(again.text).toBe('{"lock":"now"}');
      await eventually(async () => (await agentRow(t, agent.id)).is_online === 1);
      const reply = nextEvent(t, ofAgent(agent.id, 'agent.ping_reply'));
      await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'ping' });
      await box.next((m) => m.topic === `${agent.topic}/Command/Ping`);
      await client.publishAsync(`${agent.topic}/Status/Ping`, '!', { qos: 1 });
      await reply;
    } finally {
      await client.endAsync(true).catch(() => {});
      await second!.start();
    }
  }, 180_000);

  it("an agent on the node that never held the fleet's retained policy gets it when it says it is online, and its report is taken in", async () => {
    const fleet = `Node fleet ${Date.now()}`;
    const fleetId = (await t.admin('POST', '/fleets', { name: fleet })).body.id as number;
    const created = (
      await t.admin('POST', '/deployments', { kind: 'file', item_id: await uploadFile(t, 'node.txt'), fleet_id: fleetId })
    ).body;
    const agent = await enrollAgent(t, { fleet });
    const second = rabbit.nodes[1]!;
    // On the second node only (the backend's link, and so the retained copy, is on the first).
    const client = mqtt.connect({
      host: '127.0.0.1',
      port: second.mqttPort,
      username: agent.serial,
      password: agent.password,
      clientId: agent.serial,
      reconnectPeriod: 0,
    });
    client.on('error', () => {});
    try {
      await new Promise<void>((resolve) => client.once('connect', () => resolve()));
      const box = inbox(client);
      await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 }, [`/1/fleet/${fleetId}/#`]: { qos: 1 } });
      await client.publishAsync(`${agent.topic}/Status/Online`, '{"online": true}', { qos: 1, retain: true });
      const subscribe = await box.next((m) => m.topic === `${agent.topic}/Command/Subscribe`, 15_000);
      expect(JSON.parse(subscribe.text)).toEqual({ subscribe: [{ topic: `/1/fleet/${fleetId}` }] });
      const policy = await box.next((m) => m.topic === created.topic, 15_000);
      expect(JSON.parse(policy.text)).toMatchObject({ deployFile: expect.any(String), taskId: created.id });
      await client.publishAsync(`${agent.topic}/Status/Task/${created.id}`, JSON.stringify({ status: 'received' }), { qos: 1 });
      await eventually(async () => (await taskStatuses(t, created.id)).join() === 'received');
    } finally {
      await client.endAsync(true).catch(() => {});
    }
  });

  it('auth endpoint down or slow: the broker refuses the login cleanly and keeps serving; back, logins work again', async () => {
    const agent = await enrollAgent(t);
    const port = t.backend.info.mqtt_port;
    await t.stop();
    // Down: nothing listens on the auth port.
    const down = await refusalCode({ backend: { info: { mqtt_port: port } } } as TestBackend, agent);
    expect(down).not.toBe(0);
    // Slow: something accepts the auth requests and never answers.
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => (sockets.add(socket), socket.on('error', () => {})));
    await new Promise<void>((resolve) => silent.listen(rabbit.authPort, '127.0.0.1', () => resolve()));
    try {
      const slow = await refusalCode({ backend: { info: { mqtt_port: port } } } as TestBackend, agent, {
        connectTimeout: 20_000,
      });
      expect(slow).not.toBe(0);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
    t = await startTestBackend({
      dataDir,
      mqttBroker: 'rabbitmq',
      mqttBrokerUrl: rabbit.backendUrl,
      mqttAuthPort: rabbit.authPort,
      mqttAuthSecret: rabbit.authSecret,
    });
    await brokerReady(t.backend);
    const client = await connectAgent(t, agent);
    expect(client.connected).toBe(true);
  }, 120_000);
});
