// Released Flyve agents (2.0.0-rc.6, rc.7) subscribe only in the success callback of their own
// connect(). When the broker restarts, Paho's automatic reconnect brings them back with a clean
// session and nobody subscribes again: they say they are online but receive nothing. So an agent
// connection that has not subscribed to its own topic shortly after its CONNACK is subscribed by
// the broker, to what the agent would have subscribed to.
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

export interface ResubscribeOptions {
  graceMs?: number;
  /** Subscribes the connection server-side (through the broker's ACL); resolves with the granted filters. */
  subscribe(client: Client, filters: string[]): Promise<string[]>;
  /** Told once per connection the broker subscribed. */
  subscribed(client: Client, agent: AgentIdentity, filters: string[]): void;
}

export class ResubscribeGuard {
  private readonly graceMs: number;
  private readonly timers = new Map<Client, NodeJS.Timeout>();
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
    const timer = setTimeout(() => {
      this.timers.delete(client);
      if (client.closed) return;
      this.delivered.set(client, new Map());
      void this.options.subscribe(client, agentFilters(agent)).then(
        (granted) => {
          if (granted.length > 0 && !client.closed) this.options.subscribed(client, agent, granted);
        },
        () => {},
      );
    }, this.graceMs);
    timer.unref();
    this.timers.set(client, timer);
  }

  /** A SUBSCRIBE of the agent's own: one to its topic means it looks after itself. */
  clientSubscribed(client: Client, agent: AgentIdentity, grantedFilters: string[]): void {
    const timer = this.timers.get(client);
    if (timer && grantedFilters.some((filter) => filter.startsWith(`${agent.topic}/`))) {
      clearTimeout(timer);
      this.timers.delete(client);
    }
  }

  closed(client: Client): void {
    const timer = this.timers.get(client);
    if (timer) clearTimeout(timer);
    this.timers.delete(client);
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
  }
}
