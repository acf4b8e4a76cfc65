// The simulated agent's MQTT side (DESIGN.md "MQTT"), written from the wire only: it connects
// with the credentials of its agent record, says it is online (with a will saying the opposite),
// answers pings, obeys lock, wipe, unenroll and fleet changes (simulated, logged), and reconnects
// with back-off when the broker goes away.
import mqtt, { type IClientOptions, type ISubscriptionMap, type MqttClient } from 'mqtt';
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import { SPEC_DIALECT, type Dialect } from './dialect.ts';
import type { MqttCredentials, StepLog } from './enroll.ts';
import { reporterFor, type HttpReportTarget, type InstalledList, type Reporter, type ReportingDevice } from './reporter.ts';

export interface MqttAgentOptions extends MqttCredentials {
  /** 4 = MQTT 3.1.1 (default), 3 = MQTT 3.1 (the reference Android agent's). */
  protocolVersion?: 3 | 4;
  /** Default: the login (cut to 23 characters, MQTT 3.1's limit). */
  clientId?: string;
  keepaliveSeconds?: number;
  /** With TLS: the SHA-256 fingerprint to expect; default: pin the certificate first seen. */
  fingerprint?: string;
  /** How long start() keeps trying before it gives up (default 15 s; Infinity: never). */
  firstConnectTimeoutMs?: number;
  /**
   * A device waiting for an admin's approval: the broker refuses its login (CONNACK 5, not
   * authorized) until then. With this, such a refusal does not end the agent: it tries again every
   * `retryMs` (default 30 s, as the reference agent does), or at once on retryNow(); start()
   * resolves at the first refusal, with `state.waitingForApproval` set.
   */
  waitForApproval?: { retryMs?: number };
  /** Reconnection back-off: doubles from `initialMs` up to `maxMs`, with jitter. */
  backoff?: { initialMs: number; maxMs: number };
  log?: StepLog;
  /** Policy messages (`…/Policy/<name>/Task/<id>`): true when taken (policies.ts runs them). */
  onPolicy?: (topic: string, payload: string) => boolean;
  /** Everything the agent does, for tests and other programs. */
  onEvent?: (event: MqttAgentEvent) => void;
  /** The wire dialect (dialect.ts); default the spec's agent. */
  dialect?: Dialect;
  /** The device, for the inventory it sends (default: its login as serial, an android). */
  device?: ReportingDevice;
  /** Needed when the dialect reports over HTTP. */
  http?: HttpReportTarget;
  /** What it installed (its policy runner's apps), listed in each inventory it sends. */
  installedApps?: InstalledList;
}

export type MqttAgentEvent =
  | { type: 'connected'; attempt: number; tls: boolean; fingerprint: string | null }
  | { type: 'connection-lost'; retryInMs: number; error: string | null }
  | { type: 'refused'; code: number; message: string }
  | { type: 'waiting'; retryInMs: number }
  | { type: 'command'; name: string; payload: unknown }
  | { type: 'message'; topic: string; payload: string }
  | {
      type: 'reported';
      what: 'online' | 'offline' | 'pong' | 'inventory' | 'position' | 'unenrolled';
      transport: 'mqtt' | 'http';
      error: string | null;
    }
  | { type: 'stopped'; reason: MqttAgentEndReason };

export type MqttAgentEndReason = 'stopped' | 'unenrolled' | 'refused';

export interface MqttAgentState {
  connected: boolean;
  /** The broker refuses the login as not authorized: the device waits for an admin's approval (waitForApproval). */
  waitingForApproval: boolean;
  connections: number;
  locked: boolean;
  wiped: boolean;
  unenrolled: boolean;
  pings: number;
  /** Reports sent (ping replies, presence, inventories, positions) and how. */
  reports: { what: string; transport: 'mqtt' | 'http'; ok: boolean }[];
  /** Fleet topics it subscribed to after Command/Subscribe. */
  fleetTopics: string[];
  /** SHA-256 of the pinned broker certificate (TLS only). */
  fingerprint: string | null;
  commands: { name: string; payload: unknown; at: string }[];
}

const ONLINE = (online: boolean) => JSON.stringify({ online });

