// Released Flyve agents (2.0.0-rc.6, rc.7) subscribe only in the success callback of their own
// connect(). When the broker restarts, Paho's automatic reconnect brings them back with a clean
// session and nobody subscribes again: they say they are online but receive nothing. So an agent
// connection that has not subscribed to its own topic shortly after its CONNACK is subscribed by
// the broker, to what the agent would have subscribed to.
// Release rc.7 also loses its fleet subscription on its first connection (it subscribes to `T/#`,
// then never to the fleet topic its retained Command/Subscribe names): a connection subscribed to
// its own topic but not to its fleet's within the same grace is subscribed to the fleet's.
import type { Client } from 'aedes';
import { fleetTopic, type AgentIdentity } from './acl.ts';

/** Long enough for an agent's own SUBSCRIBE over a slow mobile link; short enough for an admin waiting on a ping. */
export const DEFAULT_RESUBSCRIBE_GRACE_MS = 3_000;

/**
 * Flyve's MqttModel: `T/#` and `FlyvemdmManifest/Status/Version` after connecting, `<fleet>/#` once
 * a Command/Subscribe names the fleet. QoS 0, as the agent asks (a later SUBSCRIBE of its own then
 * finds the same subscription, and nothing is delivered twice live).
 */
export function agentFilters(agent: AgentIdentity): string[] {
  return [`${agent.topic}/#`, `${fleetTopic(agent.entityId, agent.fleetId)}/#`, 'FlyvemdmManifest/Status/Version'];
}

/** Whether a filter the agent subscribed with covers the topic `base` and what is under it. */
const covers = (filter: string, base: string): boolean => filter === `${base}/#` || filter.startsWith(`${base}/`);

/** What the broker subscribes an agent connection to when the grace is over: what it left out. */
export function missingFilters(agent: AgentIdentity, subscribed: readonly string[]): string[] {
  const fleet = fleetTopic(agent.entityId, agent.fleetId);
  const own = subscribed.some((filter) => covers(filter, agent.topic));
  const ofFleet = subscribed.some((filter) => covers(filter, fleet));
  return agentFilters(agent).filter((filter) => (covers(filter, fleet) ? !ofFleet : !own));
}

export interface ResubscribeOptions {
  graceMs?: number;
  /** Subscribes the connection server-side (through the broker's ACL); resolves with the granted filters. */
  subscribe(client: Client, filters: string[]): Promise<string[]>;
  /** Told once per connection the broker subscribed; `why` says what the agent had left out. */
  subscribed(client: Client, agent: AgentIdentity, filters: string[], why: string): void;
}

export class ResubscribeGuard {
  private readonly graceMs: number;
  private readonly timers = new Map<Client, NodeJS.Timeout>();
  /** Connections in their grace → the filters the agent subscribed with so far. */
  private readonly own = new Map<Client, string[]>();
  /** Connections the broker subscribed → the retained messages already delivered to them (topic → payload). */
  private readonly delivered = new WeakMap<Client, Map<string, Buffer>>();

  private readonly options: ResubscribeOptions;

  constructor(options: ResubscribeOptions) {
    this.options = options;
    this.graceMs = options.graceMs ?? DEFAULT_RESUBSCRIBE_GRACE_MS;
  }

  /** After the CONNACK: the agent has graceMs to subscribe to its own topic. */
  ready(client: Client, agent: AgentIdentity): void {
    if (this.timers.has(client) || this.delivered.has(client)) return;
    this.own.set(client, []);
    const timer = setTimeout(() => {
      this.timers.delete(client);
      const subscribed = this.own.get(client) ?? [];
      this.own.delete(client);
      if (client.closed) return;
      const missing = missingFilters(agent, subscribed);
      if (missing.length === 0) return;
      const why =
        subscribed.length === 0
          ? 'connected without subscribing'
          : `subscribed without its ${missing.some((filter) => filter.startsWith(`${agent.topic}/`)) ? 'own' : "fleet's"} topic`;
      this.delivered.set(client, new Map());
      void this.options.subscribe(client, missing).then(
        (granted) => {
          if (granted.length > 0 && !client.closed) this.options.subscribed(client, agent, granted, why);
        },
        () => {},
      );
    }, this.graceMs);
    timer.unref();
    this.timers.set(client, timer);
  }

  /** A SUBSCRIBE of the agent's own: to its topic and its fleet's, it looks after itself. */
  clientSubscribed(client: Client, agent: AgentIdentity, grantedFilters: string[]): void {
    const timer = this.timers.get(client);
    const subscribed = this.own.get(client);
    if (!timer || !subscribed) return;
    subscribed.push(...grantedFilters);
    if (missingFilters(agent, subscribed).length === 0) {
      clearTimeout(timer);
      this.timers.delete(client);
      this.own.delete(client);
    }
  }

  closed(client: Client): void {
    const timer = this.timers.get(client);
    if (timer) clearTimeout(timer);
    this.timers.delete(client);
    this.own.delete(client);
  }

  /**
   * Whether a message may go to the connection: false for a retained message it already received
   * with the same payload, replayed because the agent subscribed itself after the broker did (a
   * retained Lock or Wipe must not be acted on twice). Other connections are not concerned.
   */
  mayDeliver(client: Client, packet: { topic: string; payload: Buffer | string; retain?: boolean }): boolean {
    const seen = this.delivered.get(client);
    if (!seen || !packet.retain) return true;
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const before = seen.get(packet.topic);
    if (before && before.equals(payload)) return false;
    seen.set(packet.topic, payload);
    return true;
  }

  stop(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.own.clear();
  }
}
