// The embedded broker: aedes with the hooks of ./aedes/ (authenticate, authorize, published, the
// client lifecycle), retained messages in an indexed persistence (retained-index.ts), presence,
// commands, and the agents' lifecycle (agent-accounts.ts). startBroker assembles them.
import { Aedes } from 'aedes';
import type { Sql } from '../db/sql.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { isClosedDatabase, unlessDiskFull } from '../db/disk-full.ts';
import type { DeviceReports } from '../agents/reports.ts';
import { MANIFEST_TOPICS, type AgentIdentity } from './acl.ts';
import type { BrokerAgentStore } from '../agents/broker-repository.ts';
import { followAgentLifecycle, type AgentAccounts } from './agent-accounts.ts';
import { authenticateHook, type AuthenticateHook } from './aedes/authenticate.ts';
import { authorizeHooks } from './aedes/authorize.ts';
import { ClientLifecycle } from './aedes/client-lifecycle.ts';
import { startListeners, type Listeners } from './aedes/listeners.ts';
import type { ConnectionShare } from './connection-cap.ts';
import { publishedHook } from './aedes/published.ts';
import type { ThrottleOptions } from './auth-throttle.ts';
import { AgentCommands, type Publisher } from './commands.ts';
import { ConnectionRegistry } from './connections.ts';
import { PresenceTracker } from './presence.ts';
import { IndexedMemoryPersistence } from './retained-index.ts';
import { ResubscribeGuard } from './resubscribe.ts';
import type { LiveReports, MqttBroker, TaskReportHandler } from './port.ts';
import { loadBrokerCertificate, type BrokerCertificate } from './tls-certificate.ts';
import { MANIFEST_VERSION } from './manifest.ts';

export interface BrokerOptions {
  db: Sql;
  /** The agents' logins, presence and command flags. */
  agents: BrokerAgentStore;
  events: EventLog;
  work: UnitOfWork;
  fleets: FleetService;
  /** Inventories and positions agents send (shared with their HTTP reports). */
  reports: DeviceReports;
  dataDir: string;
  /** Address both listeners bind to. */
  host: string;
  /** Plain MQTT and MQTT over TLS; 0 = any free port. */
  port: number;
  tlsPort: number;
  /** Names agents use to reach the broker, put into a generated certificate. */
  hosts: string[];
  /** The host put into agent records. */
  publicHost: () => string;
  /** An admin-provided certificate and key (PEM files) instead of the generated one. */
  tlsCertFile?: string | undefined;
  tlsKeyFile?: string | undefined;
  throttle?: Partial<ThrottleOptions>;
  /** Connections each listener accepts at once (their share of the open-file limit). */
  maxConnections?: number;
  /** The broker's part of the descriptors it shares with the HTTP listeners (http/socket-limits.ts). */
  connectionShare?: ConnectionShare | undefined;
  /** A task status report of an agent (`T/Status/Task/<id>` or rc.6's `<policy topic>/Status/Task/<id>`). */
  onTaskReport?: TaskReportHandler | undefined;
  /** How long after its CONNACK an agent may take to subscribe before the broker does it (resubscribe.ts). */
  resubscribeGraceMs?: number;
}

export type { BrokerStatus, LiveReports, MqttBroker, PolicyPublisher } from './port.ts';

export { MANIFEST_VERSION } from './manifest.ts';

/**
 * The embedded broker (aedes): a plain and a TLS listener, agent logins checked against the
 * hashed mqttpasswd, DESIGN.md's topic rules, presence and commands. Assembles the parts, aedes
 * with its hooks, the listeners and the agents' lifecycle, in the order they depend on each other.
 */
