// Each node's own MQTT connection to an external broker: connects with back-off (rotating over a
// cluster's hosts), reports why it cannot, publishes the backend's commands and policies, and follows
// presence in memory (which agents this node may send a live command to). What agents report is
// read once across nodes, by the ingest session (ingest.ts). Shared by the Mosquitto and RabbitMQ modes.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { unlessDiskFull } from '../db/disk-full.ts';
import { ApiError } from '../errors.ts';
import { BACKEND_TOPIC_RULES, MANIFEST_TOPICS, policyStatusTaskId, statusTaskId, type AgentIdentity } from './acl.ts';
import type { AgentCommands } from './commands.ts';
import { MANIFEST_VERSION } from './manifest.ts';
import { onlineFlag } from './presence.ts';
import type { LiveReports, TaskReportHandler } from './port.ts';
import type { RetainedPolicies } from './retained-policies.ts';
import type { BrokerAgentRow, BrokerAgentStore } from '../agents/broker-repository.ts';
import { MAY_CONNECT } from '../agents/status.ts';
import type { BrokerUrl } from './broker-url.ts';

/** What the backend reads: every agent's reports (the ingest session, ingest.ts). */
export const BACKEND_SUBSCRIPTIONS = BACKEND_TOPIC_RULES.subscribeExact;
export const ONLINE_SUBTOPIC = 'Status/Online';
/** What every node's link reads: presence, and the answers to the pings that check it. */
const PRESENCE_SUBSCRIPTIONS = ['/+/agent/+/Status/Online', '/+/agent/+/Status/Ping'];
export const BACKOFF = { firstMs: 500, maxMs: 30_000 };
/** CONNACK return codes of a refused login (MQTT 3.1.1): bad user name or password, not authorized. */
const REFUSED_LOGIN = [4, 5];
/** A publish not acknowledged in this time is left to the client's own queue; the caller goes on. */
const PUBLISH_WAIT_MS = 10_000;
/** Listing retained messages: done once none came for this long after the SUBACK (the broker sends them at once). */
const RETAINED_QUIET_MS = 500;
const RETAINED_MAX_MS = 5_000;

/** What a backend connection to the external broker needs (this link, and the ingest session). */
export interface BrokerLinkBasics {
  url: BrokerUrl;
  /** The account the connection logs in with (the URL's, or one the backend made for itself). */
  credentials: () => { username: string; password: string };
  clientId: string;
  caFile?: string | undefined;
  events: EventLog;
  work: UnitOfWork;
  store: BrokerAgentStore;
}

export interface ExternalLinkOptions extends BrokerLinkBasics {
  /** Runs on every (re)connection before anything else: reconcile, then publish what was missed. */
  onConnected: () => Promise<void>;
  /** The broker refused the link's login (bad user name or password, not authorized). */
  onRefused?: () => Promise<void>;
  /** What the broker is called in messages ("Mosquitto", "RabbitMQ"). */
  name: string;
}

/**
 * Presence on an external broker comes from what travels on the wire: the agent's
 * `T/Status/Online` and its will. The backend sees no connections of its own. Every node follows
 * it here, in memory; the database hears it from the ingest session.
 */
export class ExternalLink {
  private client: MqttClient | null = null;
  private readonly options: ExternalLinkOptions;
  private readonly online = new Set<number>();
  /** Agents whose retained "online" we found: asked with a ping, online once they answer live. */
  private readonly verifying = new Set<number>();
  private failures = 0;
  private problem: string | null = 'connecting';
  private closed = false;
  private reported = false;

  constructor(options: ExternalLinkOptions) {
    this.options = options;
  }

  get connected(): boolean {
    return this.client?.connected === true && this.problem === null;
  }

  get lastProblem(): string | null {
    return this.problem;
  }

  onlineAgents(): number {
    return this.online.size;
  }

  isOnline(agentId: number): boolean {
    return this.connected && this.online.has(agentId);
  }

