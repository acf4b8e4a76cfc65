/**
 * The node registry: every `serve` process on one database has a row in `nodes` (its name, where
 * it answers, its version and MQTT broker, when it started, its last heartbeat). A node joins at
 * start, heartbeats every few seconds and marks itself stopped when it closes cleanly.
 *
 * A node is live (the console's status, the refusals at join) while its heartbeat is recent and,
 * on PostgreSQL, while its session holds its name's advisory lock: the database releases that lock
 * the moment the process dies, so a node killed with `kill -9` stops counting at once (and may be
 * started again under the same name at once), whereas a second process under a running node's name
 * is refused. The jobs sweeper asks `runningNames` instead (heartbeat only, and never this node): a
 * lock's connection that drops alone must not cost a running node its jobs. On SQLite there is one
 * node per database (the data dir's lock), so every other row is a past one.
 *
 * Refusals at join, one after the other across nodes joining at once (a transaction lock):
 * - a name held by a running node;
 * - the embedded MQTT broker serves the agents of one node only: a node refuses to start next to
 *   a live node that runs it, and a node that would run it refuses to start next to any live node.
 *   A single node on PostgreSQL may run it.
 */
import packageJson from '../../../package.json' with { type: 'json' };
import type { ClusterNode } from '../../../src-shared/contract/index.ts';
import { StartupError } from '../startup-error.ts';
import type { SessionLock } from '../db/session-locks.ts';
import type { NodeFields, NodeRepository, NodeRow } from './repository.ts';

/** The MDM Console version this node runs. */
export const VERSION: string = packageJson.version;

export interface NodeTiming {
  /** How often a node writes its heartbeat (default 2 s). */
  heartbeatMs: number;
  /** How old a heartbeat may be for its node to count as live (default 10 s). */
  liveMs: number;
}

export const DEFAULT_NODE_TIMING: NodeTiming = { heartbeatMs: 2_000, liveMs: 10_000 };

export interface NodeAddress {
  adminUrl: string;
  agentUrl: string;
}

export interface NodeRegistryOptions {
  repository: NodeRepository;
  name: string;
  /** embedded, mosquitto or rabbitmq. */
  brokerMode: string;
  timing?: Partial<NodeTiming>;
  /**
   * Tests running several nodes on one database, each with its own embedded broker
   * (their agents connect to each node's own): the broker refusals are off. `serve` never sets it.
   */
  embeddedBrokerPerNode?: boolean;
  /** Told when a heartbeat fails (the database unreachable for a while), once until one succeeds again. */
  onProblem?: (message: string) => void;
}

const since = (iso: string, now: number) => Math.max(0, Math.round((now - Date.parse(iso)) / 1000));

export class NodeRegistry {
  readonly name: string;
  private readonly repository: NodeRepository;
  private readonly brokerMode: string;
  private readonly embeddedBrokerPerNode: boolean;
  private readonly timing: NodeTiming;
  private readonly onProblem: (message: string) => void;
  private id: number | null = null;
  private lock: SessionLock | null = null;
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private failing = false;

  constructor(options: NodeRegistryOptions) {
    this.repository = options.repository;
    this.name = options.name;
    this.brokerMode = options.brokerMode;
    this.embeddedBrokerPerNode = options.embeddedBrokerPerNode ?? false;
    this.timing = { ...DEFAULT_NODE_TIMING, ...options.timing };
    this.onProblem = options.onProblem ?? (() => {});
  }

