import { Type, type Static } from 'typebox';
import { AnyObject, Items, Literals, Nullable } from './common.ts';
import { StoredKind } from './files.ts';

export const POLICIES = ['deployApp', 'deployFile', 'removeApp', 'removeFile'] as const;
export type PolicyName = (typeof POLICIES)[number];
/**
 * The reference's task statuses. `incompatible`: the device cannot apply the policy (its Android
 * version is below the policy's minimum, or the policy needs a system agent it is not); decided by
 * the server from what it knows, or reported by the device. `overriden` (the reference's spelling):
 * a device-level value of the same policy applies instead of its fleet's; decided by the server.
 */
export const TASK_STATUSES = [
  'pending',
  'received',
  'in progress',
  'waiting',
  'done',
  'failed',
  'canceled',
  'incompatible',
  'overriden',
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

const Status = Literals(TASK_STATUSES);
const DeploymentState = Type.Union([Type.Literal('active'), Type.Literal('removed')]);
const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

export const TaskCounts = Type.Object({
  total: Type.Integer(),
  pending: Type.Integer(),
  /** received, in progress or waiting. */
  in_progress: Type.Integer(),
  done: Type.Integer(),
  failed: Type.Integer(),
  canceled: Type.Integer(),
  incompatible: Type.Integer(),
  overriden: Type.Integer(),
});
export type TaskCounts = Static<typeof TaskCounts>;

export const TaskHistoryEntry = Type.Object({
  task_id: Type.Integer(),
  status: Status,
  reason: Nullable(Type.String()),
  source: Type.Union([Type.Literal('server'), Type.Literal('mqtt'), Type.Literal('http')]),
  at: Type.String(),
});
export type TaskHistoryEntry = Static<typeof TaskHistoryEntry>;

/**
 * A package deployment's task checked against the device's own inventory: once the task is done
 * (or the package was downloaded), the next inventory's installed applications are searched for the
 * package name and the version deployed. `awaiting_inventory` until an inventory arrives after that.
 */
export const TaskVerification = Type.Object({
  state: Type.Union([Type.Literal('awaiting_inventory'), Type.Literal('verified'), Type.Literal('not_found')]),
  /** "org.example.app 1.2 (version code 12) is installed", "org.example.app is not in the inventory", … */
  detail: Type.String(),
  /** When the inventory checked was received (null while awaiting one). */
  inventory_at: Nullable(Type.String()),
});
export type TaskVerification = Static<typeof TaskVerification>;

/** How a verification reads in the console and the CLI. */
export function verificationText(verification: TaskVerification): string {
  if (verification.state === 'verified') return 'verified';
  if (verification.state === 'not_found') return 'not found in inventory';
  return 'awaiting inventory';
}

/** A deployment's task on one device. */
export const DeviceTask = Type.Object({
  id: Type.Integer(),
  deployment_id: Type.Integer(),
  agent_id: Type.Integer(),
  agent_name: Type.String(),
  status: Status,
  reason: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  /** When the device was last sent the whole deployed item while the task was open (null: never). */
  downloaded_at: Nullable(Type.String()),
  /** The status as shown: `downloaded, not confirmed` for an open task whose item was downloaded. */
  status_text: Type.String(),
  /** Package deployments: the install checked against the device's inventory (null: not checked, not a package, or not done yet). */
  verification: Type.Optional(Nullable(TaskVerification)),
  history: Type.Optional(Type.Array(TaskHistoryEntry)),
  /** In a device's task list: the deployment it belongs to. */
  deployment: Type.Optional(
    Type.Object({
      id: Type.Integer(),
      /** A symbol of the policy catalogue: the deployment kinds, or a value policy's. */
      policy: Type.String(),
      item_name: Type.String(),
      target_name: Type.String(),
      state: Type.String(),
    }),
  ),
});
export type DeviceTask = Static<typeof DeviceTask>;

const OPEN_TASK_STATUSES: readonly TaskStatus[] = ['pending', 'received', 'in progress', 'waiting'];

/** A task's status as the console and the admin API show it: a download the device never confirmed says so. */
export function taskStatusText(task: { status: TaskStatus; downloaded_at?: string | null }): string {
  return task.downloaded_at && OPEN_TASK_STATUSES.includes(task.status) ? 'downloaded, not confirmed' : task.status;
}
export const DeviceTaskList = Items(DeviceTask);

export const Deployment = Type.Object({
  id: Type.Integer(),
  entity_id: Type.Integer(),
  /** A symbol of the policy catalogue: one of the four deployment kinds here, any in /api/policy-assignments. */
  policy: Type.String(),
  /** The catalogue's label of the policy. */
  label: Type.String(),
  /** Value policies: the value set; null for the deployment kinds. */
  value: Nullable(Type.Union([Type.Boolean(), Type.Number(), Type.String()])),
  item_kind: Nullable(StoredKind),
  item_id: Nullable(Type.Integer()),
  item_name: Type.String(),
  fleet_id: Nullable(Type.Integer()),
  agent_id: Nullable(Type.Integer()),
  /** The fleet's or device's name as it is now. */
  target_name: Type.String(),
  destination: Nullable(Type.String()),
  remove_on_delete: Type.Boolean(),
  topic: Type.String(),
  /** The retained policy message. */
  message: AnyObject,
  state: DeploymentState,
  removed_by: Nullable(Type.Integer()),
  created_at: Type.String(),
  removed_at: Nullable(Type.String()),
  ...TaskCounts.properties,
  /** "37 of 40 done, 2 failed, 1 pending" */
  progress: Type.String(),
});
export type Deployment = Static<typeof Deployment>;
export const DeploymentList = Items(Deployment);

/** GET /api/deployments/:id: with every task and each task's history. */
export const DeploymentDetail = Type.Object({ ...Deployment.properties, tasks: Type.Array(DeviceTask) });
export type DeploymentDetail = Static<typeof DeploymentDetail>;

/** DELETE /api/deployments/:id: the removed one, and the removal it published (remove_on_delete). */
export const Undeployed = Type.Object({ removed: Deployment, removal: Nullable(Deployment) });
export type Undeployed = Static<typeof Undeployed>;

/** POST /api/deployments: a file or package to a fleet (by id or name) or a device. */
export const DeployBody = Type.Object(
  {
    kind: StoredKind,
    item_id: Id,
    fleet_id: Type.Optional(Id),
    /** A fleet by name, as the CLI gives it. */
    fleet: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    agent_id: Type.Optional(Id),
    destination: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    remove_on_delete: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type DeployBody = Static<typeof DeployBody>;

/** GET /api/deployments?… */
export const DeploymentFilter = Type.Object({
  fleet_id: Type.Optional(Id),
  agent_id: Type.Optional(Id),
  state: Type.Optional(DeploymentState),
});

/** GET /api/policy-assignments?…: every assignment (deployments too, unless kind says otherwise). */
export const AssignmentFilter = Type.Object({
  ...DeploymentFilter.properties,
  policy: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  kind: Type.Optional(Type.Union([Type.Literal('deployment'), Type.Literal('value')])),
});
export type AssignmentFilter = Static<typeof AssignmentFilter>;
export type DeploymentFilter = Static<typeof DeploymentFilter>;