  start(): void {
    const { url } = this.options;
    const { username, password } = this.options.credentials();
    const options = brokerClientOptions(url, { username, password }, this.options.clientId, this.options.caFile);
    const client = mqtt.connect(options);
    this.client = client;
    // On a full disk, what these handlers record is dropped (unlessDiskFull), not the process ended.
    client.on(
      'connect',
      () =>
        void this.connectedNow(client).catch((error: unknown) =>
          unlessDiskFull(() => {
            throw error;
          }),
        ),
    );
    client.on('error', (error) => {
      unlessDiskFull(() => this.trouble(error.message));
      if (REFUSED_LOGIN.includes((error as { code?: unknown }).code as number)) void this.options.onRefused?.().catch(() => {}); // the next attempt tells
    });
    client.on('close', () => {
      if (this.closed) return;
      if (this.problem === null) unlessDiskFull(() => this.trouble('connection lost'));
      // Exponential back-off: mqtt.js reads the period each time it schedules a reconnection.
      this.failures += 1;
      client.options.reconnectPeriod = Math.min(BACKOFF.maxMs, BACKOFF.firstMs * 2 ** Math.min(this.failures, 10));
      // The account may have been re-created with a new password meanwhile.
      const fresh = this.options.credentials();
      client.options.username = fresh.username;
      client.options.password = fresh.password;
    });
    client.on('message', (topic, payload, packet) => unlessDiskFull(() => this.message(topic, payload, packet.retain)));
  }

