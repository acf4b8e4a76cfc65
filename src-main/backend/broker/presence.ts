import type { Client } from 'aedes';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { AgentIdentity } from './acl.ts';
import { GroupWrite } from '../util/group-write.ts';
import type { BrokerAgentStore } from '../agents/broker-repository.ts';
import type { ConnectionInfo, ConnectionRegistry } from './connections.ts';

/** Ordinary traffic refreshes last_contact at most this often; presence changes write at once. */
export const TOUCH_INTERVAL_MS = 15_000;
export const ONLINE_SUBTOPIC = 'Status/Online';

type Reason = 'connected' | 'reported online' | 'will' | 'disconnected';

/** One presence change waiting for its group's transaction. */
interface Change {
  agent: AgentIdentity;
  online: boolean;
  reason: Reason;
  info: ConnectionInfo | undefined;
  /** When it happened (ms), also its last_contact. */
  now: number;
}

/**
 * is_online and last_contact of each agent. The broker's authenticated connections are the whole
 * truth (the same one a ping is checked against): online while at least one is open, offline when
 * the last one ends. `T/Status/Online` messages are signs of life, never more: an agent with no open
 * connection is never online, one with an open connection never offline, and the retained "online"
 * a clean disconnect leaves behind is replaced.
 */
export class PresenceTracker {
  private readonly store: BrokerAgentStore;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly registry: ConnectionRegistry;
  private readonly publishRetained: (topic: string, payload: string) => void;
  private readonly online = new Map<number, boolean>();
  private readonly lastWrite = new Map<number, number>();
  /** last_contact of many agents in one statement: the replies to a bulk command arrive by the thousand. */
  private readonly touches = new GroupWrite<number>((ids) => this.store.touchMany(ids, nowIso()));
  /** Last retained value of `T/Status/Online` per agent, as published through this broker. */
  private readonly retainedOnline = new Map<number, boolean>();
  /**
   * Presence changes of many agents in one transaction (a fleet reconnecting after an outage comes
   * online by the thousand): each change's row and its event, in the order the changes were made,
   * so the same agent's online and offline commit in the order they happened.
   */
  private readonly changes = new GroupWrite<Change>((batch) => this.save(batch));
  /** The last change queued per agent and not yet committed: what the next change is decided against. */
  private readonly queued = new Map<number, Change>();
  /** The last change queued (stop waits for it). */
  private lastChange: Promise<void> = Promise.resolve();
  private stopping = false;

  constructor(deps: {
    store: BrokerAgentStore;
    events: EventLog;
    work: UnitOfWork;
    registry: ConnectionRegistry;
    publishRetained: (topic: string, payload: string) => void;
  }) {
    this.store = deps.store;
    this.events = deps.events;
    this.work = deps.work;
    this.registry = deps.registry;
    this.publishRetained = deps.publishRetained;
  }

  /** Nobody is connected to a broker that is just starting: clears what a crash left behind. */
  start(): Promise<number[]> {
    return this.store.allOffline();
  }

  /** Login accepted: the agent is online. */
  async connected(client: Client, agent: AgentIdentity): Promise<void> {
    if (this.stopping || client.closed) return;
    await this.set(agent, true, 'connected', this.registry.infoOf(client));
  }

  /** A connection ended (after it was unbound); offline when it was the agent's last. */
  async closed(agent: AgentIdentity, last: boolean, info: ConnectionInfo | undefined): Promise<void> {
    if (this.stopping) return;
    if (!last && this.registry.live(agent.id).length > 0) {
      await this.touch(agent);
      return;
    }
    await this.set(agent, false, 'disconnected', info);
    if (this.retainedOnline.get(agent.id) === true) {
      // A clean DISCONNECT sends no will: the agent's retained {"online": true} would outlive it.
      this.retainedOnline.set(agent.id, false);
      this.publishRetained(`${agent.topic}/${ONLINE_SUBTOPIC}`, JSON.stringify({ online: false }));
    }
  }

  /**
   * Whether a will on `T/Status/Online` may be published: not while another connection of the
   * same agent is open (a replaced connection's will would contradict the live one).
   */
  willAllowed(agent: AgentIdentity): boolean {
    return this.registry.live(agent.id).length === 0;
  }

