// The exports (issue 25, item 3): each list as a download, CSV or JSON lines, with the list's own
// filters. Every export is streamed by keyset pages, so its length never sits in memory; each holds
// what its list shows the caller (their fleet scope, the list's permission).
import { Type, type Static } from 'typebox';
import { Literals } from './common.ts';
import { INVITATION_STATUSES } from './invitations.ts';
import { COMPLIANCE_STATES } from './policies.ts';
import { TASK_STATUSES } from './deployments.ts';
import { WHERE_MAX_LENGTH } from './where.ts';
import { JOB_RESULT_STATUSES } from './bulk.ts';

export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** `format=csv` (the default; cells starting with = + - @ are prefixed with ') or `format=jsonl` (one object a line). */
const Format = Type.Optional(Literals(EXPORT_FORMATS));
const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

/** GET /api/agents/export: the device list's selection (where, view, fleet) and the devices table's filters. */
export const DeviceExportQuery = Type.Object(
  {
    format: Format,
    /** An expression of the --where language (docs/where.md), as GET /api/agents?where= takes it. */
    where: Type.Optional(Type.String({ maxLength: WHERE_MAX_LENGTH })),
    /** A saved view, by name or id: its expression is ANDed with the rest. */
    view: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    /** A fleet by name (case-insensitive) or id, as GET /api/agents?fleet= and the table's fleet filter give it. */
    fleet: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    fleet_id: Type.Optional(Id),
    /** An enrollment status: enrolled, pending_approval, unenrolled … */
    status: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    type: Type.Optional(Type.Union([Type.Literal('android'), Type.Literal('apple')])),
    online: Type.Optional(Type.Boolean()),
    compliance: Type.Optional(Literals(COMPLIANCE_STATES)),
    /** The table's search: every word must appear in the name, serial, uuid, person, email, fleet, type, version or status. */
    q: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type DeviceExportQuery = Static<typeof DeviceExportQuery>;

/** GET /api/invitations/export: the invitations list's filters (no paging: every match). */
export const InvitationExportQuery = Type.Object(
  {
    format: Format,
    status: Type.Optional(Literals(INVITATION_STATUSES)),
    q: Type.Optional(Type.String({ maxLength: 200 })),
    fleet_id: Type.Optional(Id),
  },
  { additionalProperties: false },
);
export type InvitationExportQuery = Static<typeof InvitationExportQuery>;

/** GET /api/codes/export. */
export const CodeExportQuery = Type.Object({ format: Format, fleet_id: Type.Optional(Id) }, { additionalProperties: false });
export type CodeExportQuery = Static<typeof CodeExportQuery>;

/** GET /api/code-uses/export: the codes' logs (each use and refusal), of one code or all. */
export const CodeUseExportQuery = Type.Object(
  {
    format: Format,
    code_id: Type.Optional(Id),
    outcome: Type.Optional(Type.Union([Type.Literal('used'), Type.Literal('refused')])),
  },
  { additionalProperties: false },
);
export type CodeUseExportQuery = Static<typeof CodeUseExportQuery>;

/** GET /api/policy-results/export: each device's task of the assignments the filters match. */
export const ResultExportQuery = Type.Object(
  {
    format: Format,
    /** One assignment's (or deployment's) tasks. */
    assignment_id: Type.Optional(Id),
    fleet_id: Type.Optional(Id),
    agent_id: Type.Optional(Id),
    policy: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    kind: Type.Optional(Type.Union([Type.Literal('deployment'), Type.Literal('value')])),
    state: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('removed')])),
    /** The task's status. */
    status: Type.Optional(Literals(TASK_STATUSES)),
  },
  { additionalProperties: false },
);
export type ResultExportQuery = Static<typeof ResultExportQuery>;

/** GET /api/jobs/export: the bulk jobs' history, newest first. */
export const JobExportQuery = Type.Object({ format: Format }, { additionalProperties: false });
export type JobExportQuery = Static<typeof JobExportQuery>;

/** GET /api/job-results/export: each device's result in the bulk jobs (one job's with `job_id`), of the caller's fleets. */
export const JobResultExportQuery = Type.Object(
  { format: Format, job_id: Type.Optional(Id), status: Type.Optional(Literals(JOB_RESULT_STATUSES)) },
  { additionalProperties: false },
);
export type JobResultExportQuery = Static<typeof JobResultExportQuery>;

/** What each export is called in its file name and the CLI: `devices-2026-05-01-0930.csv`. */
export const EXPORT_KINDS = ['devices', 'invitations', 'codes', 'code-uses', 'results', 'jobs', 'job-results', 'audit'] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

/** The download's file name: what, and when (UTC, to the minute): `devices-2026-05-01-0930.csv`. */
export function exportFileName(kind: string, format: ExportFormat, at = new Date()): string {
  const iso = at.toISOString();
  return `${kind}-${iso.slice(0, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}.${format}`;
}
