// Deployments' retained policies on an external broker. The backend keeps what it published, so
// that what a broker may have lost is given again: everything after the backend's (re)connection
// (a restarted Mosquitto without persistence, another RabbitMQ node), and on RabbitMQ, where a
// retained message lives on one node only, an agent's policies each time it says it is online.
import { fleetTopic, type AgentIdentity } from './acl.ts';
import type { PolicyPublisher } from './port.ts';

/** Agents of one fleet coming online within this time share one re-publish of the fleet's policies. */
const FLEET_REPUBLISH_DELAY_MS = 300;

export class RetainedPolicies implements PolicyPublisher {
  /** Live policies: topic → payload. */
  private readonly live = new Map<string, string>();
  /** Policies cleared while the broker was unreachable: cleared again on reconnection. */
  private readonly clearedOffline = new Set<string>();
  /** Fleet policy prefixes waiting for their (shared) re-publish. */
  private readonly dueFleets = new Map<string, NodeJS.Timeout>();
  private readonly publish: (topic: string, payload: string, retain: boolean) => Promise<void>;
  private readonly isConnected: () => boolean;
  private readonly listRetained: (prefix: string) => Promise<string[]>;
  private source: (() => Promise<Array<{ topic: string; payload: string }> | null>) | null = null;

  constructor(
    publish: (topic: string, payload: string, retain: boolean) => Promise<void>,
    isConnected: () => boolean,
    listRetained: (prefix: string) => Promise<string[]> = () => Promise.resolve([]),
  ) {
    this.publish = publish;
    this.isConnected = isConnected;
    this.listRetained = listRetained;
  }

  /** What the broker retains under `prefix/` (a one-off subscription of the backend's link). */
  retainedTopicsUnder(prefix: string): Promise<string[]> {
    return this.listRetained(prefix);
  }

  async publishRetained(topic: string, payload: string): Promise<void> {
    if (payload === '') {
      this.live.delete(topic);
      if (!this.isConnected()) this.clearedOffline.add(topic);
    } else {
      this.live.set(topic, payload);
      this.clearedOffline.delete(topic);
    }
    await this.publish(topic, payload, true);
  }

  /** Where `restoreAll` reads the policies to publish again (server.ts: the database, on the `policy-republish` duty's holder). */
  restoreFrom(source: () => Promise<Array<{ topic: string; payload: string }> | null>): void {
    this.source = source;
  }

  /**
   * After the backend's (re)connection: the clearings the broker missed, then every live policy:
   * with a source, those it gives (the database's: what another node removed is not published
   * again from this node's memory), none when it answers null; without one, those this node knows.
   */
  async restoreAll(): Promise<void> {
    for (const topic of [...this.clearedOffline]) {
      await this.publish(topic, '', true);
      this.clearedOffline.delete(topic);
    }
    if (this.source) {
      const active = await this.source();
      if (active === null) return;
      this.live.clear();
      for (const { topic, payload } of active) this.live.set(topic, payload);
    }
    for (const [topic, payload] of [...this.live]) await this.publish(topic, payload, true);
  }

  /**
   * An agent came online (it has subscribed): its own policies at once; its fleet's after a short
   * wait shared by every agent of the fleet arriving meanwhile (each fleet message reaches the
   * whole fleet, so a burst of logins must not multiply it).
   */
  republishFor(agent: AgentIdentity): void {
    const own = `${agent.topic}/Policy/`;
    for (const [topic, payload] of this.live) if (topic.startsWith(own)) void this.publish(topic, payload, true).catch(() => {});
    const fleet = `${fleetTopic(agent.entityId, agent.fleetId)}/Policy/`;
    if (this.dueFleets.has(fleet) || ![...this.live.keys()].some((topic) => topic.startsWith(fleet))) return;
    const timer = setTimeout(() => {
      this.dueFleets.delete(fleet);
      for (const [topic, payload] of this.live)
        if (topic.startsWith(fleet)) void this.publish(topic, payload, true).catch(() => {});
    }, FLEET_REPUBLISH_DELAY_MS);
    timer.unref();
    this.dueFleets.set(fleet, timer);
  }

  close(): void {
    for (const timer of this.dueFleets.values()) clearTimeout(timer);
    this.dueFleets.clear();
  }
}
