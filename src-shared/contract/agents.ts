import { Type, type Static } from 'typebox';
import { CommandResult } from './commands.ts';
import { Items, Nullable } from './common.ts';
import { LiveEvent } from './events.ts';

/** One row of the admin's device list (GET /api/agents). */
export const AgentSummary = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  serial: Nullable(Type.String()),
  uuid: Nullable(Type.String()),
  type: Type.String(),
  version: Type.String(),
  enroll_status: Type.String(),
  is_online: Type.Boolean(),
  last_contact: Nullable(Type.String()),
  last_report: Nullable(Type.String()),
  lock: Type.Integer(),
  wipe: Type.Integer(),
  fleet_id: Type.Integer(),
  fleet: Type.String(),
  /** The person who enrolled it. */
  email: Nullable(Type.String()),
  firstname: Nullable(Type.String()),
  lastname: Nullable(Type.String()),
  computer_id: Type.Integer(),
  invitation_id: Nullable(Type.Integer()),
  enrollment_code_id: Nullable(Type.Integer()),
  enrollment_code: Nullable(Type.String()),
  topic: Type.String(),
  entity_id: Type.Integer(),
  created_at: Type.String(),
  updated_at: Type.String(),
  /** From the last inventory the device sent (null until then). */
  model: Nullable(Type.String()),
  manufacturer: Nullable(Type.String()),
  os_name: Nullable(Type.String()),
  os_version: Nullable(Type.String()),
});
export type AgentSummary = Static<typeof AgentSummary>;
export const AgentList = Items(AgentSummary);

/** The device's last FusionInventory report, as the server parsed it. */
export const Inventory = Type.Object({
  model: Nullable(Type.String()),
  manufacturer: Nullable(Type.String()),
  os_name: Nullable(Type.String()),
  os_version: Nullable(Type.String()),
  serial: Nullable(Type.String()),
  imei: Nullable(Type.String()),
  battery: Nullable(
    Type.Object({
      level: Nullable(Type.String()),
      health: Nullable(Type.String()),
      status: Nullable(Type.String()),
      chemistry: Nullable(Type.String()),
      capacity: Nullable(Type.String()),
    }),
  ),
  /** Drives/partitions: label, total and free in MB as the agent reports them. */
  storage: Type.Array(Type.Object({ name: Type.String(), total_mb: Nullable(Type.Number()), free_mb: Nullable(Type.Number()) })),
  memory_mb: Nullable(Type.Number()),
  applications: Type.Array(
    Type.Object({ name: Type.String(), version: Nullable(Type.String()), package: Nullable(Type.String()) }),
  ),
  source: Type.Union([Type.Literal('enrollment'), Type.Literal('http'), Type.Literal('mqtt')]),
  received_at: Type.String(),
});
export type Inventory = Static<typeof Inventory>;

export const Position = Type.Object({
  /** null when the device answered with its GPS off. */
  latitude: Nullable(Type.Number()),
  longitude: Nullable(Type.Number()),
  located_at: Type.String(),
  source: Type.String(),
  received_at: Type.String(),
});
export type Position = Static<typeof Position>;

/** GET /api/agents/:id: the row, what the device reported, and its events. */
export const AgentDetail = Type.Object({
  ...AgentSummary.properties,
  inventory: Nullable(Inventory),
  /** The latest first (10 at most). */
  positions: Type.Array(Position),
  events: Type.Array(LiveEvent),
});
export type AgentDetail = Static<typeof AgentDetail>;

/** An enrolled agent as an invitation shows it. */
export const AgentBrief = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  serial: Nullable(Type.String()),
  uuid: Nullable(Type.String()),
  type: Type.String(),
  enroll_status: Type.String(),
});
export type AgentBrief = Static<typeof AgentBrief>;

/** POST /api/agents/approve: the pending-approval queue, approved in bulk. */
export const ApproveManyBody = Type.Object(
  { ids: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1, maxItems: 10000 }) },
  { additionalProperties: false },
);
export type ApproveManyBody = Static<typeof ApproveManyBody>;
export const ApproveManyResult = Type.Object({
  approved: Type.Array(Type.Integer()),
  skipped: Type.Array(Type.Object({ id: Type.Integer(), reason: Type.String() })),
});
export type ApproveManyResult = Static<typeof ApproveManyResult>;

/** POST /api/agents/:id/commands (202): what was sent, and the agent now. */
export const CommandSent = Type.Object({ ...CommandResult.properties, agent: AgentSummary });
export type CommandSent = Static<typeof CommandSent>;
/** PATCH /api/agents/:id: the agent now, and the Subscribe sent (null: it was in that fleet already). */
export const AgentMoved = Type.Object({ ...AgentSummary.properties, command: Nullable(CommandResult) });
export type AgentMoved = Static<typeof AgentMoved>;
