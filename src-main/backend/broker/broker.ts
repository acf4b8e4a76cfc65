import { Aedes, type AuthenticateError, type Client } from 'aedes';
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import type { Db } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { isDiskFull, unlessDiskFull } from '../db/disk-full.ts';
import { verifySecret } from '../util/tokens.ts';
import type { DeviceReports } from '../agents/reports.ts';
import {
  isUsableAgentTopic,
  MANIFEST_TOPICS,
  mayPublish,
  mayReceive,
  maySubscribe,
  policyStatusTaskId,
  statusTaskId,
  type AgentIdentity,
} from './acl.ts';
import type { BrokerAgentRow, BrokerAgentStore } from '../agents/broker-repository.ts';
import { ENROLL_STATUS, MAY_CONNECT } from '../agents/status.ts';
import { DEFAULT_THROTTLE, FailureThrottle, type ThrottleOptions } from './auth-throttle.ts';
import { AgentCommands, type Publisher } from './commands.ts';
import { capBrokerConnections } from './connection-cap.ts';
import { connectionInfo, ConnectionRegistry } from './connections.ts';
import { ONLINE_SUBTOPIC, onlineFlag, PresenceTracker } from './presence.ts';
import { indexRetainedMessages } from './retained-index.ts';
import { ResubscribeGuard } from './resubscribe.ts';
import type { LiveReports, MqttBroker, TaskReportHandler } from './port.ts';
import { loadBrokerCertificate } from './tls-certificate.ts';
import { MANIFEST_VERSION } from './manifest.ts';

export interface BrokerOptions {
  db: Db;
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
  /** A task status report of an agent (`T/Status/Task/<id>` or rc.6's `<policy topic>/Status/Task/<id>`). */
  onTaskReport?: TaskReportHandler | undefined;
  /** How long after its CONNACK an agent may take to subscribe before the broker does it (resubscribe.ts). */
  resubscribeGraceMs?: number;
}

export type { BrokerStatus, LiveReports, MqttBroker, PolicyPublisher } from './port.ts';

export { MANIFEST_VERSION } from './manifest.ts';

/** Where denied publishes go: acknowledged (MQTT-3.3.5-2), delivered to nobody. */
const DENIED_PREFIX = '$denied/';
/** Where rc.6 task reports go once taken in: delivered to nobody. */
const TAKEN_PREFIX = '$taken/';

function refusal(returnCode: 3 | 4 | 5, message: string): AuthenticateError {
  return Object.assign(new Error(message), { returnCode }) as unknown as AuthenticateError;
}

/** How often the history notes the refused logins of one device waiting for approval. */
const WAITING_NOTE_MS = 10 * 60 * 1000;

/** CONNACK 3 (server unavailable): the device retries later, as it does after any outage. */
const DISK_FULL_REFUSAL = "the server's disk is full: nothing can be saved";

function listen(server: Server, port: number, host: string, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      // Keeps code and port: startup-error.ts words it, naming the option that changes it.
      reject(Object.assign(error, { port: (error as { port?: number }).port ?? port, listener: what }));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));

/**
 * The embedded broker (aedes): a plain and a TLS listener, agent logins checked against the
 * hashed mqttpasswd, DESIGN.md's topic rules, presence and commands.
 */
