// What the two external modes (mosquitto, rabbitmq) present alike: one MqttBroker face over an
// ExternalLink, whose status and shutdown differ only in what each mode adds.
import type { DeviceReports } from '../agents/reports.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FleetService } from '../fleets/fleets.ts';
import type { BrokerAgentStore } from '../agents/broker-repository.ts';
import type { BrokerUrl } from './broker-url.ts';
import type { AgentAccounts } from './agent-accounts.ts';
import { AgentCommands } from './commands.ts';
import { externalLiveReports, type ExternalLink } from './external-link.ts';
import type { AgentEndpoint, BrokerStatus, MqttBroker, TaskReportHandler } from './port.ts';
import { RetainedPolicies } from './retained-policies.ts';
import { IngestSession, type IngestOptions } from './ingest.ts';

/** What both external modes are started with; each says what its `brokerUrl` account is. */
export interface ExternalModeOptions {
  agents: BrokerAgentStore;
  events: EventLog;
  work: UnitOfWork;
  fleets: FleetService;
  reports: DeviceReports;
  brokerUrl: string;
  /**
   * The password of the broker URL's account, given apart from the URL (a file, the environment)
   * so it is not on a command line; it replaces the URL's.
   */
  brokerPassword?: string | undefined;
  /** Where agents reach the broker, when not by the broker URL's name. */
  publicUrl?: string | undefined;
  caFile?: string | undefined;
  /** Task status reports the agents publish (read by the ingest session). */
  onTaskReport?: TaskReportHandler | undefined;
  /** The duties of the nodes on one database: the ingest session is held by one node (default: this one). */
  duties?: IngestDuties | undefined;
}

/** Of cluster/duties.ts, what the ingest session needs: run while this node holds a lease. */
export interface IngestDuties {
  whileHeld(name: string, start: () => unknown, stop: () => unknown): () => Promise<void>;
}

/** The duty whose holder reads what agents report (ingest.ts). */
export const INGEST_DUTY = 'mqtt-ingest';

export interface ExternalBrokerParts {
  mode: 'mosquitto' | 'rabbitmq';
  url: BrokerUrl;
  endpoint: AgentEndpoint;
  link: ExternalLink;
  store: BrokerAgentStore;
  commands: AgentCommands;
  policies: RetainedPolicies;
}

/**
 * The commands and retained policies of an external mode, both published over its link (the
 * backend's own account). An agent's rights follow its fleet move as the mode's `accounts` say.
 */
export function commandsOverLink(
  link: ExternalLink,
  options: ExternalModeOptions,
  accounts: Pick<AgentAccounts, 'moved'>,
): { commands: AgentCommands; policies: RetainedPolicies } {
  const publish = (topic: string, payload: string, retain: boolean) => link.publish(topic, payload, retain);
  const policies = new RetainedPolicies(
    publish,
    () => link.connected,
    (prefix) => link.retainedTopicsUnder(prefix),
  );
  const commands = new AgentCommands({
    store: options.agents,
    events: options.events,
    work: options.work,
    fleets: options.fleets,
    reports: options.reports,
    publisher: { publish },
    links: {
      isConnected: (agentId) => link.isOnline(agentId),
      fleetChanged: (agentId, fleetId) => accounts.moved(agentId, fleetId),
    },
  });
  return { commands, policies };
}

type SharedFace = Omit<MqttBroker, 'credentialsIssued' | 'status' | 'close'>;

/** The members both external modes fill the same way: agents reach `endpoint`, all goes through `link`. */
export function externalBrokerFace({ mode, endpoint, link, store, commands, policies }: ExternalBrokerParts): SharedFace {
  return {
    mode,
    port: endpoint.tls ? 0 : endpoint.port,
    tlsPort: endpoint.tls ? endpoint.port : 0,
    certificate: null,
    commands,
    policies,
    liveReports: externalLiveReports(store, commands),
    publish: (topic, payload, publishOptions) => link.publish(topic, payload, publishOptions?.retain ?? false),
    retained: (topic) => link.retained(topic),
    agentEndpoint: () => endpoint,
  };
}

/** Status of an external mode; `connected`/`problem` are the link's unless the mode knows worse. */
export function externalBrokerStatus(
  { mode, url, endpoint, link }: ExternalBrokerParts,
  connected: boolean,
  problem: string | null,
): BrokerStatus {
  return {
    mode,
    connected,
    problem,
    url: url.display,
    port: endpoint.port,
    tls_port: endpoint.tls ? endpoint.port : 0,
    connected_agents: link.onlineAgents(),
    connections: link.onlineAgents(),
    tls: null,
  };
}

/**
 * The ingest session (ingest.ts), held by this node while it holds the `mqtt-ingest` duty (at once
 * without `duties`). Given up (the node closing, the lease lost), every agent is marked offline (the
 * next holder derives presence afresh); `close` returns the agents so marked.
 */
export function ingestOnce(
  options: IngestOptions,
  duties: IngestDuties | undefined,
): { start(): void; close(): Promise<number[]> } {
  const session = new IngestSession(options);
  let release: (() => Promise<void>) | null = null;
  /** The agents marked offline when this node last gave the session up (the node closing, typically). */
  let markedOffline: number[] = [];
  const take = () => {
    markedOffline = [];
    return session.start();
  };
  // Given up (the node closing, or the lease lost): presence is derived afresh by the next holder.
  const leave = async () => {
    await session.stop();
    markedOffline = await options.store.allOffline();
  };
  return {
    start: () => {
      if (release) return;
      if (duties) release = duties.whileHeld(INGEST_DUTY, take, leave);
      else {
        release = leave;
        void take().catch(() => {});
      }
    },
    close: async () => {
      await release?.();
      release = null;
      const marked = markedOffline;
      markedOffline = [];
      return marked;
    },
  };
}

/** Once disconnected: the agents marked offline by this node, if any, are said. */
export async function recordExternalStopped(events: EventLog, offline: number[], brokerName: string): Promise<void> {
  await events.record(
    'broker.stopped',
    `Disconnected from ${brokerName}${offline.length > 0 ? `; ${offline.length} agent(s) marked offline` : ''}`,
    {},
    { agent_ids: offline },
  );
}
