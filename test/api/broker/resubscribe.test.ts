// Agents that reconnect without subscribing (released Flyve agents after a broker restart: Paho's
// automatic reconnect, clean session, no SUBSCRIBE) are subscribed by the broker; agents that
// subscribe themselves are left alone, and nobody gets a retained command twice.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MqttClient } from 'mqtt';
import { describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import {
  agentRow,
  closeClients,
  connectAgent,
  enrollAgent,
  inbox,
  nextEvent,
  ofAgent,
  type EnrolledAgent,
  useBrokerBackend,
} from '../../helpers/mqtt.ts';
import { DEFAULT_RESUBSCRIBE_GRACE_MS } from '../../../src-main/backend/broker/resubscribe.ts';

/** Answers pings the way the agents do (`T/Status/Ping` `!`). */
function answerPings(client: MqttClient, agent: EnrolledAgent) {
  client.on('message', (topic) => {
    if (topic === `${agent.topic}/Command/Ping`)
      void client.publishAsync(`${agent.topic}/Status/Ping`, '!', { qos: 0 }).catch(() => {});
  });
}

describe('an agent that reconnects without subscribing after a broker restart', () => {
  it('is subscribed by the broker: it answers a ping and receives a lock, once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-resubscribe-'));
    let backend = await startTestBackend({ dataDir });
    try {
      const agent = await enrollAgent(backend);
      // Like Flyve's MqttModel over Paho: subscribes once, in its own connect's success callback;
      // the automatic reconnect (clean session) does not subscribe again.
      const client = await connectAgent(backend, agent, { reconnectPeriod: 200, resubscribe: false, clean: true });
      const box = inbox(client);
      answerPings(client, agent);
      await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 0 }, 'FlyvemdmManifest/Status/Version': { qos: 0 } });
      const isManifest = (m: { topic: string }) => m.topic === 'FlyvemdmManifest/Status/Version';
      // The retained copy follows the SUBACK: let it arrive before the broker goes away.
      await box.next(isManifest);
      await client.publishAsync(`${agent.topic}/Status/Online`, '{"online": true}', { qos: 0, retain: true });

      const ports = { mqttPort: backend.backend.info.mqtt_port, mqttTlsPort: backend.backend.info.mqtt_tls_port };
      const lost = new Promise<void>((resolve) => client.once('close', () => resolve()));
      await backend.stop();
      await lost;
      backend = await startTestBackend({ dataDir, ...ports });
      const online = nextEvent(backend, ofAgent(agent.id, 'agent.online'), 20_000);
      const resubscribed = nextEvent(backend, ofAgent(agent.id, 'mqtt.resubscribed'), 20_000);
      await new Promise<void>((resolve) => client.once('connect', () => resolve()));
      await client.publishAsync(`${agent.topic}/Status/Online`, '{"online": true}', { qos: 0, retain: true });
      await online;
      expect((await agentRow(backend, agent.id)).is_online).toBe(1);

      const subscribed = await resubscribed;
      const fleet = (await agentRow(backend, agent.id)) as unknown as { entity_id: number; fleet_id: number };
      expect((subscribed.data as { filters: string[] }).filters).toEqual([
        `${agent.topic}/#`,
        `/${fleet.entity_id}/fleet/${fleet.fleet_id}/#`,
        'FlyvemdmManifest/Status/Version',
      ]);

      const reply = nextEvent(backend, ofAgent(agent.id, 'agent.ping_reply'));
      expect((await backend.admin('POST', `/agents/${agent.id}/commands`, { command: 'ping' })).status).toBe(202);
      expect((await reply).message).toMatch(/answered the ping/);

      expect((await backend.admin('POST', `/agents/${agent.id}/commands`, { command: 'lock' })).status).toBe(202);
      await box.next((m) => m.topic === `${agent.topic}/Command/Lock` && m.text === '{"lock":"now"}');
      // The retained manifest version: once from the agent's own subscription, once from the broker's after the restart.
      await box.next((m) => isManifest(m) && box.messages.filter(isManifest).length >= 2);
      expect(box.messages.filter(isManifest).map((m) => m.retain)).toEqual([true, true]);
    } finally {
      await closeClients();
      await backend.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('retained commands', () => {
  let t: TestBackend;
  useBrokerBackend((backend) => {
    t = backend;
  });

  const lockMessages = (box: ReturnType<typeof inbox>, agent: EnrolledAgent) =>
    box.messages.filter((m) => m.topic === `${agent.topic}/Command/Lock`);

  it('reach an agent that subscribes only after the broker did, once', async () => {
    const agent = await enrollAgent(t);
    expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'lock' })).status).toBe(202);
    const resubscribed = nextEvent(t, ofAgent(agent.id, 'mqtt.resubscribed'), 20_000);
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    answerPings(client, agent);
    await resubscribed;
    expect((await box.next((m) => m.topic === `${agent.topic}/Command/Lock`)).retain).toBe(true);

    // Its own late SUBSCRIBE would replay the retained lock: the broker does not send it again.
    await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
    // A round trip after the SUBACK: any replay would have been written before the ping.
    const reply = nextEvent(t, ofAgent(agent.id, 'agent.ping_reply'));
    await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'ping' });
    await reply;
    expect(lockMessages(box, agent)).toHaveLength(1);

    // A new lock state still arrives.
    await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'unlock' });
    await box.next((m) => m.text === '{"lock":"unlock"}');
    expect(lockMessages(box, agent).map((m) => m.text)).toEqual(['{"lock":"now"}', '{"lock":"unlock"}']);
    await closeClients();
  });

  it('reach an agent that subscribes itself once, and the broker never subscribes it', async () => {
    const agent = await enrollAgent(t);
    expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'lock' })).status).toBe(202);
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    const row = (await agentRow(t, agent.id)) as unknown as { entity_id: number; fleet_id: number };
    // Its own topic and its fleet's, as a working agent does.
    await client.subscribeAsync({
      [`${agent.topic}/#`]: { qos: 1 },
      [`/${row.entity_id}/fleet/${row.fleet_id}/#`]: { qos: 1 },
    });
    await box.next((m) => m.topic === `${agent.topic}/Command/Lock`);
    // Past the grace period, the broker has left it alone.
    await new Promise((resolve) => setTimeout(resolve, DEFAULT_RESUBSCRIBE_GRACE_MS + 1_000));
    expect((await t.backend.services.events.forAgent(agent.id)).map((e) => e.type)).not.toContain('mqtt.resubscribed');
    expect(lockMessages(box, agent)).toHaveLength(1);
    expect(box.messages.filter((m) => m.topic === 'FlyvemdmManifest/Status/Version')).toHaveLength(0);
    await closeClients();
  });
});