/** MQTT connection refused in the CONNACK: 4 bad user name or password, 5 not authorized. */
export class MqttRefusedError extends Error {
  override name = 'MqttRefusedError';
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** Connects (trying until firstConnectTimeoutMs) and resolves once online; then runs until stop(). */
export async function startMqttAgent(options: MqttAgentOptions): Promise<MqttAgent> {
  const agent = new MqttAgent(options);
  await agent.start();
  return agent;
}

export class MqttAgent {
  readonly state: MqttAgentState = {
    connected: false,
    waitingForApproval: false,
    connections: 0,
    locked: false,
    wiped: false,
    unenrolled: false,
    pings: 0,
    reports: [],
    fleetTopics: [],
    fingerprint: null,
    commands: [],
  };
  /** Resolves when the agent has left: stop(), unenrolled, or refused by the broker. */
  readonly finished: Promise<MqttAgentEndReason>;
  private readonly options: MqttAgentOptions;
  private readonly log: StepLog;
  private client: MqttClient | null = null;
  private pinnedPem: string | null = null;
  private stopping = false;
  private endReason: MqttAgentEndReason | null = null;
  private resolveFinished!: (reason: MqttAgentEndReason) => void;
  private wakeUp: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  private readonly dialect: Dialect;
  private readonly reporter: Reporter;

