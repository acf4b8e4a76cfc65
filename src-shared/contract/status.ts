import { Type, type Static } from 'typebox';
import { Literals, Nullable } from './common.ts';
import { ServerInfo } from './server-info.ts';

export const BROKER_MODES = ['embedded', 'mosquitto', 'rabbitmq'] as const;
export type BrokerMode = (typeof BROKER_MODES)[number];

/** Where agents connect; goes into their record (`broker`, `port`, `tls`). */
export const AgentEndpoint = Type.Object({ host: Type.String(), port: Type.Integer(), tls: Type.Boolean() });
export type AgentEndpoint = Static<typeof AgentEndpoint>;

/** The broker's TLS certificate (embedded broker only). */
export const BrokerTls = Type.Object({
  fingerprint_sha256: Type.String(),
  source: Type.Union([Type.Literal('generated'), Type.Literal('provided')]),
  subject: Type.String(),
  alt_names: Type.Array(Type.String()),
  valid_from: Type.String(),
  valid_to: Type.String(),
  cert_file: Type.String(),
});

export const BrokerStatus = Type.Object({
  mode: Literals(BROKER_MODES),
  /** Whether the backend is connected to its broker (always true for the embedded one). */
  connected: Type.Boolean(),
  /** Why not, while it retries. */
  problem: Nullable(Type.String()),
  /** The external broker(s), without credentials. */
  url: Nullable(Type.String()),
  port: Type.Integer(),
  tls_port: Type.Integer(),
  /** Agents online: connections on the embedded broker; their presence messages on an external one. */
  connected_agents: Type.Integer(),
  connections: Type.Integer(),
  tls: Nullable(BrokerTls),
});
export type BrokerStatus = Static<typeof BrokerStatus>;

export const StatusCounts = Type.Object({
  invitations: Type.Integer(),
  /** Pending and not expired. */
  pending: Type.Integer(),
  used: Type.Integer(),
  agents: Type.Integer(),
  enrolled: Type.Integer(),
  online: Type.Integer(),
  pending_approval: Type.Integer(),
  codes: Type.Integer(),
  /** Devices that came in with an enrollment code (any state): the code's way in beside `invitations`. */
  code_devices: Type.Integer(),
  /** Of `enrolled`, those that came in with an enrollment code (the others came with an invitation). */
  code_enrolled: Type.Integer(),
});
export type StatusCounts = Static<typeof StatusCounts>;

/** A node of the database (the node registry): where it answers and when it was last heard from. */
export const ClusterNode = Type.Object({
  name: Type.String(),
  /** Its admin API and console. */
  admin_url: Type.String(),
  /** Its agent API (base_url). */
  agent_url: Type.String(),
  /** The MDM Console version it runs. */
  version: Type.String(),
  mqtt_broker: Type.String(),
  started_at: Type.String(),
  last_heartbeat: Type.String(),
  /** When it stopped cleanly; null while it runs or when it was killed. */
  stopped_at: Nullable(Type.String()),
  /** Running now: its heartbeat is recent (and, on PostgreSQL, its session holds its name). */
  live: Type.Boolean(),
  /** The node that answered this request. */
  this_node: Type.Boolean(),
  /**
   * The duties it holds now: work one node does at a time (`session-sweep`, `alert-evaluation`,
   * `reports-sampler`, `view-sync`, `policy-republish`, `jobs-sweeper`; docs/scaling.md).
   */
  duties: Type.Optional(Type.Array(Type.String())),
});
export type ClusterNode = Static<typeof ClusterNode>;

/** GET /api/status: server.json without the admin token, plus counts, the broker and warnings. */
export const ServerStatus = Type.Object({
  ...Type.Omit(ServerInfo, ['admin_token', 'setup_url']).properties,
  counts: StatusCounts,
  /** The MQTT broker and where agents connect; null when the server runs without one. */
  mqtt: Nullable(Type.Object({ ...BrokerStatus.properties, agent_endpoint: AgentEndpoint })),
  /** This machine's network addresses besides loopback: candidates for the public host. */
  lan_addresses: Type.Array(Type.String()),
  /** Every node registered on the database, by name (on SQLite: this one). */
  nodes: Type.Array(ClusterNode),
  warnings: Type.Array(Type.String()),
});
export type ServerStatus = Static<typeof ServerStatus>;

/** POST /api/public-host: one click from "phones cannot reach this server". */
export const PublicHostBody = Type.Object(
  { host: Type.String({ minLength: 1, maxLength: 255 }) },
  { additionalProperties: false },
);
export type PublicHostBody = Static<typeof PublicHostBody>;
export const PublicHostResult = Type.Object({ public_host: Type.String(), api_url: Type.String(), deeplink_url: Type.String() });
export type PublicHostResult = Static<typeof PublicHostResult>;

/** POST /auth/sign-in: the admin token or a sign-in link, from the console's own page. */
export const SignInBody = Type.Object({ credential: Type.String({ maxLength: 2048 }) }, { additionalProperties: false });
export type SignInBody = Static<typeof SignInBody>;
export const SignInResult = Type.Object({
  signed_in: Type.Literal(true),
  with: Type.Union([Type.Literal('token'), Type.Literal('link')]),
});
export type SignInResult = Static<typeof SignInResult>;

/** POST /auth/sign-out: the console session ends on the server, from the console's own page. */
export const SignOutResult = Type.Object({ signed_out: Type.Literal(true) });
export type SignOutResult = Static<typeof SignOutResult>;

/** POST /api/console-tickets (201): a fresh one-time sign-in link. */
export const ConsoleTicket = Type.Object({ console_url: Type.String() });
export type ConsoleTicket = Static<typeof ConsoleTicket>;
/** POST /api/console-tickets: `?as=EMAIL` signs in as that admin (the owner only); none: as the caller. */
export const ConsoleTicketQuery = Type.Object(
  { as: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })) },
  { additionalProperties: false },
);
export type ConsoleTicketQuery = Static<typeof ConsoleTicketQuery>;
