// Bulk actions on devices (issue 25, item 1): the actions a job may carry, which of them destroy,
// and the device filter the console's table applies, here so that "all N matching this filter"
// means the same devices in the console and on the server. Plain TypeScript, no imports of
// schemas: the console, the CLI and the backend all load it.

/** What one bulk job does to each device of its selection. */
export const JOB_ACTIONS = [
  'ping',
  'lock',
  'unlock',
  'inventory',
  'geolocate',
  'move',
  'assign_policy',
  'deploy',
  'unenroll',
  'wipe',
  'delete',
] as const;
export type JobAction = (typeof JOB_ACTIONS)[number];

/** Actions that cannot be undone: the request must carry the count of devices it expects to act on. */
export const DESTRUCTIVE_JOB_ACTIONS: readonly JobAction[] = ['unenroll', 'wipe', 'delete'];
export const isDestructiveJobAction = (action: JobAction): boolean => DESTRUCTIVE_JOB_ACTIONS.includes(action);

/** How each action reads in a sentence ("Lock 40 devices"). */
export const JOB_ACTION_LABELS: Record<JobAction, string> = {
  ping: 'Ping',
  lock: 'Lock',
  unlock: 'Unlock',
  inventory: 'Ask for inventory',
  geolocate: 'Locate',
  move: 'Move to a fleet',
  assign_policy: 'Set a policy',
  deploy: 'Deploy',
  unenroll: 'Unenroll',
  wipe: 'Wipe',
  delete: 'Delete',
};

/**
 * Each device's outcome in a job: `sent` (published; the device was connected), `answered` (its
 * reply came: a ping's Status/Ping, an inventory, a position, an unenrollment confirmed),
 * `offline` (not connected when sent: kept for it when the command is retained, else not sent),
 * `done` (a change made on the server: moved, deleted, a policy set), `refused` (not done, with
 * the reason), `failed` (an error while doing it, with the reason).
 */
export const JOB_RESULT_STATUSES = ['sent', 'answered', 'offline', 'done', 'refused', 'failed'] as const;
export type JobResultStatus = (typeof JOB_RESULT_STATUSES)[number];

/** `running` while it acts; `done` once every device has its result (answers may still come); `interrupted` by a restart. */
export const JOB_STATES = ['running', 'done', 'failed', 'interrupted'] as const;
export type JobState = (typeof JOB_STATES)[number];

/**
 * The devices table's filters, as the console applies them and the server resolves them: every
 * given field must match. `search` is the table's search box: each word must appear in one of the
 * device's text fields (name, serial, uuid, email, names, fleet, type, version, status).
 */
export interface DeviceFilterFields {
  fleet_id?: number | undefined;
  /** A fleet by name (case-insensitive, as the table's filter) or by id, as the CLI gives it. */
  fleet?: string | undefined;
  type?: 'android' | 'apple' | undefined;
  enroll_status?: string | undefined;
  online?: boolean | undefined;
  compliance?: 'compliant' | 'pending' | 'failing' | 'none' | undefined;
  search?: string | undefined;
  /** The filter language's expression and a saved view: resolved by the server (matchesDeviceFilter leaves them out). */
  where?: string | undefined;
  view?: string | undefined;
}

/** What the filter reads of a device: a row of the device list. */
export interface FilterableDevice {
  id: number;
  name: string;
  serial: string | null;
  uuid: string | null;
  email: string | null;
  firstname: string | null;
  lastname: string | null;
  fleet_id: number;
  fleet: string;
  type: string;
  version: string;
  enroll_status: string;
  is_online: boolean;
}

/** Words of the search, each of which must appear in one of the device's searchable fields. */
export function searchTerms(query: string): string[] {
  return query.trim().toLowerCase().split(/\s+/).filter(Boolean);
}

export function searchText(device: FilterableDevice): string {
  return [
    device.name,
    device.serial,
    device.uuid,
    device.email,
    device.firstname,
    device.lastname,
    device.fleet,
    device.type,
    device.version,
    device.enroll_status,
  ]
    .filter(Boolean)
    .join(' ')
    .toLowerCase();
}

export function matchesSearch(device: FilterableDevice, terms: readonly string[]): boolean {
  if (terms.length === 0) return true;
  const text = searchText(device);
  return terms.every((term) => text.includes(term));
}

/**
 * Whether a device matches every field of `filter` but `where` and `view` (the server resolves
 * those, GET /api/agents?where=&view=, before this applies the rest). `complianceOf` gives its compliance state
 * (null: the server does not count it, e.g. unenrolled), read only when the filter names one.
 * A fleet given by name matches the fleet's name case-insensitively; `fleet_id` its id.
 */
export function matchesDeviceFilter(
  device: FilterableDevice,
  filter: DeviceFilterFields,
  complianceOf: (id: number) => string | null = () => null,
): boolean {
  if (filter.fleet_id !== undefined && device.fleet_id !== filter.fleet_id) return false;
  if (filter.fleet !== undefined && device.fleet.toLowerCase() !== filter.fleet.toLowerCase()) return false;
  if (filter.type !== undefined && device.type !== filter.type) return false;
  if (filter.enroll_status !== undefined && device.enroll_status.toLowerCase() !== filter.enroll_status.toLowerCase())
    return false;
  if (filter.online !== undefined && device.is_online !== filter.online) return false;
  if (filter.compliance !== undefined && complianceOf(device.id) !== filter.compliance) return false;
  return filter.search === undefined || matchesSearch(device, searchTerms(filter.search));
}

/** The filter in words, for a job's history ("fleet Warehouse, android, online, search "B12""). */
export function describeDeviceFilter(filter: DeviceFilterFields): string {
  const parts = [
    filter.fleet_id !== undefined ? `fleet #${filter.fleet_id}` : '',
    filter.fleet !== undefined ? `fleet ${filter.fleet}` : '',
    filter.type ?? '',
    filter.enroll_status ?? '',
    filter.online === undefined ? '' : filter.online ? 'online' : 'offline',
    filter.compliance !== undefined ? `compliance ${filter.compliance}` : '',
    filter.search !== undefined && filter.search.trim() !== '' ? `search "${filter.search.trim()}"` : '',
    filter.view !== undefined ? `view "${filter.view}"` : '',
    filter.where !== undefined && filter.where.trim() !== '' ? `where ${filter.where.trim()}` : '',
  ].filter(Boolean);
  return parts.length === 0 ? 'every device' : parts.join(', ');
}