export async function startBroker(options: BrokerOptions): Promise<MqttBroker> {
  const certificate = await loadBrokerCertificate({
    dataDir: options.dataDir,
    certFile: options.tlsCertFile,
    keyFile: options.tlsKeyFile,
    hosts: options.hosts,
  });
  const parts = embeddedParts(options);
  const wasOnline = await parts.presence.start();
  const aedes = await createAedes(options, parts);
  const restored = await restoreRetained(parts.commands, parts.publisher);
  try {
    parts.listeners = await startListeners(aedes, { ...options, certificate });
  } catch (error) {
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    throw error;
  }
  const listeners = parts.listeners;
  const unsubscribe = followAgentLifecycle(options.events, parts.commands, parts.accounts);
  await recordStarted(options.events, certificate, listeners, wasOnline, restored);
  const stop = () => stopEmbedded(options.events, parts, aedes, listeners, unsubscribe);
  return embeddedFace({ ...parts, options, certificate, listeners, stop });
}

/** The embedded broker's parts, before aedes and its listeners exist (the hooks reach them through here). */
interface EmbeddedParts {
  store: BrokerAgentStore;
  registry: ConnectionRegistry;
  persistence: IndexedMemoryPersistence;
  publisher: Publisher;
  presence: PresenceTracker;
  accounts: AgentAccounts;
  commands: AgentCommands;
  resubscribe: ResubscribeGuard;
  lifecycle: ClientLifecycle;
  login: AuthenticateHook;
  aedes: Aedes | null;
  listeners: Listeners | null;
}

function embeddedParts(options: BrokerOptions): EmbeddedParts {
  const { events, agents: store } = options;
  const registry = new ConnectionRegistry();
  const parts = { store, registry, persistence: new IndexedMemoryPersistence(), aedes: null, listeners: null } as Pick<
    EmbeddedParts,
    'store' | 'registry' | 'persistence' | 'aedes' | 'listeners'
  >;
  const publisher = aedesPublisher(() => parts.aedes!);
  const presence = new PresenceTracker({
    store,
    events,
    work: options.work,
    registry,
    publishRetained: (topic, payload) => void publisher.publish(topic, payload, true).catch(() => {}),
  });
  const accounts = embeddedAccounts(registry);
  const commands = new AgentCommands({
    ...options,
    store,
    publisher,
    links: { isConnected: (agentId) => registry.live(agentId).length > 0, fleetChanged: accounts.moved },
  });
  const resubscribe = resubscribeGuard(events, options.resubscribeGraceMs);
  const lifecycle = new ClientLifecycle({
    registry,
    presence,
    resubscribe,
    connections: () => parts.listeners?.connections,
  });
  const login = authenticateHook({
    store,
    events,
    throttle: options.throttle,
    accepted: (client, agent) => lifecycle.loggedIn(client, agent),
    closed: () => parts.aedes?.closed ?? true,
  });
  return Object.assign(parts, { publisher, presence, accounts, commands, resubscribe, lifecycle, login });
}

/** aedes, given its hooks (./aedes/) and the retained index as its persistence. */
async function createAedes(options: BrokerOptions, parts: EmbeddedParts): Promise<Aedes> {
  const { registry, presence, resubscribe, commands, lifecycle } = parts;
  const aedes = await Aedes.createBroker({
    persistence: parts.persistence,
    drainTimeout: 30_000,
    // MQTT 3.1 says 23 characters; agents that send a UUID (36) are accepted like MQTT 3.1.1 ones.
    maxClientsIdLength: 128,
    authenticate: parts.login.authenticate,
    ...authorizeHooks({ registry, presence, resubscribe, events: options.events, onTaskReport: options.onTaskReport }),
    published: publishedHook({ registry, presence, commands, onTaskReport: options.onTaskReport }),
  });
  parts.aedes = aedes;
  aedes.on('clientReady', (client) => lifecycle.ready(client));
  aedes.on('ping', (_packet, client) => lifecycle.ping(client));
  (aedes as unknown as NodeJS.EventEmitter).on('error', (error: Error) => {
    unlessDiskFull(() => options.events.record('broker.error', `MQTT broker error: ${error.message}`));
  });
  return aedes;
}