  /** `T/Status/Online` published by the agent itself, or its will (client already closed). */
  async reported(client: Client, agent: AgentIdentity, online: boolean | null, retained: boolean): Promise<void> {
    if (retained && online !== null) this.retainedOnline.set(agent.id, online);
    if (this.stopping) return;
    if (client.closed) {
      if (this.registry.live(agent.id).length === 0) await this.set(agent, false, 'will', this.registry.infoOf(client));
      return;
    }
    // Still connected: online, whatever the message says.
    await this.set(agent, true, 'reported online', this.registry.infoOf(client));
  }

  /**
   * `is_online` sent over HTTP (the Flyve agents' release rc.7, on every MQTT connect and disconnect):
   * recorded as the agent's own `Status/Online` is, a sign of life; its connections decide presence.
   */
  async reportedOverHttp(agent: AgentIdentity): Promise<void> {
    if (this.stopping) return;
    if (this.registry.live(agent.id).length > 0) await this.set(agent, true, 'reported online', undefined);
    else await this.touch(agent);
  }

  /** Any other sign of life: last_contact, written at most every TOUCH_INTERVAL_MS. */
  async touch(agent: AgentIdentity): Promise<void> {
    if (this.stopping) return;
    const now = Date.now();
    if (now - (this.lastWrite.get(agent.id) ?? 0) < TOUCH_INTERVAL_MS) return;
    this.lastWrite.set(agent.id, now);
    await this.touches.add(agent.id);
  }

  /** Broker stopping: every agent goes offline in one statement, not one event each. */
  async stop(): Promise<number[]> {
    this.stopping = true;
    // Changes already queued are saved first: none may land after the offline below.
    await this.lastChange.catch(() => undefined);
    const ids = [...this.online.entries()].filter(([, online]) => online).map(([id]) => id);
    const at = nowIso();
    for (const id of ids) await this.store.setPresence(id, false, at);
    this.online.clear();
    return ids;
  }

  private async set(agent: AgentIdentity, online: boolean, reason: Reason, info: ConnectionInfo | undefined): Promise<void> {
    // Decided against the last change queued for this agent (not yet saved), else what is saved:
    // a disconnect right after a connect is a change even while the connect is being written.
    const pending = this.queued.get(agent.id);
    if ((pending ? pending.online : (this.online.get(agent.id) ?? false)) === online) {
      // No change (e.g. the "online" every agent publishes right after connecting): ordinary
      // traffic, whose last_contact write is throttled like any other.
      await this.touch(agent);
      return;
    }
    const change: Change = { agent, online, reason, info, now: Date.now() };
    this.queued.set(agent.id, change);
    const saved = this.changes.add(change);
    this.lastChange = saved;
    try {
      await saved;
    } finally {
      if (this.queued.get(agent.id) === change) this.queued.delete(agent.id);
    }
  }

  /** One group of changes in one transaction; memory follows only once it has committed. */
  private async save(batch: Change[]): Promise<void> {
    await this.work.run(async () => {
      for (const { agent, online, reason, info, now } of batch) {
        const at = new Date(now).toISOString();
        const how = info ? ` (${info.protocol}${info.tls ? ' over TLS' : ''} from ${info.address ?? 'unknown address'})` : '';
        const text: Record<Reason, string> = {
          connected: `${agent.name} is online${how}`,
          'reported online': `${agent.name} reported itself online`,
          will: `${agent.name} is offline: connection lost${how}`,
          disconnected: `${agent.name} is offline: disconnected${how}`,
        };
        await this.store.setPresence(agent.id, online, at);
        await this.events.record(
          online ? 'agent.online' : 'agent.offline',
          text[reason],
          { entityId: agent.entityId, agentId: agent.id },
          {
            reason,
            last_contact: at,
            ...(info ?? {}),
          },
        );
      }
    });
    // Only once saved (a full disk throws above): memory never says what the database does not.
    // In the batch's order, so an agent's last change is what memory keeps.
    for (const { agent, online, now } of batch) {
      this.lastWrite.set(agent.id, now);
      this.online.set(agent.id, online);
    }
  }
}

/** `{"online": true|false}`; anything else is no statement about presence. */
export function onlineFlag(payload: Buffer): boolean | null {
  try {
    const value = JSON.parse(payload.toString('utf8')) as { online?: unknown } | null;
    return typeof value?.online === 'boolean' ? value.online : null;
  } catch {
    return null;
  }
}
