import { Type, type Static } from 'typebox';
import { StoredKind } from './files.ts';
import { Items, Literals, Nullable } from './common.ts';
import { COMPLIANCE_STATES, PolicyValue } from './policies.ts';
import { JOB_ACTIONS, JOB_RESULT_STATUSES, JOB_STATES } from './bulk.ts';
import { WHERE_MAX_LENGTH } from './where.ts';

const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

/** The devices table's filters (bulk.ts DeviceFilterFields): every given field must match. */
export const DeviceFilter = Type.Object(
  {
    fleet_id: Type.Optional(Id),
    /** A fleet by name (or id), as the table's filter and the CLI give it. */
    fleet: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    type: Type.Optional(Literals(['android', 'apple'])),
    enroll_status: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    online: Type.Optional(Type.Boolean()),
    compliance: Type.Optional(Literals(COMPLIANCE_STATES)),
    /** The table's search box: every word must appear in one of the device's text fields. */
    search: Type.Optional(Type.String({ maxLength: 200 })),
    /** An expression of the filter language (docs/where.md), as the devices page's filter bar and `--where` give it. */
    where: Type.Optional(Type.String({ maxLength: WHERE_MAX_LENGTH })),
    /** A saved view, by name or id: its devices (now). */
    view: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  { additionalProperties: false },
);
export type DeviceFilter = Static<typeof DeviceFilter>;

/** Which devices a job acts on: a list of ids, or every device matching a filter (resolved by the server, in the caller's fleets). */
export const JobSelection = Type.Object(
  {
    ids: Type.Optional(Type.Array(Id, { minItems: 1, maxItems: 100_000 })),
    filter: Type.Optional(DeviceFilter),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
);
export type JobSelection = Static<typeof JobSelection>;

/**
 * POST /api/jobs: one action on a selection of devices. `expected_count` is the number of devices
 * the caller saw: required for unenroll, wipe and delete (409 when the selection holds another
 * number), checked whenever it is given. `move` takes `fleet_id` or `fleet`; `assign_policy` a
 * `policy` and its `value`; `deploy` a `kind` and `item_id` (and for a file a `destination`).
 */
export const JobBody = Type.Object(
  {
    action: Literals(JOB_ACTIONS),
    selection: JobSelection,
    expected_count: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    fleet_id: Type.Optional(Id),
    fleet: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    policy: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    value: Type.Optional(PolicyValue),
    kind: Type.Optional(StoredKind),
    item_id: Type.Optional(Id),
    destination: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    remove_on_delete: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type JobBody = Static<typeof JobBody>;

/** How many devices of a job are at each status. */
export const JobCounts = Type.Object({
  sent: Type.Integer(),
  answered: Type.Integer(),
  offline: Type.Integer(),
  done: Type.Integer(),
  refused: Type.Integer(),
  failed: Type.Integer(),
});
export type JobCounts = Static<typeof JobCounts>;

/** A job as its history lists it. */
export const Job = Type.Object({
  id: Type.Integer(),
  action: Literals(JOB_ACTIONS),
  state: Literals(JOB_STATES),
  /** The selection in words ("fleet Warehouse, android", "3 devices chosen"). */
  selection: Type.String(),
  /** What the action was given besides (the fleet, the policy and value, the item). */
  params: Nullable(Type.Record(Type.String(), Type.Unknown())),
  /** Devices selected. */
  total: Type.Integer(),
  /** Devices with a result so far (all of them once done). */
  processed: Type.Integer(),
  counts: JobCounts,
  actor: Nullable(Type.String()),
  error: Nullable(Type.String()),
  created_at: Type.String(),
  finished_at: Nullable(Type.String()),
});
export type Job = Static<typeof Job>;
export const JobList = Items(Job);
export type JobList = Static<typeof JobList>;

export const JobListQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })) });
export type JobListQuery = Static<typeof JobListQuery>;

/** One device's outcome in a job. */
export const JobResult = Type.Object({
  agent_id: Type.Integer(),
  /** The device's name when the job acted (it may be gone since). */
  name: Type.String(),
  fleet_id: Nullable(Type.Integer()),
  status: Literals(JOB_RESULT_STATUSES),
  reason: Nullable(Type.String()),
  at: Type.String(),
  answered_at: Nullable(Type.String()),
});
export type JobResult = Static<typeof JobResult>;

/** GET /api/jobs/:id: the job and each device's result (those of the caller's fleets). */
export const JobDetail = Type.Object({ ...Job.properties, results: Type.Array(JobResult) });
export type JobDetail = Static<typeof JobDetail>;

export const JobResultsQuery = Type.Object({ status: Type.Optional(Literals(JOB_RESULT_STATUSES)) });
export type JobResultsQuery = Static<typeof JobResultsQuery>;
