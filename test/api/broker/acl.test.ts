// Topic isolation exactly as DESIGN.md "MQTT" says, checked with mqtt.js and mosquitto clients.
import { describe, expect, it } from 'vitest';
import type { TestBackend } from '../../helpers/backend.ts';
import {
  connectAgent,
  enrollAgent,
  inbox,
  mosquittoLogin,
  nextEvent,
  ofAgent,
  run,
  type EnrolledAgent,
  useBrokerBackend,
  notFleetAnnouncement,
} from '../../helpers/mqtt.ts';

let t: TestBackend;
let a: EnrolledAgent;
let b: EnrolledAgent;

useBrokerBackend(async (backend) => {
  t = backend;
  a = await enrollAgent(t);
  b = await enrollAgent(t);
});

const granted = async (agent: EnrolledAgent, topic: string) => {
  const client = await connectAgent(t, agent, { clientId: `${agent.serial}-probe` });
  try {
    const [grant] = await client.subscribeAsync({ [topic]: { qos: 1 } });
    return grant?.qos;
  } catch (error) {
    // mqtt.js turns a refused subscription (SUBACK 0x80) into an error carrying the SUBACK.
    return (error as { packet?: { granted?: number[] } }).packet?.granted?.[0];
  } finally {
    await client.endAsync();
  }
};

/** Sends the backend's ping to `agent` and returns what its client received up to that ping. */
async function receivedUntilPing(agent: EnrolledAgent, box: ReturnType<typeof inbox>) {
  expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'ping' })).status).toBe(202);
  await box.next((m) => m.topic === `${agent.topic}/Command/Ping`);
  return box.messages.filter(notFleetAnnouncement).map((m) => m.topic);
}

describe('subscriptions', () => {
  it('allow the agent its own T/# and the topics it may receive', async () => {
    for (const topic of [
      `${a.topic}/#`,
      `${a.topic}/Command/#`,
      `${a.topic}/Policy/+`,
      'MdmManifest/#',
      `/1/fleet/${a.record.plugin_mdm_fleets_id}/#`,
    ]) {
      expect(await granted(a, topic), topic).toBe(1);
    }
  });

  it("refuse #, $SYS, wildcards over agents, another agent's topics and other fleets", async () => {
    for (const topic of [
      '#',
      '$SYS/#',
      '+/agent/#',
      '/1/agent/+/Command/#',
      `${b.topic}/#`,
      `${b.topic}/Command/Lock`,
      `${a.topic}/Status/#`,
      `${a.topic}/+`,
      '/1/fleet/999/#',
      'anything',
    ]) {
      expect(await granted(a, topic), topic).toBe(128);
    }
  });
});

describe('retained messages', () => {
  it('keep only the presence flag an agent retains, not topics of its own invention', async () => {
    const client = await connectAgent(t, a, { clientId: `${a.serial}-retain` });
    await client.publishAsync(`${a.topic}/Status/Scratch`, '{"apps": 12}', { qos: 1, retain: true });
    await client.publishAsync(`${a.topic}/Status/Online`, '{"online": true}', { qos: 1, retain: true });
    expect(await t.backend.broker.retained(`${a.topic}/Status/Scratch`)).toBeNull();
    expect(await t.backend.broker.retained(`${a.topic}/Status/Online`)).toBe('{"online": true}');
    await client.endAsync();
  });
});