  /**
   * Publishes with the backend's rights. Retained messages for an unreachable broker are not
   * queued: the records hold them and they are published again on reconnection.
   */
  async publish(topic: string, payload: string | Buffer, retain: boolean): Promise<void> {
    const client = this.client;
    if (!client || !client.connected) {
      if (retain) return;
      throw new ApiError(
        503,
        'ERROR_BROKER_UNAVAILABLE',
        `The ${this.options.name} broker is unreachable (${this.problem ?? 'disconnected'}); try again when it is back`,
      );
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      client.publishAsync(topic, payload, { qos: 1, retain }),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, PUBLISH_WAIT_MS))),
    ]).finally(() => clearTimeout(timer));
  }

  /** A one-off subscription to read the retained message of `topic`, or null. */
  async retained(topic: string): Promise<string | null> {
    const client = this.client;
    if (!client?.connected) return null;
    return new Promise((resolve) => {
      const onMessage = (received: string, payload: Buffer, packet: { retain: boolean }) => {
        if (received !== topic || !packet.retain) return;
        finish(payload.length === 0 ? null : payload.toString('utf8'));
      };
      const timer = setTimeout(() => finish(null), 1_000);
      const finish = (value: string | null) => {
        clearTimeout(timer);
        client.off('message', onMessage);
        void client.unsubscribeAsync(topic).catch(() => {});
        resolve(value);
      };
      client.on('message', onMessage);
      client.subscribeAsync(topic, { qos: 1 }).catch(() => finish(null));
    });
  }

  /**
   * The topics under `prefix/` on which the broker keeps a retained message: a one-off subscription
   * to `prefix/#`, read until no retained message came for RETAINED_QUIET_MS (at most RETAINED_MAX_MS).
   */
  async retainedTopicsUnder(prefix: string): Promise<string[]> {
    const client = this.client;
    if (!client?.connected) return [];
    const filter = `${prefix}/#`;
    const found = new Set<string>();
    return new Promise((resolve) => {
      let quiet: NodeJS.Timeout | undefined;
      const settle = () => {
        clearTimeout(quiet);
        quiet = setTimeout(finish, RETAINED_QUIET_MS);
      };
      const onMessage = (received: string, payload: Buffer, packet: { retain: boolean }) => {
        if (!received.startsWith(`${prefix}/`) || !packet.retain) return;
        if (payload.length > 0) found.add(received);
        settle();
      };
      const longest = setTimeout(() => finish(), RETAINED_MAX_MS);
      const finish = () => {
        clearTimeout(quiet);
        clearTimeout(longest);
        client.off('message', onMessage);
        void client.unsubscribeAsync(filter).catch(() => {});
        resolve([...found]);
      };
      client.on('message', onMessage);
      client.subscribeAsync(filter, { qos: 1 }).then(settle, () => finish());
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = null;
    if (client) await client.endAsync(true).catch(() => {});
  }

  private async connectedNow(client: MqttClient): Promise<void> {
    try {
      await this.options.onConnected();
      const granted = await client.subscribeAsync(PRESENCE_SUBSCRIPTIONS, { qos: 0 });
      const refused = granted.filter((grant) => grant.qos === 128);
      if (refused.length > 0) throw new Error(`subscription to ${refused.map((grant) => grant.topic).join(', ')} refused`);
    } catch (error) {
      await this.trouble(`set-up failed: ${(error as Error).message}`);
      client.end(true, () => {
        if (!this.closed) client.reconnect();
      });
      return;
    }
    const was = this.problem;
    this.problem = null;
    this.failures = 0;
    client.options.reconnectPeriod = BACKOFF.firstMs;
    this.reported = false;
    await this.options.events.record(
      'broker.connected',
      `Connected to the ${this.options.name} broker ${this.options.url.display}${was && was !== 'connecting' ? ` (after: ${was})` : ''}`,
      {},
      { url: this.options.url.display },
    );
  }

  private async trouble(why: string): Promise<void> {
    if (this.closed) return;
    const first = this.problem === null || this.problem === 'connecting';
    this.problem = why;
    // Presence is unknown while the link is down; agents will say "online" again on reconnection.
    this.markAllOffline();
    if (first || !this.reported) {
      this.reported = true;
      await this.options.events.record(
        'broker.unreachable',
        `The ${this.options.name} broker ${this.options.url.display} is unreachable: ${why}; retrying with back-off`,
        {},
        { url: this.options.url.display, reason: why },
      );
    }
  }

  private markAllOffline(): void {
    this.verifying.clear();
    this.online.clear();
  }

  /**
   * `retained`: delivered because the broker kept it (our subscription is new), not because the
   * agent sent it now. Such a message says what an agent once said, maybe before a backend
   * restart, maybe from a connection long gone: never presence, never a sign of life. A retained
   * "online" is checked with a ping instead: the agent is online once it answers.
   */
  private async message(topic: string, payload: Buffer, retained: boolean): Promise<void> {
    const found = await agentOfTopic(this.options.store, topic);
    if (!found) return;
    const { agent, subtopic } = found;
    if (subtopic === ONLINE_SUBTOPIC) {
      const flag = onlineFlag(payload);
      if (flag === null) return;
      if (retained) {
        // Maybe an agent that left without its will, maybe one that said so just before our
        // subscription: a ping tells (its live answer makes it online, below).
        if (flag && !this.online.has(agent.id)) this.verify(agent);
        return;
      }
      this.verifying.delete(agent.id);
      this.setPresence(agent, flag);
      return;
    }
    // Anything it publishes now proves a live connection: the answer to a ping, typically.
    if (!retained && this.verifying.delete(agent.id)) this.setPresence(agent, true);
  }

  /** Asks an agent whose only sign is a retained "online" for a live answer. */
  private verify(agent: AgentIdentity): void {
    if (this.verifying.size >= 100_000) this.verifying.clear();
    this.verifying.add(agent.id);
    this.publish(`${agent.topic}/Command/Ping`, JSON.stringify({ query: 'Ping' }), false).catch(() => {
      // Unreachable now: the agent says "online" again at its next connection.
    });
  }

  /** Presence as this link heard it, or as the ingest session (ingest.ts) on this node did. */
  setPresence(agent: Pick<AgentIdentity, 'id'>, online: boolean): void {
    if (online) this.online.add(agent.id);
    else this.online.delete(agent.id);
  }

  /** An agent that must not be connected any more: its presence ends now. */
  async forget(agentId: number): Promise<void> {
    this.verifying.delete(agentId);
    if (!this.online.delete(agentId)) return;
    await this.options.store.setPresence(agentId, false, nowIso());
  }
}

/** The agent a report's topic names (`/<entity>/agent/<login>/<subtopic>`), if it may be connected. */
export async function agentOfTopic(
  store: BrokerAgentStore,
  topic: string,
): Promise<{ agent: AgentIdentity; row: BrokerAgentRow; subtopic: string } | null> {
  const match = /^\/(\d+)\/agent\/([^/]+)\/(.+)$/.exec(topic);
  if (!match) return null;
  const [, entity, login, subtopic] = match;
  const row = (await store.byLogin(login!)).find(
    (candidate) => candidate.entity_id === Number(entity) && MAY_CONNECT.includes(candidate.enroll_status),
  );
  return row ? { agent: identityOf(row), row, subtopic: subtopic! } : null;
}

/** A client id for one of this backend's connections: unique per node, even for two backends in one process. */
export function nodeClientId(prefix: string): string {
  return `${prefix}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/** mqtt.js options for a broker URL: every host of a cluster in turn, back-off from the first period. */
export function brokerClientOptions(
  url: BrokerUrl,
  account: { username: string; password: string },
  clientId: string,
  caFile: string | undefined,
): IClientOptions {
  const protocol = url.tls ? ('mqtts' as const) : ('mqtt' as const);
  return {
    protocol,
    servers: url.servers.map((server) => ({ host: server.host, port: server.port, protocol })),
    host: url.servers[0]!.host,
    port: url.servers[0]!.port,
    username: account.username,
    password: account.password,
    clientId,
    protocolVersion: 4,
    clean: true,
    reconnectPeriod: BACKOFF.firstMs,
    connectTimeout: 10_000,
    keepalive: 30,
    ...(caFile ? { ca: readFileSync(caFile) } : {}),
  };
}

/**
 * Pings and presence reported over HTTP, on an external broker: a pong answers the pending ping;
 * `is_online` is a sign of life (presence is what the agent says on MQTT).
 */
export function externalLiveReports(store: BrokerAgentStore, commands: AgentCommands): LiveReports {
  return {
    pong: async (agentId) => {
      const row = await store.byId(agentId);
      if (row) await commands.received(identityOf(row), 'Status/Ping', Buffer.from('!'), 'http');
    },
    online: (agentId) => store.touch(agentId, nowIso()),
  };
}

/**
 * What every (re)connection of the backend publishes: the records' pending commands, each agent's
 * fleet topic (Command/Subscribe), the live policies, the manifest's version.
 */
export async function announceOnConnect(
  commands: AgentCommands,
  policies: RetainedPolicies,
  publish: (topic: string, payload: string, retain: boolean) => Promise<void>,
): Promise<void> {
  await commands.restoreRetained();
  await commands.restoreSubscriptions();
  await policies.restoreAll();
  for (const manifest of MANIFEST_TOPICS)
    await publish(`${manifest}/Status/Version`, JSON.stringify({ version: MANIFEST_VERSION }), true);
}

/**
 * An agent's report read on the backend's link: task reports (`T/Status/Task/<id>`, rc.6's under
 * the agent's own policy topic) go to deployments, the rest to commands. The topic names the agent
 * and the broker lets only that agent publish under it, so a report is always the device's own.
 */
export function routeReport(commands: AgentCommands, onTaskReport: TaskReportHandler | undefined) {
  return async (agent: AgentIdentity, subtopic: string, payload: Buffer): Promise<void> => {
    const topic = `${agent.topic}/${subtopic}`;
    const taskId = statusTaskId(agent, topic) ?? policyStatusTaskId(agent, topic);
    if (taskId !== null) {
      await onTaskReport?.(agent, taskId, payload);
      return;
    }
    // Other messages under the policy topic are not reports: never taken for one.
    if (subtopic.startsWith('Policy/')) return;
    await commands.received(agent, subtopic, payload);
  };
}

export function identityOf(row: BrokerAgentRow): AgentIdentity {
  return { id: row.id, entityId: row.entity_id, fleetId: row.fleet_id, topic: row.topic, name: row.name };
}
