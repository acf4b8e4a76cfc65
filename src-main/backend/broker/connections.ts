import type { Client } from 'aedes';
import type { TLSSocket } from 'node:tls';
import type { AgentIdentity } from './acl.ts';
import type { BrokerAgentRow } from '../agents/broker-repository.ts';

/** How one connection came in; shown in presence events. */
export interface ConnectionInfo {
  client_id: string;
  address: string | null;
  protocol: 'MQTT 3.1' | 'MQTT 3.1.1';
  tls: boolean;
}

/**
 * Which connection belongs to which agent. All connections of one agent share one identity
 * object, so a fleet move reaches every one of them at once.
 */
export class ConnectionRegistry {
  private readonly identityByClient = new WeakMap<Client, AgentIdentity>();
  private readonly infoByClient = new WeakMap<Client, ConnectionInfo>();
  private readonly identities = new Map<number, AgentIdentity>();
  /** An agent's connections: an array (one connection, most of the time, costs less than in a Set). */
  private readonly clients = new Map<number, Client[]>();

  bind(client: Client, row: BrokerAgentRow, info: ConnectionInfo): AgentIdentity {
    const fields = { id: row.id, entityId: row.entity_id, fleetId: row.fleet_id, topic: row.topic, name: row.name };
    let identity = this.identities.get(row.id);
    if (identity) Object.assign(identity, fields);
    else {
      identity = fields;
      this.identities.set(row.id, identity);
    }
    this.identityByClient.set(client, identity);
    this.infoByClient.set(client, info);
    const list = this.clients.get(row.id);
    if (!list) this.clients.set(row.id, [client]);
    else if (!list.includes(client)) list.push(client);
    return identity;
  }

  identityOf(client: Client | null | undefined): AgentIdentity | undefined {
    return client ? this.identityByClient.get(client) : undefined;
  }

  infoOf(client: Client): ConnectionInfo | undefined {
    return this.infoByClient.get(client);
  }

  /** Forgets a closed connection; `last` when its agent has no other connection left. */
  unbind(client: Client): { identity: AgentIdentity; last: boolean } | undefined {
    const identity = this.identityByClient.get(client);
    if (!identity) return undefined;
    const list = this.clients.get(identity.id);
    const at = list?.indexOf(client) ?? -1;
    if (!list || at < 0) return undefined;
    list.splice(at, 1);
    const last = list.length === 0;
    if (last) {
      this.clients.delete(identity.id);
      this.identities.delete(identity.id);
    }
    return { identity, last };
  }

  /** Open connections of an agent (a closing one no longer counts). */
  live(agentId: number): Client[] {
    return (this.clients.get(agentId) ?? []).filter((client) => !client.closed);
  }

  /** The identity of an agent with at least one connection. */
  identity(agentId: number): AgentIdentity | undefined {
    return this.identities.get(agentId);
  }

  /** Agents with at least one open connection, and open connections in all. */
  counts(): { agents: number; connections: number } {
    let agents = 0;
    let connections = 0;
    for (const list of this.clients.values()) {
      let open = 0;
      for (const client of list) if (!client.closed) open += 1;
      if (open > 0) agents += 1;
      connections += open;
    }
    return { agents, connections };
  }

  allClients(): Client[] {
    return [...this.clients.values()].flat();
  }
}

export function connectionInfo(client: Client, clientId: string): ConnectionInfo {
  const socket = client.conn as Partial<TLSSocket>;
  return {
    client_id: clientId,
    address: socket.remoteAddress ?? null,
    protocol: client.version === 3 ? 'MQTT 3.1' : 'MQTT 3.1.1',
    tls: socket.encrypted === true,
  };
}