/** Stops taking logins, ends every connection (each agent offline), closes aedes and the listeners. */
async function stopEmbedded(
  events: EventLog,
  parts: EmbeddedParts,
  aedes: Aedes,
  listeners: Listeners,
  unsubscribe: () => void,
): Promise<void> {
  unsubscribe();
  parts.login.stop();
  parts.resubscribe.stop();
  const offline = await parts.presence.stop();
  const stopped = listeners.stop();
  await new Promise<void>((resolve) => aedes.close(() => resolve()));
  stopped.destroy();
  await stopped.closed;
  await events
    .record(
      'broker.stopped',
      `MQTT broker stopped${offline.length > 0 ? `; ${offline.length} agent(s) disconnected` : ''}`,
      {},
      { agent_ids: offline },
    )
    .catch((error: unknown) => {
      if (!isClosedDatabase(error)) throw error; // a start that failed closes the database first
    });
}

/**
 * What the records keep is retained again (commands, every agent's Command/Subscribe), and the
 * manifest's version message under both names (the Flyve agents subscribe to
 * FlyvemdmManifest/Status/Version). Returns how many agents had commands restored.
 */
async function restoreRetained(commands: AgentCommands, publisher: Publisher): Promise<number> {
  const restored = await commands.restoreRetained();
  await commands.restoreSubscriptions();
  for (const manifest of MANIFEST_TOPICS)
    await publisher.publish(`${manifest}/Status/Version`, JSON.stringify({ version: MANIFEST_VERSION }), true);
  return restored;
}

