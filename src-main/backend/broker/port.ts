// The broker port: what the rest of the backend needs of wherever the agents' MQTT connections
// live. Three implementations: the embedded aedes broker (broker.ts), an external Mosquitto 2 with
// dynamic security (mosquitto.ts) and a RabbitMQ cluster with the HTTP auth backend (rabbitmq.ts).
import type { AgentIdentity } from './acl.ts';
import type { AgentCommands } from './commands.ts';
import type { BrokerCertificate } from './tls-certificate.ts';
import { BROKER_MODES, type AgentEndpoint, type BrokerMode, type BrokerStatus } from '../../../src-shared/contract/index.ts';

// The broker's status and endpoint are on the wire (GET /api/status): their shapes are the contract's.
export { BROKER_MODES, type AgentEndpoint, type BrokerMode, type BrokerStatus };

/** What only the broker knows how to record (pending pings, presence), for agents reporting over HTTP. */
export interface LiveReports {
  /** `_pong`: recorded as `T/Status/Ping` `!` is (a pending ping's reply, with its latency). */
  pong(agentId: number): Promise<void>;
  /** `is_online`: recorded as `T/Status/Online` is (a sign of life; the agent's connections decide presence). */
  online(agentId: number, online: boolean): Promise<void>;
}

/** Retained policy messages (deployments): the one way deployments reach the agents, in every mode. */
export interface PolicyPublisher {
  /** Publishes `payload` retained on `topic`; an empty payload clears the retained message. */
  publishRetained(topic: string, payload: string): Promise<void>;
  /** The topics under `prefix/` on which the broker keeps a retained message (what it held, as far as it tells). */
  retainedTopicsUnder(prefix: string): Promise<string[]>;
  /**
   * External brokers: after the backend's (re)connection, the policies to publish again come from
   * `source` (every active policy, from the database) rather than from what this node published;
   * `source` answers null on a node that is not to restore them (another node does).
   */
  restoreFrom?(source: () => Promise<Array<{ topic: string; payload: string }> | null>): void;
}

/**
 * A task status report of an agent: `T/Status/Task/<id>`, or rc.6's `<policy topic>/Status/Task/<id>`.
 * Every mode calls it only for the agent that published (the broker knows the connection, or the
 * topic names the agent), so a device can report on its own tasks alone.
 */
export type TaskReportHandler = (agent: AgentIdentity, taskId: number, payload: Buffer) => Promise<void>;

export interface MqttBroker {
  mode: BrokerMode;
  /** Agent-facing ports (plain, TLS; 0 when the broker has none). */
  port: number;
  tlsPort: number;
  /** The embedded broker's TLS certificate; null for an external broker. */
  certificate: BrokerCertificate | null;
  commands: AgentCommands;
  /** Retained policies of deployments (published, cleared; given again where the broker may have lost them). */
  policies: PolicyPublisher;
  /** Pings and presence reported over HTTP, recorded as their MQTT counterparts are. */
  liveReports: LiveReports;
  /** Publishing with the backend's rights (QoS 1): commands, policies, manifests, fleet messages. */
  publish(topic: string, payload: string, options?: { retain?: boolean }): Promise<void>;
  /** The message the broker keeps retained on `topic` (exact name), or null. */
  retained(topic: string): Promise<string | null>;
  /** Where agents connect, given the `mqtt_tls` setting. */
  agentEndpoint(tlsSetting: boolean): AgentEndpoint;
  /** A new mqttpasswd was drawn for the agent: a broker keeping its own credentials learns it first. */
  credentialsIssued(agentId: number, password: string): Promise<void>;
  status(): BrokerStatus;
  /** What the operator should fix, said once at start (serve prints them): a weak password, say. */
  warnings?: readonly string[];
  /** Disconnects (or stops serving) every agent; marks them offline. */
  close(): Promise<void>;
}
