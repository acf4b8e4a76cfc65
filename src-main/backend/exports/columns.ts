// What each export holds: its columns, in order, by name (the CSV header and the JSON lines' keys).
// Secrets stay out: no invitation or code token, user token or enrollment link (a spreadsheet is
// handed around; those links enroll a device).
import type { Invitation, JobResultStatus, TaskVerification } from '../../../src-shared/contract/index.ts';
import { JOB_RESULT_STATUSES, verificationText } from '../../../src-shared/contract/index.ts';
import type { AuditRow } from '../audit/repository.ts';
import type { InventorySummary } from '../inventory/fusion-inventory.ts';
import type { ComplianceView } from '../policies/views.ts';
import type { Column, ExportSpec } from './format.ts';
import type { CodeRecord, CodeUseRecord, DeviceRecord, JobRecord, JobResultRecord, ResultRecord } from './repository.ts';

/** A device with its last inventory read and its compliance (null: unenrolled, as in the compliance list). */
export interface DeviceExportRow extends DeviceRecord {
  summary: InventorySummary | null;
  compliance: ComplianceView | null;
}

const column = <T>(name: string, value: (row: T) => unknown, csv?: (row: T) => unknown): Column<T> =>
  csv ? { name, value, csv } : { name, value };
const sum = (values: (number | null)[]) =>
  values.some((v) => v !== null) ? values.reduce<number>((total, v) => total + (v ?? 0), 0) : null;
const personOf = (row: { firstname: string | null; lastname: string | null }) =>
  [row.firstname, row.lastname].filter(Boolean).join(' ') || null;

/** The devices table's row and the inventory's fields as the device panel shows them. */
export const DEVICE_EXPORT: ExportSpec<DeviceExportRow> = {
  columns: [
    column('id', (d) => d.id),
    column('name', (d) => d.name),
    column('type', (d) => d.type),
    column('serial', (d) => d.serial),
    column('uuid', (d) => d.uuid),
    column('manufacturer', (d) => d.manufacturer),
    column('model', (d) => d.model),
    column('os_name', (d) => d.os_name),
    column('os_version', (d) => d.os_version),
    column('imei', (d) => d.summary?.imei ?? null),
    column('battery_level', (d) => d.summary?.battery?.level ?? null),
    column('battery_health', (d) => d.summary?.battery?.health ?? null),
    column('battery_status', (d) => d.summary?.battery?.status ?? null),
    column(
      'storage',
      (d) => d.summary?.storage ?? null,
      (d) =>
        d.summary?.storage
          .map((drive) => `${drive.name}: ${drive.free_mb ?? '?'} of ${drive.total_mb ?? '?'} MB free`)
          .join('; ') ?? null,
    ),
    column('storage_total_mb', (d) => (d.summary ? sum(d.summary.storage.map((drive) => drive.total_mb)) : null)),
    column('storage_free_mb', (d) => (d.summary ? sum(d.summary.storage.map((drive) => drive.free_mb)) : null)),
    column('memory_mb', (d) => d.summary?.memory_mb ?? null),
    column('installed_apps', (d) => d.summary?.applications.length ?? null),
    column('inventory_at', (d) => d.inventory_at),
    column('agent_version', (d) => d.version),
    column('fleet', (d) => d.fleet),
    column('fleet_id', (d) => d.fleet_id),
    column('user_email', (d) => d.email),
    column('user_name', personOf),
    column('enroll_status', (d) => d.enroll_status),
    column('enrolled_at', (d) => d.created_at),
    column('enrolled_with', (d) =>
      d.enrollment_code !== null
        ? `code ${d.enrollment_code}`
        : d.invitation_id !== null
          ? `invitation ${d.invitation_id}`
          : null,
    ),
    column('last_contact', (d) => d.last_contact),
    column('online', (d) => d.is_online === 1),
    column('locked', (d) => d.lock === 1),
    column('compliance', (d) => d.compliance?.state ?? null),
    column('compliance_summary', (d) => d.compliance?.summary ?? null),
  ],
};

/** The invitations list's fields, tokens and links left out. */
export const INVITATION_EXPORT: ExportSpec<Invitation> = {
  columns: [
    column('id', (i) => i.id),
    column('email', (i) => i.email),
    column('firstname', (i) => i.firstname),
    column('lastname', (i) => i.lastname),
    column('status', (i) => i.status),
    column('fleet', (i) => i.fleet),
    column('fleet_id', (i) => i.fleet_id),
    column('created_at', (i) => i.created_at),
    column('expires_at', (i) => i.expires_at),
    column('used_at', (i) => i.used_at),
    column('last_used_at', (i) => i.last_used_at),
    column('revoked_at', (i) => i.revoked_at),
    column('device_id', (i) => i.agent?.id ?? null),
    column('device', (i) => i.agent?.name ?? null),
    column('device_serial', (i) => i.agent?.serial ?? null),
    column('refused_attempts', (i) => i.refused_attempts),
    column('email_state', (i) => i.delivery?.state ?? null),
    column('email_sent_at', (i) => i.delivery?.sent_at ?? null),
    column('email_error', (i) => i.delivery?.error ?? null),
  ],
};

