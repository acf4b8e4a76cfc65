// What agents report on an external broker, read once across nodes: one MQTT session with a fixed
// client id and clean = false, held by one node at a time (the `mqtt-ingest` duty). The broker keeps
// the session's subscriptions and queues its QoS 1 messages while no node holds it (the holder was
// killed, the duty is changing hands), and re-sends what the dead holder had not acknowledged: the
// next holder reads them all. A message is acknowledged only once it is handled (its transaction
// committed), one at a time, in the order the broker sent them.
//
// Here the database learns presence (is_online, last_contact, agent.online/offline), task reports,
// inventories, pings and unenrollments. Each node's own link (external-link.ts) follows presence in
// memory for its own decisions (a command to an offline device), from the same broker.
import mqtt, { type MqttClient } from 'mqtt';
import { nowIso } from '../db/database.ts';
import { unlessDiskFull } from '../db/disk-full.ts';
import type { AgentIdentity } from './acl.ts';
import {
  agentOfTopic,
  BACKEND_SUBSCRIPTIONS,
  brokerClientOptions,
  ONLINE_SUBTOPIC,
  type BrokerLinkBasics,
} from './external-link.ts';
import { onlineFlag } from './presence.ts';

/** `clientId` is the session's: the same on every node, so the broker keeps one session for all. */
export interface IngestOptions extends BrokerLinkBasics {
  /** An agent's report other than presence. */
  onReport: (agent: AgentIdentity, subtopic: string, payload: Buffer) => Promise<void>;
  /** What the database now says of an agent's presence (this node's link learns it at once). */
  onPresence?: (agent: AgentIdentity, online: boolean) => void;
  /** An agent said it is online, or proved it: time to give it what it must find. */
  onAgentOnline?: (agent: AgentIdentity) => Promise<void>;
  /** What the broker is called in messages ("Mosquitto", "RabbitMQ"). */
  name: string;
}

export class IngestSession {
  private readonly options: IngestOptions;
  private client: MqttClient | null = null;
  /** Agents this session pinged because it found only their retained "online": their answer is no report. */
  private readonly verifying = new Set<number>();
  private stopping = false;

  constructor(options: IngestOptions) {
    this.options = options;
  }

  get connected(): boolean {
    return this.client?.connected === true;
  }

  /**
   * Takes the session. Presence is derived afresh from here on (every agent offline until it says
   * otherwise, or answers the ping its retained "online" earns), as at a start; reports queued
   * meanwhile are delivered and handled first.
   */
  async start(): Promise<void> {
    this.stopping = false;
    await this.options.store.allOffline();
    const { username, password } = this.options.credentials();
    const client = mqtt.connect({
      ...brokerClientOptions(this.options.url, { username, password }, this.options.clientId, this.options.caFile),
      clean: false,
    });
    // Acknowledged once handled (mqtt.js sends the PUBACK when `done` is called, and reads the next
    // packet only then): a holder killed mid-way leaves the message to the next one.
    client.handleMessage = (packet, done) => {
      const { topic, payload, retain } = packet;
      // A message that cannot be handled (a full disk among others) is said, and not asked again.
      unlessDiskFull(() => this.message(topic, Buffer.from(payload), retain).finally(() => done()));
    };
    this.client = client;
    client.on('connect', () => {
      // The subscription is the session's (kept by the broker); made again at each connection so
      // the retained "online" messages come again, each to be checked by a ping.
      void client.subscribeAsync([...BACKEND_SUBSCRIPTIONS], { qos: 1 }).catch(() => {});
    });
    client.on('close', () => {
      if (this.stopping) return;
      this.verifying.clear();
      // Presence is unknown while the session is down: derived again at its next connection.
      void this.options.store.allOffline().catch(() => {});
    });
    client.on('error', () => {}); // the link (external-link.ts) reports the broker's troubles
  }

  /** Gives the session up, leaving it (and what the broker queues for it) to the next holder. */
  async stop(): Promise<void> {
    this.stopping = true;
    const client = this.client;
    this.client = null;
    if (client) await client.endAsync(true).catch(() => {});
    this.verifying.clear();
  }

  /**
   * `retained`: delivered because the broker kept it (our subscription is new), not because the
   * agent sent it now: never presence. A retained "online" is checked with a ping; any live message
   * proves a connection.
   */
  private async message(topic: string, payload: Buffer, retained: boolean): Promise<void> {
    const found = await agentOfTopic(this.options.store, topic);
    if (!found) return;
    const { agent, row, subtopic } = found;
    if (subtopic === ONLINE_SUBTOPIC) {
      const flag = onlineFlag(payload);
      if (flag === null) return;
      if (retained) {
        if (flag && !row.is_online) this.verify(agent);
        return;
      }
      this.verifying.delete(agent.id);
      await this.setPresence(agent, flag, row.is_online === 1);
      // Said after it subscribed (maybe to another node of a cluster): time to give it what it must find.
      if (flag) await this.options.onAgentOnline?.(agent);
      return;
    }
    if (retained) {
      await this.options.onReport(agent, subtopic, payload);
      return;
    }
    await this.options.store.touch(agent.id, nowIso());
    if (!row.is_online) {
      await this.setPresence(agent, true, false);
      await this.options.onAgentOnline?.(agent);
    } else this.options.onPresence?.(agent, true);
    if (this.verifying.delete(agent.id) && subtopic === 'Status/Ping') return; // the answer to our own ping
    await this.options.onReport(agent, subtopic, payload);
  }

  /** Asks an agent whose only sign is a retained "online" for a live answer. */
  private verify(agent: AgentIdentity): void {
    const client = this.client;
    if (!client?.connected) return;
    if (this.verifying.size >= 100_000) this.verifying.clear();
    this.verifying.add(agent.id);
    client.publish(`${agent.topic}/Command/Ping`, JSON.stringify({ query: 'Ping' }), { qos: 1 }, () => {});
  }

  private async setPresence(agent: AgentIdentity, online: boolean, was: boolean): Promise<void> {
    this.options.onPresence?.(agent, online);
    if (online === was) return;
    const at = nowIso();
    await this.options.work.run(async () => {
      await this.options.store.setPresence(agent.id, online, at);
      await this.options.events.record(
        online ? 'agent.online' : 'agent.offline',
        `${agent.name} ${online ? 'reported itself online' : 'is offline'} (${this.options.name})`,
        { entityId: agent.entityId, agentId: agent.id },
        {
          reason: online ? 'reported online' : 'reported offline or will',
          last_contact: at,
          broker: this.options.name,
        },
      );
    });
  }
}