  constructor(options: MqttAgentOptions) {
    this.options = options;
    this.log = options.log ?? (() => {});
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve));
    this.dialect = options.dialect ?? SPEC_DIALECT;
    this.reporter = reporterFor(this.dialect, {
      client: () => this.client,
      topic: options.topic,
      device: options.device ?? { serial: options.username, uuid: options.username, type: 'android' },
      ...(options.http ? { http: options.http } : {}),
      ...(options.installedApps ? { installed: options.installedApps } : {}),
    });
  }

  /** Sends one report; a failure is logged and recorded, never thrown (the agent keeps running). */
  private async report(
    what: 'online' | 'offline' | 'pong' | 'inventory' | 'position' | 'unenrolled',
    send: () => Promise<void>,
  ): Promise<void> {
    const transport = this.reporter.transport;
    let error: string | null = null;
    try {
      await send();
    } catch (failure) {
      error = failure instanceof Error ? failure.message : String(failure);
      this.log(`${transport}: reporting ${what} failed: ${error}`);
    }
    this.state.reports.push({ what, transport, ok: error === null });
    this.emit({ type: 'reported', what, transport, error });
  }

  get topic(): string {
    return this.options.topic;
  }

  /** Runs the connection loop; resolves at the first successful connection. */
  start(): Promise<void> {
    const timeoutMs = this.options.firstConnectTimeoutMs ?? 15_000;
    return new Promise<void>((resolve, reject) => {
      const timer = Number.isFinite(timeoutMs)
        ? setTimeout(() => {
            void this.end('stopped');
            reject(
              new Error(
                `could not connect to the MQTT broker ${this.where()} within ${Math.round(timeoutMs / 1000)} s${this.lastError ? `: ${this.lastError}` : ''}`,
              ),
            );
          }, timeoutMs)
        : undefined;
      let settled = false;
      const settle = (error?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      };
      this.loop = this.run(settle);
    });
  }

  /** Tries the broker again now instead of at the next retry (told that the device was approved). */
  retryNow(): void {
    this.wakeUp?.();
  }

  /** Leaves cleanly: {"online": false} (retained), then DISCONNECT, so no will is sent. */
  async stop(): Promise<void> {
    await this.end('stopped');
  }

  private lastError: string | null = null;

  private where(): string {
    return `${this.options.host}:${this.options.port}${this.options.tls ? ' (TLS)' : ''}`;
  }

  private async run(settleFirst: (error?: Error) => void): Promise<void> {
    let first = true;
    let attempt = 0;
    while (!this.stopping) {
      let client: MqttClient | null = null;
      try {
        if (this.options.tls && !this.pinnedPem) await this.pin();
        client = await this.connectOnce();
      } catch (error) {
        this.lastError = error instanceof Error ? error.message : String(error);
        if (error instanceof MqttRefusedError && error.code === 5 && this.options.waitForApproval) {
          const retryMs = this.options.waitForApproval.retryMs ?? 30_000;
          const seconds = `${Math.round(retryMs / 100) / 10} s`;
          this.log(
            this.state.waitingForApproval
              ? `mqtt: still waiting for approval; next try in ${seconds}`
              : `mqtt: the broker refused the login (not authorized): waiting for approval by an administrator, trying again every ${seconds}`,
          );
          this.state.waitingForApproval = true;
          this.emit({ type: 'waiting', retryInMs: retryMs });
          settleFirst();
          await this.sleep(retryMs);
          continue;
        }
        if (error instanceof MqttRefusedError) {
          this.log(`mqtt: the broker refused the login: ${error.message}`);
          this.emit({ type: 'refused', code: error.code, message: error.message });
          if (first) settleFirst(error);
          await this.end('refused');
          return;
        }
        if (error instanceof PinError) {
          this.log(`mqtt: ${error.message}`);
          if (first && this.options.fingerprint) {
            settleFirst(error);
            await this.end('refused');
            return;
          }
        }
      }
      if (client) {
        attempt = 0;
        if (this.state.waitingForApproval) {
          this.state.waitingForApproval = false;
          this.log('mqtt: approved: the broker let the device in');
        }
        this.client = client;
        this.state.connected = true;
        this.state.connections += 1;
        const closed = new Promise<void>((resolve) => client!.once('close', () => resolve()));
        try {
          await this.online(client);
          this.emit({
            type: 'connected',
            attempt: this.state.connections,
            tls: this.options.tls,
            fingerprint: this.state.fingerprint,
          });
          if (first) {
            first = false;
            settleFirst();
          }
        } catch (error) {
          this.lastError = error instanceof Error ? error.message : String(error);
        }
        await closed;
        this.state.connected = false;
        this.client = null;
        if (this.stopping) return;
      }
      if (this.stopping) return;
      const { initialMs, maxMs } = this.options.backoff ?? { initialMs: 500, maxMs: 30_000 };
      const delay = Math.round(Math.min(initialMs * 2 ** attempt, maxMs) * (0.75 + Math.random() * 0.5));
      attempt += 1;
      if (!first) {
        this.log(
          `mqtt: connection to ${this.where()} lost${this.lastError ? ` (${this.lastError})` : ''}; reconnecting in ${(delay / 1000).toFixed(1)} s`,
        );
        this.emit({ type: 'connection-lost', retryInMs: delay, error: this.lastError });
      }
      await this.sleep(delay);
    }
  }

  /** Waits `ms`, or less when retryNow() or stop() wakes it up. */
  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wakeUp = null;
  }

  /** One connection attempt; resolves on CONNACK 0. */
  private connectOnce(): Promise<MqttClient> {
    const { host, port, tls, username, password, topic } = this.options;
    const protocolVersion = this.options.protocolVersion ?? 4;
    const options: IClientOptions = {
      protocol: tls ? 'mqtts' : 'mqtt',
      host,
      port,
      username,
      password,
      protocolVersion,
      protocolId: protocolVersion === 3 ? 'MQIsdp' : 'MQTT',
      clientId: this.options.clientId ?? username.slice(0, 23),
      clean: true,
      keepalive: this.options.keepaliveSeconds ?? 60,
      reconnectPeriod: 0,
      connectTimeout: 10_000,
      will: { topic: `${topic}/Status/Online`, payload: Buffer.from(ONLINE(false)), qos: 1, retain: true },
      ...(tls ? (this.tlsOptions() as IClientOptions) : {}),
    };
    return new Promise((resolve, reject) => {
      const client = mqtt.connect(options);
      let lastError: Error | null = null;
      const onError = (error: Error & { code?: number | string }) => {
        lastError =
          typeof error.code === 'number' && error.code > 0 ? new MqttRefusedError(error.code, refusalText(error.code)) : error;
      };
      const onClose = () => {
        client.removeListener('connect', onConnect);
        client.end(true);
        reject(lastError ?? new Error('connection closed before the broker accepted it'));
      };
      const onConnect = () => {
        client.removeListener('close', onClose);
        client.removeListener('error', onError);
        client.on('error', (error) => (this.lastError = error.message));
        client.on('close', () => (this.state.connected = false));
        client.on('message', (messageTopic, payload) => this.received(client, messageTopic, payload));
        resolve(client);
      };
      client.on('error', onError);
      client.once('close', onClose);
      client.once('connect', onConnect);
    });
  }

  /** After CONNACK: subscribe to T/# (and known fleet topics), then say online. */
  private async online(client: MqttClient): Promise<void> {
    const filters = [`${this.topic}/#`, ...this.dialect.manifestFilters, ...this.state.fleetTopics.map((t) => `${t}/#`)];
    // mqtt.js rejects when the broker refuses a filter (SUBACK 0x80); the others still hold.
    const refused = await client.subscribeAsync(subscriptionMap(filters)).then(
      (granted) => granted.filter((g) => g.qos === 128).map((g) => g.topic),
      (error: { packet?: { granted?: (number | object)[] } }) => filters.filter((_, i) => error.packet?.granted?.[i] === 128),
    );
    if (this.dialect.publishesOnline)
      await client.publishAsync(`${this.topic}/Status/Online`, ONLINE(true), { qos: 1, retain: true });
    // Release rc.7 says it on every connect over HTTP instead.
    if (this.reporter.transport === 'http') void this.report('online', () => this.reporter.online(true));
    this.log(
      `mqtt: online at ${this.where()} as ${this.options.username} (MQTT ${(this.options.protocolVersion ?? 4) === 3 ? '3.1' : '3.1.1'}` +
        `${this.state.fingerprint ? `, certificate SHA-256 ${this.state.fingerprint}` : ''})${refused.length > 0 ? `; refused subscriptions: ${refused.join(', ')}` : ''}`,
    );
  }

  /** Publishes (QoS 1) on the current connection; rejects when offline. */
  async publish(topic: string, payload: string): Promise<void> {
    const client = this.client;
    if (!client?.connected) throw new Error('not connected to the broker');
    await client.publishAsync(topic, payload, { qos: 1 });
  }

  private received(client: MqttClient, topic: string, payload: Buffer): void {
    const text = payload.toString('utf8');
    if (this.options.onPolicy?.(topic, text)) return;
    const prefix = `${this.topic}/Command/`;
    if (!topic.startsWith(prefix)) {
      this.log(`mqtt: ← ${topic} ${text.slice(0, 200)}`);
      this.emit({ type: 'message', topic, payload: text });
      return;
    }
    if (text === '') return; // a retained command being cleared
    const name = topic.slice(prefix.length);
    const body = parse(text);
    this.state.commands.push({ name, payload: body ?? text, at: new Date().toISOString() });
    this.emit({ type: 'command', name, payload: body ?? text });
    const over = this.reporter.transport === 'http' ? ' over HTTP' : '';
    switch (name) {
      case 'Ping':
        this.state.pings += 1;
        this.log(`mqtt: ← Ping → answered${over}`);
        void this.report('pong', () => this.reporter.pong());
        break;
      case 'Lock':
        this.state.locked = body?.lock === 'now';
        this.log(`mqtt: ← Lock ${text} → device ${this.state.locked ? 'LOCKED' : 'unlocked'} (simulated)`);
        // The reference agent's Lock case falls through to its Ping case.
        if (this.dialect.pongAfterLock) void this.report('pong', () => this.reporter.pong());
        break;
      case 'Inventory':
        this.log(`mqtt: ← Inventory → inventory sent${over}`);
        void this.report('inventory', () => this.reporter.inventory());
        break;
      case 'Geolocate':
        this.log(`mqtt: ← Geolocate → position sent${over}`);
        void this.report('position', () => this.reporter.position());
        break;
      case 'Wipe':
        if (body?.wipe === 'now') {
          this.state.wiped = true;
          this.log('mqtt: ← Wipe → device data ERASED (simulated; nothing was deleted)');
        }
        break;
      case 'Unenroll':
        if (body?.unenroll === 'now') {
          this.log(
            this.dialect.confirmsUnenroll
              ? 'mqtt: ← Unenroll → confirming, then leaving'
              : 'mqtt: ← Unenroll → reporting offline over HTTP, forgetting everything, leaving',
          );
          void this.report('unenrolled', () => this.reporter.unenrolled()).then(() => {
            this.state.unenrolled = true;
            return this.end('unenrolled');
          });
        }
        break;
      case 'Subscribe': {
        const topics = Array.isArray(body?.subscribe)
          ? (body.subscribe as unknown[])
              .map((entry) => (entry as { topic?: unknown })?.topic)
              .filter((t): t is string => typeof t === 'string' && t !== '')
          : [];
        const fresh = topics.filter((t) => !this.state.fleetTopics.includes(t));
        this.state.fleetTopics = topics;
        this.log(`mqtt: ← Subscribe → fleet topic(s) ${topics.join(', ') || 'none'}`);
        if (fresh.length > 0) void client.subscribeAsync(subscriptionMap(fresh.map((t) => `${t}/#`))).catch(() => {});
        break;
      }
      default:
        this.log(`mqtt: ← ${name} ${text.slice(0, 200)} (not understood by the simulator)`);
    }
  }

  private async end(reason: MqttAgentEndReason): Promise<void> {
    if (this.endReason) return;
    this.endReason = reason;
    this.stopping = true;
    this.wakeUp?.();
    const client = this.client;
    if (client?.connected) {
      try {
        if (reason === 'stopped' && this.dialect.publishesOnline) {
          await withTimeout(client.publishAsync(`${this.topic}/Status/Online`, ONLINE(false), { qos: 1, retain: true }), 3_000);
        }
        if (reason === 'stopped' && this.reporter.transport === 'http')
          await withTimeout(
            this.report('offline', () => this.reporter.online(false)),
            5_000,
          );
        await withTimeout(client.endAsync(), 3_000);
      } catch {
        client.end(true);
      }
    } else client?.end(true);
    this.state.connected = false;
    if (reason !== 'refused')
      this.log(reason === 'unenrolled' ? 'mqtt: unenrolled; disconnected' : 'mqtt: left the broker (offline)');
    this.emit({ type: 'stopped', reason });
    this.resolveFinished(reason);
  }

  /** Reads the broker's certificate once and pins it (or checks it against --fingerprint). */
  private async pin(): Promise<void> {
    const { host, port } = this.options;
    const cert = await peerCertificate(host, port);
    const seen = cert.fingerprint256;
    const expected = this.options.fingerprint?.toUpperCase();
    if (expected && normalizeFingerprint(expected) !== normalizeFingerprint(seen)) {
      throw new PinError(`the broker's certificate is not the expected one: expected SHA-256 ${expected}, got ${seen}`);
    }
    this.pinnedPem = new X509Certificate(cert.raw).toString();
    this.state.fingerprint = seen;
    this.log(`mqtt: ${expected ? 'broker certificate matches' : 'pinned the broker certificate'} SHA-256 ${seen}`);
  }

  /** TLS that trusts exactly the pinned certificate, whatever the name it was reached by. */
  private tlsOptions(): ConnectionOptions {
    const pinned = this.state.fingerprint!;
    return {
      ca: [this.pinnedPem!],
      rejectUnauthorized: true,
      allowPartialTrustChain: true,
      checkServerIdentity: (_host: string, cert: PeerCertificate) =>
        normalizeFingerprint(cert.fingerprint256) === normalizeFingerprint(pinned)
          ? undefined
          : new PinError(`the broker's certificate changed: pinned SHA-256 ${pinned}, got ${cert.fingerprint256}`),
    };
  }

  private emit(event: MqttAgentEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // a listener's problem is not the agent's
    }
  }
}

class PinError extends Error {
  override name = 'PinError';
}

function peerCertificate(host: string, port: number): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host, port, rejectUnauthorized: false, ...(isIP(host) ? {} : { servername: host }) });
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no TLS handshake from ${host}:${port}`)));
    socket.once('secureConnect', () => {
      const cert = socket.getPeerCertificate();
      socket.destroy();
      if (!cert?.raw) reject(new Error(`${host}:${port} presented no certificate`));
      else resolve(cert);
    });
    socket.once('error', reject);
  });
}

function subscriptionMap(filters: string[]): ISubscriptionMap {
  return Object.fromEntries(filters.map((topic) => [topic, { qos: 1 as const }]));
}

function normalizeFingerprint(value: string): string {
  return value.replace(/[^0-9a-f]/gi, '').toUpperCase();
}

function refusalText(code: number): string {
  return (
    (
      {
        1: 'unacceptable protocol version',
        2: 'identifier rejected',
        3: 'server unavailable',
        4: 'bad user name or password',
        5: 'not authorized',
      } as Record<number, string>
    )[code] ?? `refused with code ${code}`
  );
}

function parse(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