describe('publishing and delivery', () => {
  it("drops (after acknowledging) what an agent publishes into another agent's topics", async () => {
    const clientB = await connectAgent(t, b);
    const boxB = inbox(clientB);
    await clientB.subscribeAsync({ [`${b.topic}/#`]: { qos: 1 } });

    const clientA = await connectAgent(t, a);
    const denied = nextEvent(t, ofAgent(a.id, 'mqtt.publish_denied'));
    // Acknowledged (MQTT-3.3.5-2) but delivered to nobody, retained nowhere.
    await clientA.publishAsync(`${b.topic}/Command/Lock`, '{"lock":"now"}', { qos: 1, retain: true });
    await clientA.publishAsync(`${b.topic}/Command/Unenroll`, '{"unenroll":"now"}', { qos: 1 });
    await clientA.publishAsync(`${b.topic}/Status/Online`, '{"online":false}', { qos: 1 });
    await clientA.publishAsync('MdmManifest/apps', 'forged', { qos: 1 });
    expect((await denied).data).toMatchObject({ topic: `${b.topic}/Command/Lock` });
    expect(clientA.connected).toBe(true);

    expect(await receivedUntilPing(b, boxB)).toEqual([`${b.topic}/Command/Ping`]);
    // Nothing was retained either: a fresh subscription of B gets no Lock.
    const late = await connectAgent(t, b, { clientId: `${b.serial}-late` });
    const lateBox = inbox(late);
    await late.subscribeAsync({ [`${b.topic}/#`]: { qos: 1 } });
    expect(await receivedUntilPing(b, lateBox)).toEqual([`${b.topic}/Command/Ping`]);
  });

  it('accepts its own Status and MdmManifest messages, and its T/# does not echo them back', async () => {
    const client = await connectAgent(t, a);
    const box = inbox(client);
    await client.subscribeAsync({ [`${a.topic}/#`]: { qos: 1 } });
    const status = nextEvent(
      t,
      (e) => ofAgent(a.id, 'agent.status')(e) && (e.data as { topic: string }).topic === 'Status/Inventory',
    );
    await client.publishAsync(`${a.topic}/Status/Inventory`, '{"battery":90}', { qos: 1 });
    expect((await status).data).toMatchObject({ payload: '{"battery":90}' });
    await client.publishAsync(`${a.topic}/MdmManifest/Report`, 'x', { qos: 1 });
    expect(await receivedUntilPing(a, box)).toEqual([`${a.topic}/Command/Ping`]);
  });

  it("delivers MdmManifest/#, the agent's Command/Policy topics and its fleet's topic, nothing else", async () => {
    const client = await connectAgent(t, a);
    const box = inbox(client);
    const fleet = `/1/fleet/${a.record.plugin_mdm_fleets_id}`;
    await client.subscribeAsync({ [`${a.topic}/#`]: { qos: 1 }, 'MdmManifest/#': { qos: 1 }, [`${fleet}/#`]: { qos: 1 } });
    const broker = t.backend.broker;
    await broker.publish(`${a.topic}/Policy/camera`, 'off');
    await broker.publish('MdmManifest/apps', 'manifest');
    await broker.publish(`${fleet}/apps`, 'fleet-app');
    await broker.publish(`${b.topic}/Command/Lock`, 'not for a');
    await broker.publish(`${a.topic}/Other/thing`, 'not receivable');
    const received = await receivedUntilPing(a, box);
    // The manifest's version message is retained: it arrives on subscribing, in no set order with the rest.
    expect(received).toContain('MdmManifest/Status/Version');
    expect(received.filter((topic) => topic !== 'MdmManifest/Status/Version')).toEqual([
      `${a.topic}/Policy/camera`,
      'MdmManifest/apps',
      `${fleet}/apps`,
      `${a.topic}/Command/Ping`,
    ]);
  });

  it('stops delivering the old fleet topic once the agent is moved, and delivers the new one', async () => {
    const agent = await enrollAgent(t);
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    const oldFleet = `/1/fleet/${agent.record.plugin_mdm_fleets_id}`;
    await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 }, [`${oldFleet}/#`]: { qos: 1 } });
    const created = await t.admin('POST', '/fleets', { name: `Isolated ${agent.serial}` });
    expect((await t.admin('PATCH', `/agents/${agent.id}`, { fleet_id: created.body.id })).status).toBe(200);
    await box.next((m) => m.topic === `${agent.topic}/Command/Subscribe`);
    const newFleet = `/1/fleet/${created.body.id}`;
    const [grant] = await client.subscribeAsync({ [`${newFleet}/#`]: { qos: 1 } });
    expect(grant?.qos).toBe(1);
    await t.backend.broker.publish(`${oldFleet}/apps`, 'old');
    await t.backend.broker.publish(`${newFleet}/apps`, 'new');
    expect(await receivedUntilPing(agent, box)).toEqual([
      `${agent.topic}/Command/Subscribe`,
      `${newFleet}/apps`,
      `${agent.topic}/Command/Ping`,
    ]);
  });
});

describe('with mosquitto clients', () => {
  it('refuses # and $SYS subscriptions', async () => {
    for (const topic of ['#', '$SYS/#']) {
      const result = await run('mosquitto_sub', [...mosquittoLogin(t, a), '-t', topic, '-W', '10']);
      expect(result.stderr, topic).toMatch(/All subscription requests were denied/);
    }
  });

  it("cannot read another agent's topic, nor write into it", async () => {
    const read = await run('mosquitto_sub', [...mosquittoLogin(t, a), '-t', `${b.topic}/#`, '-W', '10']);
    expect(read.stderr).toMatch(/All subscription requests were denied/);

    const clientB = await connectAgent(t, b);
    const boxB = inbox(clientB);
    await clientB.subscribeAsync({ [`${b.topic}/#`]: { qos: 1 } });
    const write = await run('mosquitto_pub', [
      ...mosquittoLogin(t, a),
      '-q',
      '1',
      '-t',
      `${b.topic}/Command/Wipe`,
      '-m',
      '{"wipe":"now"}',
    ]);
    expect(write.code).toBe(0); // acknowledged, then dropped
    expect(await receivedUntilPing(b, boxB)).toEqual([`${b.topic}/Command/Ping`]);
  });
});
