// The same enrollment, presence, command, reply, ACL, download and deployment flows against each broker mode:
// the embedded aedes broker, an external Mosquitto with dynamic security, a 2-node RabbitMQ cluster.
// MDM_TEST_BROKER_MODES=embedded,mosquitto narrows the modes.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { MqttClient } from 'mqtt';
import { describe, expect, it, beforeAll, afterAll, afterEach } from 'vitest';
import { enrollDevice, mqttCredentialsOf } from '../../../src-main/device/enroll.ts';
import { runAgent } from '../../../src-main/device/agent.ts';
import { startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import type { TaskReportChannel } from '../../../src-main/device/policy-agent.ts';
import { startMqttAgent, type MqttAgent, type MqttAgentEvent } from '../../../src-main/device/mqtt-agent.ts';
import { enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { BROKER_MODES_UNDER_TEST, brokerReady, startMosquitto, type MosquittoProcess } from '../../helpers/external-brokers.ts';
import { startRabbitCluster, type RabbitCluster } from '../../helpers/rabbitmq.ts';
import {
  agentRow,
  closeClients,
  connectAgent,
  enrollAgent,
  eventually,
  inbox,
  nextEvent,
  ofAgent,
  readRecord,
  refusalCode,
} from '../../helpers/mqtt.ts';

const APK = readFileSync(fileURLToPath(new URL('../../fixtures/field-app.apk', import.meta.url)));

/** Waits for an MQTT operation, or for the broker to close the connection instead of answering. */
function settled(client: MqttClient, operation: Promise<unknown>): Promise<unknown> {
  return Promise.race([
    operation.catch((error: unknown) => error),
    new Promise<void>((resolve) => client.once('close', () => resolve())),
    new Promise((resolve) => setTimeout(resolve, 5_000)),
  ]);
}

describe.each(BROKER_MODES_UNDER_TEST)('broker mode %s', (mode) => {
  let t: TestBackend;
  let mosquitto: MosquittoProcess | undefined;
  let rabbit: RabbitCluster | undefined;
  const agents: MqttAgent[] = [];
  const devices: SimulatedDevice[] = [];

  beforeAll(async () => {
    if (mode === 'mosquitto') {
      mosquitto = await startMosquitto();
      t = await startTestBackend({ mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
    } else if (mode === 'rabbitmq') {
      rabbit = await startRabbitCluster();
      t = await startTestBackend({
        mqttBroker: 'rabbitmq',
        mqttBrokerUrl: rabbit.backendUrl,
        mqttAuthPort: rabbit.authPort,
        mqttAuthSecret: rabbit.authSecret,
      });
      // Agents are told the first node; the cluster's other node is tested in broker-rabbitmq.test.ts.
    } else {
      t = await startTestBackend();
    }
    await brokerReady(t.backend);
  }, 240_000);
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop().catch(() => {})));
    await Promise.all(devices.splice(0).map((device) => device.stop().catch(() => {})));
    await closeClients();
  });
  afterAll(async () => {
    await t?.stop();
    await mosquitto?.destroy();
    await rabbit?.destroy();
  }, 60_000);

  let counter = 0;
  async function simulated() {
    counter += 1;
    const email = `${mode}${counter}@example.com`;
    const { body } = await t.admin('POST', '/invitations', { email, send_email: false });
    const enrollment = await enrollDevice({ deeplink: body.deeplink, email });
    const id = Number(enrollment.agentId);
    const events: MqttAgentEvent[] = [];
    const online = nextEvent(t, ofAgent(id, 'agent.online'));
    const agent = await startMqttAgent({
      ...mqttCredentialsOf(enrollment),
      backoff: { initialMs: 100, maxMs: 1000 },
      onEvent: (e) => events.push(e),
    });
    agents.push(agent);
    await online;
    return { id, agent, events, enrollment };
  }

  it('names this broker in the status and in agent records', async () => {
    const status = await t.admin('GET', '/status');
    expect(status.body.mqtt).toMatchObject({ mode, connected: true, problem: null });
    expect(status.body.mqtt_broker).toBe(mode);
    const agent = await enrollAgent(t);
    expect(agent.record).toMatchObject({ broker: '127.0.0.1', port: t.backend.info.mqtt_port, tls: 0 });
  });

  it('the simulator: online, ping answered, lock and unlock obeyed, fleet move, unenroll', async () => {
    const { id, agent, events } = await simulated();
    expect((await agentRow(t, id)).is_online).toBe(1);
    const reply = nextEvent(t, ofAgent(id, 'agent.ping_reply'));
    expect((await t.admin('POST', `/agents/${id}/commands`, { command: 'ping' })).status).toBe(202);
    await reply;
    await t.admin('POST', `/agents/${id}/commands`, { command: 'lock' });
    await eventually(() => agent.state.locked);
    await t.admin('POST', `/agents/${id}/commands`, { command: 'unlock' });
    await eventually(() => !agent.state.locked);

    const fleet = (await t.admin('POST', '/fleets', { name: `Moved ${mode} ${Date.now()}` })).body;
    expect((await t.admin('PATCH', `/agents/${id}`, { fleet_id: fleet.id })).status).toBe(200);
    await eventually(() => agent.state.fleetTopics.includes(`/1/fleet/${fleet.id}`));
    // A fleet message reaches it once it subscribed to its new fleet's topic.
    const got = new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        void t.backend.broker.publish(`/1/fleet/${fleet.id}/apps`, 'fleet-app').catch(() => {});
        if (events.some((e) => e.type === 'message' && e.topic === `/1/fleet/${fleet.id}/apps`)) {
          clearInterval(timer);
          resolve();
        }
      }, 200);
    });
    await got;

    const unenrolled = nextEvent(t, ofAgent(id, 'agent.unenrolled'));
    await t.admin('POST', `/agents/${id}/commands`, { command: 'unenroll' });
    await unenrolled;
    await eventually(async () => (await agentRow(t, id)).enroll_status === 'unenrolled');
  });

  it('a lock sent while the agent is offline reaches it when it connects', async () => {
    const agent = await enrollAgent(t);
    expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'lock' })).body).toMatchObject({
      online: false,
      retained: true,
    });
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
    await client.publishAsync(`${agent.topic}/Status/Online`, '{"online": true}', { qos: 1, retain: true });
    await box.next((m) => m.topic === `${agent.topic}/Command/Lock` && m.text === '{"lock":"now"}', 15_000);
  });

  it('rights: no agent publishes commands or reads another agent; # gives nothing', async () => {
    const a = await enrollAgent(t);
    const b = await enrollAgent(t);
    const clientB = await connectAgent(t, b);
    const boxB = inbox(clientB);
    await clientB.subscribeAsync({ [`${b.topic}/#`]: { qos: 1 } });
    // A refusal is a failed SUBACK (aedes, Mosquitto) or a closed connection (RabbitMQ): either way nothing arrives.
    const clientA = await connectAgent(t, a);
    const boxA = inbox(clientA);
    await settled(clientA, clientA.subscribeAsync({ '#': { qos: 1 } }));
    const c = await enrollAgent(t);
    const spy = await connectAgent(t, c);
    const spyBox = inbox(spy);
    await settled(spy, spy.subscribeAsync({ [`${b.topic}/#`]: { qos: 1 } }));
    const d = await enrollAgent(t);
    const forger = await connectAgent(t, d);
    // A forged command from A, then a real one from the backend: B gets only the real one.
    await settled(forger, forger.publishAsync(`${b.topic}/Command/Wipe`, '{"wipe":"now"}', { qos: 1 }));
    await clientB.publishAsync(`${b.topic}/Status/Online`, '{"online": true}', { qos: 1, retain: true });
    await eventually(async () => (await agentRow(t, b.id)).is_online === 1);
    await t.admin('POST', `/agents/${b.id}/commands`, { command: 'ping' });
    await boxB.next((m) => m.topic === `${b.topic}/Command/Ping`);
    expect(boxB.messages.filter((m) => m.topic.endsWith('/Command/Wipe'))).toEqual([]);
    expect([...boxA.messages, ...spyBox.messages].filter((m) => m.topic.startsWith(b.topic))).toEqual([]);
    expect((await agentRow(t, b.id)).wipe).toBe(0);
  });

  it('credentials follow the record: a redrawn password replaces the old one; delete removes the login', async () => {
    const agent = await enrollAgent(t);
    const again = await readRecord(t, agent.session, agent.id);
    expect(again.password).not.toBe(agent.password);
    expect(await refusalCode(t, agent)).not.toBe(0);
    const client = await connectAgent(t, again);
    expect(client.connected).toBe(true);
    await client.endAsync();
    expect((await t.admin('DELETE', `/agents/${agent.id}`)).status).toBeLessThan(300);
    await eventually(async () => (await refusalCode(t, again)) !== 0, 10_000);
  });

  it('the same device enrolling again: the old install is disconnected (RabbitMQ: at its next login) and its password refused', async () => {
    const email = `again-${mode}@example.com`;
    const serial = `AGAIN${mode.toUpperCase()}`;
    const enroll = async () => {
      const invited = await t.admin('POST', '/invitations', { email, send_email: false });
      const { session, created } = await enrollByHand(t.apiUrl, { ...invited.body, email }, { serial });
      expect(created.status).toBe(201);
      return readRecord(t, session, Number(created.body.id));
    };
    const first = await enroll();
    const old = await connectAgent(t, first);
    const closed = new Promise<void>((resolve) => old.once('close', () => resolve()));
    const second = await enroll();
    expect(second.id).toBe(first.id);
    // RabbitMQ cannot be told to drop one connection (no management API): only the next login is refused.
    if (mode !== 'rabbitmq') await closed;
    await eventually(async () => (await refusalCode(t, first)) !== 0);
    const client = await connectAgent(t, second);
    expect(client.connected).toBe(true);
  });

  async function device(fleet: string, reports: TaskReportChannel): Promise<SimulatedDevice> {
    counter += 1;
    const email = `${mode}-deploy${counter}@example.com`;
    const { body } = await t.admin('POST', '/invitations', { email, fleet, send_email: false });
    const started = await startDevice({
      deeplink: body.deeplink,
      email,
      reports,
      chunkSize: 65_536,
      mqtt: { backoff: { initialMs: 100, maxMs: 1000 } },
    });
    devices.push(started);
    return started;
  }
  const deploymentOf = async (id: number) => (await t.admin('GET', `/deployments/${id}`)).body;
  const allDone = (id: number, count: number) =>
    eventually(async () => {
      const d = await deploymentOf(id);
      return d.done === count && d.total === count ? d : false;
    }, 30_000);

  it('deployments: a package deployed to a fleet reaches done on every device (MQTT and REST reports), a late device too; removal uninstalls', async () => {
    const fleetName = `Deploy ${mode}`;
    const fleetId = (await t.admin('POST', '/fleets', { name: fleetName })).body.id as number;
    const phones = [await device(fleetName, 'mqtt'), await device(fleetName, 'http')];
    const upload = await fetch(`${t.backend.info.admin_url}/api/packages?name=field-app.apk`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
      body: APK,
    });
    const pkg = (await upload.json()) as { id: number; sha256: string };
    const created = await t.admin('POST', '/deployments', {
      kind: 'package',
      item_id: pkg.id,
      fleet_id: fleetId,
      remove_on_delete: true,
    });
    expect(created.status).toBe(201);
    expect(created.body.topic).toBe(`/1/fleet/${fleetId}/Policy/deployApp/Task/${created.body.id}`);
    expect(await t.backend.broker.retained(created.body.topic)).toBe(JSON.stringify(created.body.message));
    const done = await allDone(created.body.id, 2);
    for (const task of done.tasks)
      expect(task.history.map((h: any) => h.status)).toEqual(['pending', 'received', 'in progress', 'done']);
    expect(new Set(done.tasks.flatMap((task: any) => task.history.slice(1).map((h: any) => h.source)))).toEqual(
      new Set(['mqtt', 'http']),
    );
    for (const phone of phones)
      expect(phone.policies.state.apps['org.example.fieldapp']).toMatchObject({ packageId: pkg.id, versionCode: 42 });

    // A device enrolling later finds the fleet's policy (retained; on RabbitMQ given again when it is online).
    const late = await device(fleetName, 'mqtt');
    await allDone(created.body.id, 3);
    expect(late.policies.state.apps['org.example.fieldapp']?.sha256).toBe(pkg.sha256);

    const removed = await t.admin('DELETE', `/deployments/${created.body.id}`);
    expect(removed.body.removal).toMatchObject({ policy: 'removeApp', total: 3 });
    await allDone(removed.body.removal.id, 3);
    for (const phone of [...phones, late]) expect(phone.policies.state.apps['org.example.fieldapp']).toBeUndefined();
    await eventually(async () => (await t.backend.broker.retained(created.body.topic)) === null);
  });

  it("deployments to one device: rc.6 reports under its own policy topic are taken in; another device's report is refused", async () => {
    const fleetName = `Single ${mode}`;
    await t.admin('POST', '/fleets', { name: fleetName });
    const phone = await device(fleetName, 'mqtt-policy-topic');
    const other = await enrollAgent(t, { fleet: fleetName });
    const upload = await fetch(`${t.backend.info.admin_url}/api/files?name=${mode}-single.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
      body: Buffer.from(`for one device on ${mode}`),
    });
    const file = (await upload.json()) as { id: number };
    const created = (
      await t.admin('POST', '/deployments', { kind: 'file', item_id: file.id, agent_id: Number(phone.enrollment.agentId) })
    ).body;
    expect(created.topic).toMatch(/\/agent\/[^/]+\/Policy\/deployFile\/Task\/\d+$/);
    const done = await allDone(created.id, 1);
    expect(done.tasks[0].history.slice(1).every((h: any) => h.source === 'mqtt')).toBe(true);

    // Another agent reporting on this task, on its own topic: refused and noted, the task unchanged.
    const client = await connectAgent(t, other);
    await client.publishAsync(
      `${other.topic}/Status/Task/${created.id}`,
      JSON.stringify({ status: 'failed', reason: 'forged' }),
      { qos: 1 },
    );
    await eventually(
      async () => (await t.backend.services.events.forAgent(other.id)).some((e) => e.type === 'task.report_refused'),
      15_000,
    );
    expect((await deploymentOf(created.id)).tasks[0]).toMatchObject({ status: 'done' });
  });

  it('enrollment and downloads work as an agent does them', async () => {
    const upload = await fetch(`${t.backend.info.admin_url}/api/files?name=${mode}.bin`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
      body: Buffer.alloc(50_000, 7),
    });
    const file = (await upload.json()) as { id: number };
    const email = `${mode}-dl@example.com`;
    const { body } = await t.admin('POST', '/invitations', { email, send_email: false });
    const result = await runAgent({ deeplink: body.deeplink, email, downloads: [`file:${file.id}`] });
    expect(result.ok).toBe(true);
    expect(result.mqtt).toMatchObject({ port: t.backend.info.mqtt_port });
    const client = await connectAgent(t, { serial: result.mqtt.username, password: result.mqtt.password });
    expect(client.connected).toBe(true);
  });
});
