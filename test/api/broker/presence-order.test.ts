// Presence under bursts: an agent's online and offline are saved in groups (many agents' changes in
// one transaction), yet each agent's changes keep their order. A login closed before its CONNACK,
// connections of the same agent racing each other and a quick reconnect end in the state the
// connections say, in the database and in the tracker's memory (whose next decision shows it).
import { connect as tcpConnect } from 'node:net';
import mqttPacket from 'mqtt-packet';
import { describe, expect, it } from 'vitest';
import type { TestBackend } from '../../helpers/backend.ts';
import { agentRow, connectAgent, enrollAgent, eventually, type EnrolledAgent, useBrokerBackend } from '../../helpers/mqtt.ts';

let t: TestBackend;

useBrokerBackend((backend) => {
  t = backend;
});

/** CONNECT, then at once DISCONNECT and the socket's end: the client never waits for its CONNACK. */
function connectAndLeave(agent: EnrolledAgent, waitMs: number): Promise<void> {
  const connectPacket = mqttPacket.generate({
    cmd: 'connect',
    protocolId: 'MQTT',
    protocolVersion: 4,
    clean: true,
    clientId: agent.serial,
    keepalive: 60,
    username: agent.serial,
    password: Buffer.from(agent.password),
  });
  const disconnect = mqttPacket.generate({ cmd: 'disconnect' });
  return new Promise((resolve) => {
    const socket = tcpConnect(t.backend.info.mqtt_port, '127.0.0.1', () => {
      socket.write(connectPacket);
      const leave = () => {
        socket.end(disconnect);
      };
      if (waitMs === 0) leave();
      else setTimeout(leave, waitMs);
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve());
    socket.resume();
  });
}

/** The agent's presence events, oldest first. */
async function presenceEvents(agent: EnrolledAgent): Promise<string[]> {
  const events = await t.backend.services.events.forAgent(agent.id, 1000);
  return events
    .filter((event) => event.type === 'agent.online' || event.type === 'agent.offline')
    .sort((a, b) => a.id - b.id)
    .map((event) => event.type);
}

/** Online and offline alternate, starting with online: no change lost, none doubled, none reordered. */
function alternates(types: string[]): boolean {
  return types.every((type, i) => type === (i % 2 === 0 ? 'agent.online' : 'agent.offline'));
}

describe('presence under bursts of the same agents', () => {
  it('ends offline after logins closed right after their CONNECT, and the next login is online', async () => {
    const agents: EnrolledAgent[] = [];
    for (let i = 0; i < 8; i += 1) agents.push(await enrollAgent(t));
    // Each agent: rounds of connections that leave at once or a few ms later (some while the
    // "online" of an earlier one is being written), several of the same agent at a time.
    for (let round = 0; round < 4; round += 1) {
      await Promise.all(agents.flatMap((agent) => [0, 1, 2, 5].map((wait) => connectAndLeave(agent, (wait + round) % 6))));
    }
    for (const agent of agents) {
      await eventually(
        async () => (await agentRow(t, agent.id)).is_online === 0 && (await presenceEvents(agent)).at(-1) !== 'agent.online',
      );
      const types = await presenceEvents(agent);
      expect(alternates(types), types.join(' ')).toBe(true);
    }
    // Memory agrees with the database: a login now is a change (online), its end another (offline).
    for (const agent of agents) {
      const client = await connectAgent(t, agent);
      expect((await agentRow(t, agent.id)).is_online).toBe(1);
      await client.endAsync();
      await eventually(async () => (await agentRow(t, agent.id)).is_online === 0);
      const types = await presenceEvents(agent);
      expect(alternates(types), types.join(' ')).toBe(true);
      expect(types.slice(-2)).toEqual(['agent.online', 'agent.offline']);
    }
  });

  it('ends online after quick reconnects, and offline once the last connection ends', async () => {
    const agents: EnrolledAgent[] = [];
    for (let i = 0; i < 6; i += 1) agents.push(await enrollAgent(t));
    const last = await Promise.all(
      agents.map(async (agent) => {
        let client = await connectAgent(t, agent);
        for (let round = 0; round < 5; round += 1) {
          // Dropped and replaced at once: the offline of the old one and the online of the new race.
          client.end(true);
          client = await connectAgent(t, agent);
        }
        return client;
      }),
    );
    for (const agent of agents) {
      await eventually(async () => (await presenceEvents(agent)).at(-1) === 'agent.online');
      expect((await agentRow(t, agent.id)).is_online).toBe(1);
      const types = await presenceEvents(agent);
      expect(alternates(types), types.join(' ')).toBe(true);
    }
    await Promise.all(last.map((client) => client.endAsync()));
    for (const agent of agents) {
      await eventually(async () => (await agentRow(t, agent.id)).is_online === 0);
      const types = await presenceEvents(agent);
      expect(alternates(types), types.join(' ')).toBe(true);
      expect(types.at(-1)).toBe('agent.offline');
    }
  });
});