describe('an agent that subscribes to its own topic but not to its fleet (release rc.7, first connection)', () => {
  let t: TestBackend;
  useBrokerBackend((backend) => {
    t = backend;
  });

  it("is subscribed to its fleet's topic by the broker: it gets the fleet's policies, once", async () => {
    const { body: fleet } = await t.admin('POST', '/fleets', { name: 'Forgetful phones' });
    const camera = await t.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: true, fleet_id: fleet.id });
    expect(camera.status).toBe(201);
    const agent = await enrollAgent(t, { fleet: 'Forgetful phones' });
    const fleetFilter = `/${fleet.entity_id}/fleet/${fleet.id}/#`;
    const policyTopic = `/${fleet.entity_id}/fleet/${fleet.id}/Policy/disableCamera/Task/${camera.body.id}`;
    const resubscribed = nextEvent(t, ofAgent(agent.id, 'mqtt.resubscribed'), 20_000);
    const client = await connectAgent(t, agent);
    const box = inbox(client);
    answerPings(client, agent);
    // rc.7: T/# and the manifest, then never the fleet topic its Command/Subscribe names.
    await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 0 }, 'FlyvemdmManifest/Status/Version': { qos: 0 } });
    await box.next((m) => m.topic === `${agent.topic}/Command/Subscribe`);

    const event = await resubscribed;
    expect((event.data as { filters: string[] }).filters).toEqual([fleetFilter]);
    expect(event.message).toMatch(/subscribed without its fleet's topic/);
    const policy = await box.next((m) => m.topic === policyTopic);
    expect(JSON.parse(policy.text)).toEqual({ disableCamera: 'true', taskId: camera.body.id });

    // Should it subscribe after all, the retained policy is not delivered a second time.
    await client.subscribeAsync({ [fleetFilter]: { qos: 0 } });
    const reply = nextEvent(t, ofAgent(agent.id, 'agent.ping_reply'));
    await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'ping' });
    await reply;
    expect(box.messages.filter((m) => m.topic === policyTopic)).toHaveLength(1);
    // Its own topic was left to it: the broker added only the fleet's.
    expect((await t.backend.services.events.forAgent(agent.id)).filter((e) => e.type === 'mqtt.resubscribed')).toHaveLength(1);
    await closeClients();
  });
});
