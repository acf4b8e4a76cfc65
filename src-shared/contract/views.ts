import { Type, type Static } from 'typebox';
import { Items, Nullable } from './common.ts';
import { PolicyValue } from './policies.ts';
import { WHERE_MAX_LENGTH } from './where.ts';

/** GET /api/agents?where=&view=&fleet=: the device list filtered (docs/where.md), each within the admin's fleet scope. */
export const AgentListQuery = Type.Object(
  {
    /** An expression of the --where language. */
    where: Type.Optional(Type.String({ maxLength: WHERE_MAX_LENGTH })),
    /** A saved view, by name or id: its expression is ANDed with `where`. */
    view: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    /** A fleet by name or id (the same as where=fleet=…). */
    fleet: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  { additionalProperties: false },
);
export type AgentListQuery = Static<typeof AgentListQuery>;

/** A saved view (dynamic group): a name and an expression, with how many devices it holds now. */
export const DeviceView = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  where: Type.String(),
  /** Devices matching now, within the caller's fleet scope. */
  count: Type.Integer(),
  created_by: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  /** Policies and deployments assigned to the view and in force. */
  assignments: Type.Integer(),
});
export type DeviceView = Static<typeof DeviceView>;
export const DeviceViewList = Items(DeviceView);

const ViewName = Type.String({ minLength: 1, maxLength: 100 });

/** POST /api/views. */
export const DeviceViewBody = Type.Object(
  { name: ViewName, where: Type.String({ maxLength: WHERE_MAX_LENGTH }) },
  { additionalProperties: false },
);
export type DeviceViewBody = Static<typeof DeviceViewBody>;

/** PATCH /api/views/:id: a new name, a new expression, or both. */
export const DeviceViewPatch = Type.Object(
  { name: Type.Optional(ViewName), where: Type.Optional(Type.String({ maxLength: WHERE_MAX_LENGTH })) },
  { additionalProperties: false, minProperties: 1 },
);
export type DeviceViewPatch = Static<typeof DeviceViewPatch>;

/** POST /api/views/:id/assignments: a policy of the catalogue (a value, or a deployment kind) for the view's devices. */
export const ViewAssignBody = Type.Object(
  {
    policy: Type.String({ minLength: 1, maxLength: 64 }),
    value: PolicyValue,
    /** deployFile: the folder on the device (default %SDCARD%/Download/). */
    destination: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    /** deployApp, deployFile: removing the assignment also publishes removeApp / removeFile to its devices. */
    remove_on_delete: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ViewAssignBody = Static<typeof ViewAssignBody>;

/** A policy or deployment assigned to a view, with its member devices' tasks counted. */
export const ViewAssignment = Type.Object({
  id: Type.Integer(),
  view_id: Type.Integer(),
  view: Type.String(),
  policy: Type.String(),
  label: Type.String(),
  value: Nullable(Type.Union([Type.Boolean(), Type.Number(), Type.String()])),
  item_name: Type.String(),
  state: Type.String(),
  created_at: Type.String(),
  removed_at: Nullable(Type.String()),
  /** Member devices it is carried to now. */
  devices: Type.Integer(),
  done: Type.Integer(),
  /** Not done yet (pending, received, in progress, waiting). */
  pending: Type.Integer(),
  /** Failed or incompatible. */
  failed: Type.Integer(),
  overriden: Type.Integer(),
});
export type ViewAssignment = Static<typeof ViewAssignment>;
export const ViewAssignmentList = Items(ViewAssignment);
