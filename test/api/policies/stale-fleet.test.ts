// A new fleet starts clean: whatever a broker still retains under its policy topic from an earlier
// fleet of the same id (a database restored from an older backup, a data dir started afresh against
// a Mosquitto that persists its retained messages) is cleared, so no stale policy reaches its
// devices. And the default fleet takes policies (the reference refuses them): its devices are told
// to subscribe to it like any fleet's. Embedded broker and a real Mosquitto; an agent's own MQTT
// client is the witness.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { BROKER_MODES_UNDER_TEST, brokerReady, startMosquitto, type MosquittoProcess } from '../../helpers/external-brokers.ts';
import { closeClients, connectAgent, enrollAgent, eventually, inbox } from '../../helpers/mqtt.ts';

// Not RabbitMQ: its MQTT plugin delivers retained messages only to subscriptions without wildcards,
// so the agents' `<fleet topic>/#` never receives a stale one there (nor can the backend list them);
// the backend publishes what an agent must find when it says it is online (docs/brokers.md).
const MODES = BROKER_MODES_UNDER_TEST.filter((mode) => mode !== 'rabbitmq');

describe.each(MODES)('fleet policy topics on the %s broker', (mode) => {
  let t: TestBackend;
  let mosquitto: MosquittoProcess | undefined;
  beforeAll(async () => {
    if (mode === 'mosquitto') {
      mosquitto = await startMosquitto();
      t = await startTestBackend({ mqttBroker: 'mosquitto', mqttBrokerUrl: mosquitto.adminUrl });
    } else t = await startTestBackend();
    await brokerReady(t.backend);
  }, 120_000);
  afterAll(async () => {
    await closeClients();
    await t?.stop();
    await mosquitto?.destroy();
  });

  it('clears every stale retained policy under its topic, and keeps the policies set on it since', async () => {
    const { id } = t.db.prepare('SELECT coalesce(max(id), 0) + 1 AS id FROM fleets').get() as { id: number };
    const base = `/1/fleet/${id}/Policy`;
    // What an earlier fleet #id left retained: the reference's task topics, and the bare symbol topic.
    const stale = {
      [`${base}/disableCamera/Task/901`]: '{"disableCamera":"true","taskId":901}',
      [`${base}/deployApp/Task/902`]: '{"deployApp":"org.example.old","id":7,"versionCode":1,"taskId":902}',
      [`${base}/passwordMinLength`]: '{"passwordMinLength":12,"taskId":903}',
    };
    for (const [topic, payload] of Object.entries(stale)) await t.backend.broker.publish(topic, payload, { retain: true });
    for (const topic of Object.keys(stale)) await eventually(async () => (await t.backend.broker.retained(topic)) !== null);

    const created = await t.admin('POST', '/fleets', { name: `Fresh ${mode}` });
    expect(created.body.id).toBe(id);
    // A policy set at once on the new fleet is its own: never taken for a stale one.
    const wifi = await t.admin('POST', '/policy-assignments', { policy: 'disableWifi', value: true, fleet_id: id });
    expect(wifi.status).toBe(201);

    for (const topic of Object.keys(stale))
      await eventually(async () => (await t.backend.broker.retained(topic)) === null, 10_000);

    // A device of the new fleet, subscribed as the Flyve agent is, gets its fleet's policy and nothing stale.
    const agent = await enrollAgent(t, { fleet: `Fresh ${mode}` });
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    await client.subscribeAsync([`${agent.topic}/#`, `/1/fleet/${id}/#`], { qos: 1 });
    const own = await box.next((m) => m.topic === wifi.body.topic);
    expect([own.text, own.retain]).toEqual([`{"disableWifi":"true","taskId":${wifi.body.id}}`, true]);
    expect(await t.backend.broker.retained(wifi.body.topic)).toBe(own.text);
    expect(box.messages.filter((m) => m.topic.startsWith(`${base}/`) && m.text !== '' && m.topic !== wifi.body.topic)).toEqual(
      [],
    );
  });
  it('the default fleet takes policies: its devices are told its topic (Command/Subscribe) and get them there', async () => {
    const agent = await enrollAgent(t);
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    await client.subscribeAsync([`${agent.topic}/#`], { qos: 1 });
    const told = await box.next((m) => m.topic === `${agent.topic}/Command/Subscribe`);
    expect(JSON.parse(told.text)).toEqual({ subscribe: [{ topic: '/1/fleet/1' }] });
    const bluetooth = await t.admin('POST', '/policy-assignments', {
      policy: 'disableBluetooth',
      value: true,
      fleet: 'Default fleet',
    });
    expect(bluetooth.status).toBe(201);
    expect(bluetooth.body.topic).toBe(`/1/fleet/1/Policy/disableBluetooth/Task/${bluetooth.body.id}`);
    await client.subscribeAsync([`${JSON.parse(told.text).subscribe[0].topic}/#`], { qos: 1 });
    expect((await box.next((m) => m.topic === bluetooth.body.topic)).text).toBe(
      `{"disableBluetooth":"true","taskId":${bluetooth.body.id}}`,
    );
    expect((await t.admin('DELETE', `/policy-assignments/${bluetooth.body.id}`)).status).toBe(200);
  });
});
