// An agent's connection from its accepted login to its close: bound to the agent (connections.ts),
// online (presence.ts), subscribed for it if it forgets (resubscribe.ts), counted against the
// connection cap. aedes' `clientReady` and `ping` events and the socket's close come here.
import type { Client } from 'aedes';
import type { BrokerAgentRow } from '../../agents/broker-repository.ts';
import { unlessDiskFull } from '../../db/disk-full.ts';
import type { BrokerConnections } from '../connection-cap.ts';
import { connectionInfo, type ConnectionRegistry } from '../connections.ts';
import type { PresenceTracker } from '../presence.ts';
import type { ResubscribeGuard } from '../resubscribe.ts';

export interface ClientLifecycleOptions {
  registry: ConnectionRegistry;
  presence: PresenceTracker;
  resubscribe: ResubscribeGuard;
  /** The listeners' connections (and their cap), once they exist. */
  connections: () => BrokerConnections | undefined;
}

export class ClientLifecycle {
  private readonly options: ClientLifecycleOptions;

  constructor(options: ClientLifecycleOptions) {
    this.options = options;
  }

  /**
   * The login is accepted (authenticate.ts): the connection is the agent's, online from now on,
   * before the CONNACK goes out and whether or not the agent ever publishes Status/Online. Throws
   * (the connection bound to nobody) when that cannot be saved.
   */
  async loggedIn(client: Client, agent: BrokerAgentRow): Promise<void> {
    const { registry, presence } = this.options;
    // Client ids are scoped to their agent: one agent's id can never take over another's connection.
    const clientId = client.id;
    (client as { id: string }).id = `${agent.id}|${clientId}`;
    const identity = registry.bind(client, agent, connectionInfo(client, clientId));
    // `on`, not `once`: a socket closes once, and `once` would add a wrapper and its state per client.
    client.conn.on('close', () => this.closed(client));
    try {
      await presence.connected(client, identity);
      this.options.connections()?.loggedIn(client.conn as { remoteAddress?: string; remotePort?: number; localPort?: number });
    } catch (error) {
      registry.unbind(client);
      throw error;
    }
  }

  /** aedes' `clientReady`: the CONNACK is out; the agent has a grace period to subscribe. */
  ready(client: Client): void {
    const agent = this.options.registry.identityOf(client);
    if (agent) this.options.resubscribe.ready(client, agent);
  }

  /** aedes' `ping`: a sign of life. */
  ping(client: Client): void {
    const agent = this.options.registry.identityOf(client);
    if (agent) unlessDiskFull(() => this.options.presence.touch(agent));
  }

  /** The socket closed: offline when it was the agent's last connection. */
  closed(client: Client): void {
    const { registry, presence, resubscribe } = this.options;
    resubscribe.closed(client);
    const info = registry.infoOf(client);
    const unbound = registry.unbind(client);
    if (unbound) unlessDiskFull(() => presence.closed(unbound.identity, unbound.last, info));
  }
}