/** The port (port.ts) over the embedded broker's parts. */
function embeddedFace(parts: {
  options: BrokerOptions;
  certificate: BrokerCertificate;
  listeners: Listeners;
  registry: ConnectionRegistry;
  store: BrokerAgentStore;
  commands: AgentCommands;
  presence: PresenceTracker;
  publisher: Publisher;
  persistence: IndexedMemoryPersistence;
  stop: () => Promise<void>;
}): MqttBroker {
  const { options, certificate, registry, commands, publisher, persistence } = parts;
  const { port, tlsPort } = parts.listeners;
  let closing: Promise<void> | null = null;
  return {
    mode: 'embedded',
    port,
    tlsPort,
    certificate,
    commands,
    // Retained in aedes's own memory, where every agent connects: nothing to give again.
    policies: {
      publishRetained: (topic, payload) => publisher.publish(topic, payload, true),
      retainedTopicsUnder: (prefix) => Promise.resolve(persistence.retainedTopics(`${prefix}/#`)),
    },
    agentEndpoint: (tls) => ({ host: options.publicHost(), port: tls ? tlsPort : port, tls }),
    credentialsIssued: async () => {}, // logins are checked against the database itself
    liveReports: embeddedLiveReports(registry, parts.store, commands, parts.presence),
    publish: (topic, payload, publishOptions) => publisher.publish(topic, payload, publishOptions?.retain ?? false),
    retained: (topic) => Promise.resolve(persistence.retained(topic.replace(/[+#]/g, ''))),
    status: () => embeddedStatus(registry, certificate, port, tlsPort),
    close: () => (closing ??= parts.stop()),
  };
}

/** The backend's own publishing: QoS 1 through aedes, with no client (outside the agents' ACL). */
function aedesPublisher(aedes: () => Aedes): Publisher {
  return {
    publish: (topic, payload, retain) =>
      new Promise((resolve, reject) => {
        if (aedes().closed) return reject(new Error('The MQTT broker is stopped'));
        aedes().publish(
          {
            cmd: 'publish',
            topic,
            payload: typeof payload === 'string' ? Buffer.from(payload) : payload,
            qos: 1,
            retain,
            dup: false,
          },
          (error) => (error ? reject(error) : resolve()),
        );
      }),
  };
}

/** The embedded broker's accounts are the database's rows: revoking one closes its connections. */
function embeddedAccounts(registry: ConnectionRegistry): AgentAccounts {
  const disconnect = (agentId: number) => {
    for (const client of registry.live(agentId)) client.close();
  };
  return {
    // An agent that confirmed its unenrollment did so in a publish still being handled: closed after it.
    revoke: (agentId, why) => {
      if (why === 'unenrolled') setImmediate(() => disconnect(agentId));
      else disconnect(agentId);
    },
    moved: (agentId, fleetId) => {
      const identity = registry.identity(agentId);
      if (identity) identity.fleetId = fleetId; // open connections receive the new fleet's topic from now on
    },
  };
}

function resubscribeGuard(events: EventLog, graceMs: number | undefined): ResubscribeGuard {
  return new ResubscribeGuard({
    graceMs,
    subscribe: (client, filters) =>
      new Promise((resolve, reject) =>
        client.subscribe(
          filters.map((topic) => ({ topic, qos: 0 as const })),
          (error) =>
            error
              ? reject(error)
              : resolve(filters.filter((topic) => topic in (client as unknown as { subscriptions: object }).subscriptions)),
        ),
      ),
    subscribed: (_client, agent, filters, why) =>
      unlessDiskFull(() =>
        events.record(
          'mqtt.resubscribed',
          `${agent.name} ${why}; the broker subscribed it to ${filters.join(', ')}`,
          { entityId: agent.entityId, agentId: agent.id },
          {
            filters,
          },
        ),
      ),
  });
}

/** Replies the agents send over HTTP, taken as if they came over MQTT. */
function embeddedLiveReports(
  registry: ConnectionRegistry,
  store: BrokerAgentStore,
  commands: AgentCommands,
  presence: PresenceTracker,
): LiveReports {
  const identityOf = async (agentId: number): Promise<AgentIdentity | null> => {
    const live = registry.identity(agentId);
    if (live) return live;
    const row = await store.byId(agentId);
    return row ? { id: row.id, entityId: row.entity_id, fleetId: row.fleet_id, topic: row.topic, name: row.name } : null;
  };
  return {
    pong: async (agentId) => {
      const agent = await identityOf(agentId);
      if (agent) await commands.received(agent, 'Status/Ping', Buffer.from('!'), 'http');
    },
    online: async (agentId) => {
      const agent = await identityOf(agentId);
      if (agent) await presence.reportedOverHttp(agent);
    },
  };
}

async function recordStarted(
  events: EventLog,
  certificate: BrokerCertificate,
  { port, tlsPort }: Listeners,
  wasOnline: number[],
  restored: number,
): Promise<void> {
  if (certificate.change) {
    await events.record(
      'broker.certificate',
      `MQTT TLS certificate ${certificate.change} (SHA-256 ${certificate.fingerprint256})`,
      {},
      {
        fingerprint_sha256: certificate.fingerprint256,
        valid_to: certificate.validTo,
        alt_names: certificate.altNames,
      },
    );
  }
  await events.record(
    'broker.started',
    `MQTT broker listening on port ${port} and ${tlsPort} (TLS)${wasOnline.length > 0 ? `; ${wasOnline.length} agent(s) left online by the previous run marked offline` : ''}`,
    {},
    {
      port,
      tls_port: tlsPort,
      fingerprint_sha256: certificate.fingerprint256,
      marked_offline: wasOnline,
      restored_commands_for: restored,
    },
  );
}

function embeddedStatus(
  registry: ConnectionRegistry,
  certificate: BrokerCertificate,
  port: number,
  tlsPort: number,
): ReturnType<MqttBroker['status']> {
  const counts = registry.counts();
  return {
    mode: 'embedded',
    connected: true,
    problem: null,
    url: null,
    port,
    tls_port: tlsPort,
    connected_agents: counts.agents,
    connections: counts.connections,
    tls: {
      fingerprint_sha256: certificate.fingerprint256,
      source: certificate.source,
      subject: certificate.subject,
      alt_names: certificate.altNames,
      valid_from: certificate.validFrom,
      valid_to: certificate.validTo,
      cert_file: certificate.certFile,
    },
  };
}

export type { AgentIdentity };