export async function startBroker(options: BrokerOptions): Promise<MqttBroker> {
  const { events } = options;
  const certificate = await loadBrokerCertificate({
    dataDir: options.dataDir,
    certFile: options.tlsCertFile,
    keyFile: options.tlsKeyFile,
    hosts: options.hosts,
  });
  const store = options.agents;
  const registry = new ConnectionRegistry();
  // Per login and address: one bad device behind a NAT slows only its own login, never the others.
  const throttle = new FailureThrottle(options.throttle);
  // Per address, whatever the login, with a higher threshold: a scan of logins; slows refusals only.
  const scanThrottle = new FailureThrottle(
    options.throttle,
    Date.now,
    { ...DEFAULT_THROTTLE, ...options.throttle }.freeFailuresPerAddress,
  );
  const pendingChecks = new Set<NodeJS.Timeout>();
  const waitingNoted = new Map<number, number>();
  const deniedNoted = new WeakSet<Client>();

  let aedes!: Aedes;
  const publisher: Publisher = {
    publish: (topic, payload, retain) =>
      new Promise((resolve, reject) => {
        if (aedes.closed) return reject(new Error('The MQTT broker is stopped'));
        aedes.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 1, retain, dup: false }, (error) =>
          error ? reject(error) : resolve(),
        );
      }),
  };
  const presence = new PresenceTracker({
    store,
    events,
    work: options.work,
    registry,
    publishRetained: (topic, payload) => void publisher.publish(topic, payload, true).catch(() => {}),
  });
  const commands = new AgentCommands({
    store,
    events,
    work: options.work,
    fleets: options.fleets,
    publisher,
    reports: options.reports,
    links: {
      isConnected: (agentId) => registry.live(agentId).length > 0,
      fleetChanged: (agentId, fleetId) => {
        const identity = registry.identity(agentId);
        if (identity) identity.fleetId = fleetId; // open connections receive the new fleet's topic from now on
      },
      disconnect: (agentId) => {
        for (const client of registry.live(agentId)) client.close();
      },
    },
  });
  const identityOf = (agentId: number): AgentIdentity | null => {
    const live = registry.identity(agentId);
    if (live) return live;
    const row = store.byId(agentId);
    return row ? { id: row.id, entityId: row.entity_id, fleetId: row.fleet_id, topic: row.topic, name: row.name } : null;
  };
  const liveReports: LiveReports = {
    pong: (agentId) => {
      const agent = identityOf(agentId);
      if (agent) commands.received(agent, 'Status/Ping', Buffer.from('!'), 'http');
    },
    online: (agentId) => {
      const agent = identityOf(agentId);
      if (agent) presence.reportedOverHttp(agent);
    },
  };
  const wasOnline = presence.start();
  const resubscribe = new ResubscribeGuard({
    graceMs: options.resubscribeGraceMs,
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
    subscribed: (_client, agent, filters) =>
      events.record(
        'mqtt.resubscribed',
        `${agent.name} reconnected without subscribing; the broker subscribed it to ${filters.join(', ')}`,
        { entityId: agent.entityId, agentId: agent.id },
        {
          filters,
        },
      ),
  });

  /**
   * Checks a login at once (a salted SHA-256: cheap) and says how long its answer waits: a
   * refusal waits what its (login, address) and its address have earned; a correct password at
   * most the first step, and nothing at all when its own (login, address) has no failures.
   */
  const check = (
    client: Client,
    username: string | undefined,
    password: Buffer | undefined,
  ): { result: AuthenticateError | BrokerAgentRow; delay: number } => {
    const address = connectionInfo(client, client.id).address ?? 'unknown';
    const login = username ?? '';
    const key = `${address}\u0000${login}`;
    const shown = JSON.stringify(login.length > 64 ? `${login.slice(0, 64)}…` : login);
    const keyDelay = throttle.delayFor(key);
    const refuse = (returnCode: 4 | 5, why: string, agent?: BrokerAgentRow, noted = true) => {
      const delay = Math.max(keyDelay, scanThrottle.delayFor(address));
      if (returnCode === 4) {
        throttle.fail(key);
        scanThrottle.fail(address);
      }
      if (delay === 0 && noted) {
        const slowed = throttle.isThrottled(key)
          ? `; further attempts for this login from ${address} are slowed down`
          : scanThrottle.isThrottled(address)
            ? `; further refused logins from ${address} are slowed down`
            : '';
        events.record(
          'mqtt.login_refused',
          `MQTT login ${shown} from ${address} refused: ${why}${slowed}`,
          agent ? { entityId: agent.entity_id, agentId: agent.id } : {},
          {
            login: login.slice(0, 200),
            address,
            reason: why,
            return_code: returnCode,
          },
        );
      }
      return { result: refusal(returnCode, why), delay };
    };
    const secret = password?.toString('utf8') ?? '';
    if (!login || !secret) return refuse(4, 'login and password are required');
    const candidates = store.byLogin(login);
    const agent = candidates.find((row) => verifySecret(secret, row.mqtt_password_hash));
    if (!agent)
      return refuse(
        4,
        candidates.length > 0 ? 'wrong password' : 'unknown login',
        candidates.length === 1 ? candidates[0] : undefined,
      );
    if (agent.enroll_status === ENROLL_STATUS.pendingApproval) {
      // A waiting device retries until approved (every 30 s, as the reference agent does): the
      // history notes it once per WAITING_NOTE_MS, not at every attempt.
      const now = Date.now();
      const noted = now - (waitingNoted.get(agent.id) ?? -Infinity) >= WAITING_NOTE_MS;
      if (noted) {
        if (waitingNoted.size >= 10_000) waitingNoted.clear();
        waitingNoted.set(agent.id, now);
      }
      return refuse(5, 'the device is waiting for approval by an administrator', agent, noted);
    }
    if (!MAY_CONNECT.includes(agent.enroll_status)) return refuse(5, `the agent is ${agent.enroll_status}`, agent);
    if (!isUsableAgentTopic(agent.topic)) return refuse(5, `the agent's topic ${agent.topic} cannot be used in MQTT`, agent);
    throttle.succeed(key);
    return { result: agent, delay: Math.min(keyDelay, throttle.firstStepMs) };
  };

  const connectionClosed = (client: Client) => {
    resubscribe.closed(client);
    const info = registry.infoOf(client);
    const unbound = registry.unbind(client);
    if (unbound) unlessDiskFull(() => presence.closed(unbound.identity, unbound.last, info));
  };

  let connectionCap: ReturnType<typeof capBrokerConnections> | undefined; // set once the listeners exist
  aedes = await Aedes.createBroker({
    drainTimeout: 30_000,
    // MQTT 3.1 says 23 characters; agents that send a UUID (36) are accepted like MQTT 3.1.1 ones.
    maxClientsIdLength: 128,
    authenticate(client, username, password, done) {
      let checked: ReturnType<typeof check>;
      try {
        checked = check(client, username ?? undefined, password ?? undefined);
      } catch (error) {
        if (!isDiskFull(error)) throw error;
        return done(refusal(3, DISK_FULL_REFUSAL), false); // a refusal could not be logged
      }
      const { result, delay } = checked;
      const answer = () => {
        if (result instanceof Error) return done(result, false);
        // Client ids are scoped to their agent: one agent's id can never take over another's connection.
        const clientId = client.id;
        (client as { id: string }).id = `${result.id}|${clientId}`;
        const identity = registry.bind(client, result, connectionInfo(client, clientId));
        client.conn.once('close', () => connectionClosed(client));
        // Presence is what the broker knows: online from the moment the login is accepted, before the
        // CONNACK goes out and whether or not the agent ever publishes Status/Online.
        try {
          presence.connected(client, identity);
          connectionCap?.loggedIn(client.conn as { remoteAddress?: string; remotePort?: number; localPort?: number });
        } catch (error) {
          if (!isDiskFull(error)) throw error;
          registry.unbind(client); // not online, since that could not be saved
          return done(refusal(3, DISK_FULL_REFUSAL), false);
        }
        done(null, true);
      };
      if (delay === 0) return answer();
      const timer = setTimeout(() => {
        pendingChecks.delete(timer);
        if (!client.closed && !aedes.closed) answer();
      }, delay);
      pendingChecks.add(timer);
    },
    authorizePublish(client, packet, callback) {
      const agent = registry.identityOf(client);
      if (!client || !agent) return callback(new Error('not an agent'));
      if (client.closed) {
        // The will of a connection that ended.
        if (!mayPublish(agent, packet.topic)) return callback(new Error('will topic not allowed'));
        if (packet.topic === `${agent.topic}/${ONLINE_SUBTOPIC}` && !presence.willAllowed(agent))
          return callback(new Error('superseded by a newer connection'));
        return callback(null);
      }
      const policyTask = policyStatusTaskId(agent, packet.topic);
      if (policyTask !== null) {
        options.onTaskReport?.(agent, policyTask, toBuffer(packet.payload));
        packet.topic = `${TAKEN_PREFIX}${agent.id}`;
        packet.retain = false;
        return callback(null);
      }
      if (mayPublish(agent, packet.topic)) {
        // Only the presence flag is kept for late subscribers: an agent cannot fill the broker's
        // memory with retained messages under topics of its own invention.
        if (packet.retain && packet.topic !== `${agent.topic}/${ONLINE_SUBTOPIC}`) packet.retain = false;
        return callback(null);
      }
      if (!deniedNoted.has(client)) {
        deniedNoted.add(client);
        unlessDiskFull(() =>
          events.record(
            'mqtt.publish_denied',
            `${agent.name} may not publish on ${packet.topic.slice(0, 200)}: dropped`,
            { entityId: agent.entityId, agentId: agent.id },
            {
              topic: packet.topic.slice(0, 500),
            },
          ),
        );
      }
      packet.topic = `${DENIED_PREFIX}${agent.id}`;
      packet.retain = false;
      callback(null);
    },
    authorizeSubscribe(client, subscription, callback) {
      const agent = registry.identityOf(client);
      const allowed = agent !== undefined && maySubscribe(agent, subscription.topic);
      if (allowed) resubscribe.clientSubscribed(client, agent, [subscription.topic]);
      callback(null, allowed ? subscription : null);
    },
    authorizeForward(client, packet) {
      const agent = registry.identityOf(client);
      return agent && mayReceive(agent, packet.topic) && resubscribe.mayDeliver(client, packet) ? packet : null;
    },
  });
  // Each SUBSCRIBE then finds its retained messages without scanning every agent's (retained-index.ts).
  indexRetainedMessages((aedes as unknown as { persistence: unknown }).persistence);

  const restored = await commands.restoreRetained();
  await commands.restoreSubscriptions();
  // The manifest's version message, under both names (the Flyve agents subscribe to FlyvemdmManifest/Status/Version).
  for (const manifest of MANIFEST_TOPICS)
    await publisher.publish(`${manifest}/Status/Version`, JSON.stringify({ version: MANIFEST_VERSION }), true);

  aedes.on('clientReady', (client) => {
    const agent = registry.identityOf(client);
    if (agent) resubscribe.ready(client, agent);
  });
  aedes.on('ping', (_packet, client) => {
    const agent = registry.identityOf(client);
    if (agent) unlessDiskFull(() => presence.touch(agent));
  });
  aedes.on('publish', (packet, client) => {
    const agent = registry.identityOf(client);
    if (!client || !agent || packet.topic.startsWith(DENIED_PREFIX) || !mayPublish(agent, packet.topic)) return;
    const subtopic = packet.topic.slice(agent.topic.length + 1);
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    unlessDiskFull(() => {
      if (subtopic === ONLINE_SUBTOPIC) {
        presence.reported(client, agent, onlineFlag(payload), packet.retain);
        return;
      }
      if (!client.closed) presence.touch(agent);
      const taskId = statusTaskId(agent, packet.topic);
      if (taskId !== null && options.onTaskReport) {
        options.onTaskReport(agent, taskId, payload);
        return;
      }
      commands.received(agent, subtopic, payload);
    });
  });
  (aedes as unknown as NodeJS.EventEmitter).on('error', (error: Error) => {
    unlessDiskFull(() => events.record('broker.error', `MQTT broker error: ${error.message}`));
  });

  const sockets = new Set<Socket>();
  const accept = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    aedes.handle(socket);
  };
  const tcpServer = createTcpServer(accept);
  const tlsServer = createTlsServer({ cert: certificate.cert, key: certificate.key, minVersion: 'TLSv1.2' }, accept);
  tlsServer.on('tlsClientError', () => {}); // failed handshakes: the client sees them, nothing to do here
  const tlsSockets = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  tlsServer.on('connection', tlsSockets);

  // Beyond its share of descriptors a listener makes room by closing a connection that has not
  // logged in, else drops the newcomer before it costs anything.
  if (options.maxConnections !== undefined) connectionCap = capBrokerConnections([tcpServer, tlsServer], options.maxConnections);
  let port: number;
  let tlsPort: number;
  try {
    port = await listen(tcpServer, options.port, options.host, 'MQTT');
    tlsPort = await listen(tlsServer, options.tlsPort, options.host, 'MQTT TLS');
  } catch (error) {
    await Promise.all([closeServer(tcpServer), closeServer(tlsServer)]);
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    throw error;
  }

  // Agents the admin removes or that enroll again lose their connections and retained commands.
  // A new (or re-enrolled) agent is told its fleet topic, retained, as the reference does.
  const unsubscribe = events.subscribe((event) => {
    if (event.agent_id === null) return;
    const id = event.agent_id;
    if (event.type === 'agent.deleted' || event.type === 'agent.reenrolled') {
      commands.forgetAgent(id);
      for (const client of registry.live(id)) client.close();
    }
    if (event.type === 'agent.enrolled' || event.type === 'agent.reenrolled') void commands.announceFleet(id).catch(() => {});
  });

  if (certificate.change) {
    events.record(
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
  events.record(
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

  let closing: Promise<void> | null = null;
  return {
    mode: 'embedded',
    port,
    tlsPort,
    certificate,
    commands,
    // Retained in aedes's own memory, where every agent connects: nothing to give again.
    policies: { publishRetained: (topic, payload) => publisher.publish(topic, payload, true) },
    agentEndpoint: (tls) => ({ host: options.publicHost(), port: tls ? tlsPort : port, tls }),
    credentialsIssued: async () => {}, // logins are checked against the database itself
    liveReports,
    publish: (topic, payload, publishOptions) => publisher.publish(topic, payload, publishOptions?.retain ?? false),
    retained: async (topic) => {
      const persistence = (
        aedes as unknown as {
          persistence: { createRetainedStream(pattern: string): AsyncIterable<{ payload: Buffer | string }> };
        }
      ).persistence;
      for await (const packet of persistence.createRetainedStream(topic.replace(/[+#]/g, ''))) return packet.payload.toString();
      return null;
    },
    status: () => {
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
    },
    close: () => {
      closing ??= (async () => {
        unsubscribe();
        for (const timer of pendingChecks) clearTimeout(timer);
        pendingChecks.clear();
        resubscribe.stop();
        const offline = presence.stop();
        const stopped = Promise.all([closeServer(tcpServer), closeServer(tlsServer)]);
        await new Promise<void>((resolve) => aedes.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await stopped;
        if (options.db.open) {
          events.record(
            'broker.stopped',
            `MQTT broker stopped${offline.length > 0 ? `; ${offline.length} agent(s) disconnected` : ''}`,
            {},
            { agent_ids: offline },
          );
        }
      })();
      return closing;
    },
  };
}

function toBuffer(payload: Buffer | string): Buffer {
  return typeof payload === 'string' ? Buffer.from(payload) : payload;
}

export type { AgentIdentity };
