// How the simulated agent reports: over MQTT (the spec's agent, Flyve release rc.6) with
// `T/Status/…` messages, or over HTTP (Flyve release rc.7) with PUT of its own agent record and
// POST of a position, in a session opened with its api_token. dialect.ts chooses.
import type { MqttClient } from 'mqtt';
import { AgentApiError } from './api-client.ts';
import type { Dialect } from './dialect.ts';
import { startAgentSession } from './enroll.ts';
import type { AgentApiClient } from './api-client.ts';
import { fakeInventoryXml, fakePosition, type InventoryPackage } from './inventory.ts';

/** What the device installed, listed in each inventory it sends (policies.ts keeps it). */
export type InstalledList = () => readonly InventoryPackage[];
const NOTHING: InstalledList = () => [];

export interface ReportingDevice {
  serial: string;
  uuid: string;
  type: string;
  /** The Android version its inventory reports (default: one per serial). */
  androidVersion?: string;
}

/** What HTTP reports need: the agent's record id and api_token, and where the API is. */
export interface HttpReportTarget {
  backendUrl: string;
  apiToken: string;
  agentId: string | number;
  computersId?: number;
}

export interface Reporter {
  readonly transport: 'mqtt' | 'http';
  online(online: boolean): Promise<void>;
  pong(): Promise<void>;
  inventory(): Promise<void>;
  position(): Promise<void>;
  unenrolled(): Promise<void>;
}

export function reporterFor(
  dialect: Dialect,
  context: {
    client: () => MqttClient | null;
    topic: string;
    device: ReportingDevice;
    http?: HttpReportTarget;
    timeoutMs?: number;
    installed?: InstalledList;
  },
): Reporter {
  const installed = context.installed ?? NOTHING;
  if (dialect.reports === 'http') {
    if (!context.http) throw new Error('HTTP reports need the agent id and api_token');
    return new HttpReporter(dialect, context.http, context.device, installed, context.timeoutMs);
  }
  return new MqttReporter(context.client, context.topic, context.device, installed);
}

class MqttReporter implements Reporter {
  readonly transport = 'mqtt' as const;
  private readonly client: () => MqttClient | null;
  private readonly topic: string;
  private readonly device: ReportingDevice;
  private readonly installed: InstalledList;

  constructor(client: () => MqttClient | null, topic: string, device: ReportingDevice, installed: InstalledList) {
    this.client = client;
    this.topic = topic;
    this.device = device;
    this.installed = installed;
  }

  private async publish(subtopic: string, message: string, retain = false): Promise<void> {
    const client = this.client();
    if (!client?.connected) throw new Error('not connected to the broker');
    await client.publishAsync(`${this.topic}/Status/${subtopic}`, message, { qos: 1, retain });
  }

  online(online: boolean) {
    return this.publish('Online', JSON.stringify({ online }), true);
  }
  pong() {
    return this.publish('Ping', '!');
  }
  inventory() {
    return this.publish('Inventory', fakeInventoryXml(this.device, this.installed()));
  }
  position() {
    const { latitude, longitude } = fakePosition(this.device.serial);
    return this.publish('Geolocation', JSON.stringify({ latitude, longitude, datetime: Math.floor(Date.now() / 1000) }));
  }
  unenrolled() {
    return this.publish('Unenroll', JSON.stringify({ unenroll: 'unenrolled' }));
  }
}

class HttpReporter implements Reporter {
  readonly transport = 'http' as const;
  private readonly dialect: Dialect;
  private readonly target: HttpReportTarget;
  private readonly device: ReportingDevice;
  private readonly timeoutMs: number | undefined;
  private readonly installed: InstalledList;
  private session: Promise<AgentApiClient> | null = null;

  constructor(dialect: Dialect, target: HttpReportTarget, device: ReportingDevice, installed: InstalledList, timeoutMs?: number) {
    this.dialect = dialect;
    this.target = target;
    this.device = device;
    this.installed = installed;
    this.timeoutMs = timeoutMs;
  }

  /** A session from the api_token, opened once and again when it is refused (as the agent's getActiveSessionToken does). */
  private async send(run: (client: AgentApiClient) => Promise<unknown>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      this.session ??= startAgentSession(this.target.backendUrl, this.target.apiToken, {
        dialect: this.dialect,
        ...(this.timeoutMs === undefined ? {} : { timeoutMs: this.timeoutMs }),
      });
      try {
        await run(await this.session);
        return;
      } catch (error) {
        this.session = null;
        if (attempt === 0 && error instanceof AgentApiError && error.status === 401) continue;
        throw error;
      }
    }
  }

  online(online: boolean) {
    return this.send((client) => client.updateAgent(this.target.agentId, { is_online: online }));
  }
  pong() {
    return this.send((client) => client.updateAgent(this.target.agentId, { _pong: '!' }));
  }
  inventory() {
    const xml = fakeInventoryXml(this.device, this.installed());
    return this.send((client) =>
      client.updateAgent(this.target.agentId, { _inventory: Buffer.from(xml, 'utf8').toString('base64') }),
    );
  }
  position() {
    const { latitude, longitude } = fakePosition(this.device.serial);
    return this.send((client) =>
      client.postGeolocation({
        latitude: String(latitude),
        longitude: String(longitude),
        _datetime: Math.floor(Date.now() / 1000),
        _agents_id: Number(this.target.agentId),
        ...(this.target.computersId === undefined ? {} : { computers_id: this.target.computersId }),
      }),
    );
  }
  /** Release rc.7 does not confirm an unenroll: it reports itself offline and forgets everything. */
  unenrolled() {
    return this.online(false);
  }
}