  /** Registers this node as running at `address`, or refuses with a StartupError saying why. */
  async join(address: NodeAddress): Promise<void> {
    const fields = (): NodeFields => {
      const now = new Date().toISOString();
      return {
        name: this.name,
        admin_url: address.adminUrl,
        agent_url: address.agentUrl,
        version: VERSION,
        broker_mode: this.brokerMode,
        started_at: now,
        last_heartbeat: now,
      };
    };
    const { id, created } = await this.repository.ensure(fields());
    const lock = await this.repository.holdName(id);
    if (!lock) {
      const running = (await this.repository.list()).find((row) => row.id === id);
      throw new StartupError(
        `Another node named "${this.name}" is running on this database${running ? ` (admin ${running.admin_url}, heard from ${since(running.last_heartbeat, Date.now())} s ago)` : ''}: give this one another name with --node-name NAME (or MDM_CONSOLE_NODE_NAME).`,
        { code: 'ENODENAME', option: 'nodeName' },
      );
    }
    try {
      await this.repository.joining(async () => {
        const others = this.embeddedBrokerPerNode ? [] : (await this.liveRows()).filter((row) => row.id !== id);
        const embedded = others.find((row) => row.broker_mode === 'embedded');
        if (embedded) {
          throw new StartupError(
            `Node "${embedded.name}" (admin ${embedded.admin_url}) is running on this database with the embedded MQTT broker, which serves one node only: stop it, or restart it with --mqtt-broker mosquitto|rabbitmq, before starting node "${this.name}".`,
            { code: 'ENODEBROKER', option: 'mqttBroker' },
          );
        }
        if (this.brokerMode === 'embedded' && others.length > 0) {
          const names = others.map((row) => `"${row.name}" (admin ${row.admin_url})`).join(', ');
          throw new StartupError(
            `Node${others.length > 1 ? 's' : ''} ${names} ${others.length > 1 ? 'are' : 'is'} running on this database: several nodes need an external MQTT broker, and the embedded one serves one node only. Start every node with --mqtt-broker mosquitto|rabbitmq --mqtt-broker-url URL, or stop the others.`,
            { code: 'ENODEBROKER', option: 'mqttBroker' },
          );
        }
        await this.repository.start(id, fields());
      });
    } catch (error) {
      // A node refused at its first start leaves no row (this process holds the name: nobody else uses it).
      if (created) await this.repository.forget(id).catch(() => {});
      await lock.release();
      throw error;
    }
    this.id = id;
    this.lock = lock;
    this.timer = setInterval(() => {
      this.beating ??= this.beat().finally(() => {
        this.beating = null;
      });
    }, this.timing.heartbeatMs);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    if (this.id === null) return;
    try {
      // The lock's connection broke (the database restarted, or ended that session while this side
      // still thinks it open): take the name again.
      if (this.lock && (!this.lock.held() || !(await this.repository.heldIds())?.has(this.id))) {
        const again = await this.repository.holdName(this.id);
        if (again) {
          // The old session is gone for the database; its socket may still wait for an answer.
          this.lock.abandon();
          this.lock = again;
        } else {
          this.onProblem(
            `another process now runs as node "${this.name}" on this database (this node lost its connection to it for a while)`,
          );
        }
      }
      await this.repository.heartbeat(this.id, new Date().toISOString());
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.onProblem(`the node's heartbeat could not be written: ${(error as Error).message}`);
      this.failing = true;
    }
  }

  /** The rows of the running nodes. */
  private async liveRows(): Promise<NodeRow[]> {
    const [rows, held] = await Promise.all([this.repository.list(), this.repository.heldIds()]);
    const now = Date.now();
    return rows.filter((row) => this.isLive(row, held, now));
  }

  private isLive(row: NodeRow, held: Set<number> | null, now: number): boolean {
    if (row.stopped_at !== null) return false;
    if (now - Date.parse(row.last_heartbeat) > this.timing.liveMs) return false;
    // SQLite: only this process can run on the database.
    return held === null ? row.id === this.id : held.has(row.id);
  }

  /**
   * The names of the nodes that may still be running work, for the jobs sweeper (which marks the
   * jobs of every other node interrupted): this node itself, and every node not stopped whose
   * heartbeat is under `liveMs` old. The name's lock is left out on purpose: its connection can
   * drop while the node runs on (a database restart, a proxy), and a node's jobs must not be taken
   * from it for that; a node killed with `kill -9` loses its jobs once its heartbeat is stale.
   */
  async runningNames(): Promise<string[]> {
    const now = Date.now();
    const rows = await this.repository.list();
    const names = rows
      .filter((row) => row.stopped_at === null && now - Date.parse(row.last_heartbeat) <= this.timing.liveMs)
      .map((row) => row.name);
    return names.includes(this.name) ? names : [...names, this.name];
  }

  /** Every registered node, by name, with whether it runs now. */
  async list(): Promise<ClusterNode[]> {
    const [rows, held] = await Promise.all([this.repository.list(), this.repository.heldIds()]);
    const now = Date.now();
    return rows.map((row) => ({
      name: row.name,
      admin_url: row.admin_url,
      agent_url: row.agent_url,
      version: row.version,
      mqtt_broker: row.broker_mode,
      started_at: row.started_at,
      last_heartbeat: row.last_heartbeat,
      stopped_at: row.stopped_at,
      live: this.isLive(row, held, now),
      this_node: row.id === this.id,
    }));
  }

  /** Marks this node stopped and lets its name go. */
  async leave(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
    const id = this.id;
    this.id = null;
    try {
      if (id !== null) await this.repository.stop(id, new Date().toISOString());
    } finally {
      await this.lock?.release();
      this.lock = null;
    }
  }
}