/** A code as the codes list shows it (its status decided at export time), tokens and links left out. */
export type CodeExportRow = CodeRecord & { status: string };
export const CODE_EXPORT: ExportSpec<CodeExportRow> = {
  columns: [
    column('id', (c) => c.id),
    column('name', (c) => c.name),
    column('status', (c) => c.status),
    column('fleet', (c) => c.fleet),
    column('fleet_id', (c) => c.fleet_id),
    column(
      'domains',
      (c) => JSON.parse(c.domains) as string[],
      (c) => (JSON.parse(c.domains) as string[]).join(' '),
    ),
    column('approval', (c) => c.approval),
    column('max_uses', (c) => c.max_uses),
    column('uses', (c) => c.uses),
    column('devices', (c) => c.devices),
    column('pending_approval', (c) => c.pending_approval),
    column('refused_attempts', (c) => c.refused_attempts),
    column('created_at', (c) => c.created_at),
    column('expires_at', (c) => c.expires_at),
    column('revoked_at', (c) => c.revoked_at),
    column('rotated_at', (c) => c.rotated_at),
    column('last_used_at', (c) => c.last_used_at),
  ],
};

/** Each use and refusal of a code (its log), with the device it enrolled. */
export const CODE_USE_EXPORT: ExportSpec<CodeUseRecord> = {
  columns: [
    column('id', (u) => u.id),
    column('at', (u) => u.at),
    column('code_id', (u) => u.code_id),
    column('code_name', (u) => u.code_name),
    column('outcome', (u) => u.outcome),
    column('error', (u) => u.code),
    column('message', (u) => u.message),
    column('email', (u) => u.email),
    column('serial', (u) => u.serial),
    column('uuid', (u) => u.uuid),
    column('remote_addr', (u) => u.remote_addr),
    column('device_id', (u) => u.agent_id),
    column('device', (u) => u.agent_name),
    column('enroll_status', (u) => u.enroll_status),
  ],
};

/** A device's task of an assignment: its status and, for packages, the install checked against the inventory. */
export type ResultExportRow = Omit<ResultRecord, 'value'> & {
  value: boolean | number | string | null;
  label: string;
  status_text: string;
  verification: TaskVerification | null;
};
export const RESULT_EXPORT: ExportSpec<ResultExportRow> = {
  columns: [
    column('task_id', (r) => r.task_id),
    column('assignment_id', (r) => r.assignment_id),
    column('policy', (r) => r.policy),
    column('label', (r) => r.label),
    column('value', (r) => r.value),
    column('item', (r) => r.item_name),
    column('target', (r) => r.target_name),
    column('assignment_state', (r) => r.assignment_state),
    column('device_id', (r) => r.agent_id),
    column('device', (r) => r.agent_name),
    column('device_serial', (r) => r.agent_serial),
    column('fleet', (r) => r.fleet),
    column('status', (r) => r.status),
    column('status_text', (r) => r.status_text),
    column('reason', (r) => r.reason),
    column(
      'verification',
      (r) => r.verification?.state ?? null,
      (r) => (r.verification ? verificationText(r.verification) : null),
    ),
    column('verification_detail', (r) => r.verification?.detail ?? null),
    column('verified_inventory_at', (r) => r.verification?.inventory_at ?? null),
    column('created_at', (r) => r.created_at),
    column('updated_at', (r) => r.updated_at),
    column('downloaded_at', (r) => r.downloaded_at),
  ],
};

/** A bulk job with its results counted (of the caller's fleets), as GET /api/jobs lists it. */
export type JobExportRow = JobRecord & { counts: Record<JobResultStatus, number>; processed: number };
export const JOB_EXPORT: ExportSpec<JobExportRow> = {
  columns: [
    column('id', (j) => j.id),
    column('action', (j) => j.action),
    column('state', (j) => j.state),
    column('selection', (j) => j.description),
    column('params', (j) => (j.params === null ? null : (JSON.parse(j.params) as unknown))),
    column('total', (j) => j.total),
    column('processed', (j) => j.processed),
    ...JOB_RESULT_STATUSES.map((status) => column<JobExportRow>(status, (j) => j.counts[status])),
    column('actor', (j) => j.actor),
    column('error', (j) => j.error),
    column('created_at', (j) => j.created_at),
    column('finished_at', (j) => j.finished_at),
  ],
};

/** Each device's result in a job. */
export const JOB_RESULT_EXPORT: ExportSpec<JobResultRecord> = {
  columns: [
    column('job_id', (r) => r.job_id),
    column('action', (r) => r.action),
    column('device_id', (r) => r.agent_id),
    column('device', (r) => r.name),
    column('fleet_id', (r) => r.fleet_id),
    column('fleet', (r) => r.fleet),
    column('status', (r) => r.status),
    column('reason', (r) => r.reason),
    column('at', (r) => r.at),
    column('answered_at', (r) => r.answered_at),
  ],
};

/** The audit trail: CSV these columns; a JSON line the whole entry, as GET /api/audit lists it. */
export const AUDIT_EXPORT: ExportSpec<AuditRow> = {
  columns: (
    [
      'id',
      'at',
      'actor',
      'account_id',
      'token_name',
      'role',
      'address',
      'action',
      'target_kind',
      'target_id',
      'target_name',
      'message',
      'changes',
    ] as const satisfies readonly (keyof AuditRow)[]
  ).map((name) => column<AuditRow>(name, (row) => row[name])),
  json: (row) => row,
};
