// What each role may do: one vocabulary of permissions and one table role -> permissions. Plain
// data, no imports but the roles: the console (useCan), the CLI (its 403 line) and the backend (the
// route table's check, backend/http/route-table.ts) all read this one copy.
//
// Every admin route names the permission it needs in src-shared/contract/admin-routes.ts; a role
// holds a permission or not, nothing in between. The roles nest: each holds everything the role
// below it holds (observer ⊂ operator ⊂ admin ⊂ owner), which test/unit/permissions.test.ts checks.
import { ROLES } from './rules.ts';

export type Role = (typeof ROLES)[number];

/** Each permission and what it lets one do, as "cannot …" reads it ("An operator cannot wipe devices"). */
export const PERMISSIONS = {
  'status.read': 'see the server status',
  'events.read': 'see the activity',
  'audit.read': 'see the audit trail',
  'devices.read': 'see devices',
  'devices.ping': 'ping devices',
  'devices.locate': 'locate devices',
  'devices.inventory': 'ask devices for their inventory',
  'devices.lock': 'lock or unlock devices',
  'devices.approve': 'approve or reject devices',
  'devices.move': 'move devices to another fleet',
  'devices.wipe': 'wipe devices',
  'devices.unenroll': 'unenroll devices',
  'devices.delete': 'delete devices',
  'invitations.read': 'see invitations',
  'invitations.create': 'invite',
  'invitations.resend': 'resend invitations',
  'invitations.revoke': 'revoke invitations',
  'invitations.delete': 'delete invitations',
  'codes.read': 'see enrollment codes',
  'codes.write': 'create or rotate enrollment codes',
  'codes.revoke': 'revoke enrollment codes',
  'simulator.run': 'run the device simulator',
  'fleets.read': 'see fleets',
  'fleets.write': 'create, rename or delete fleets',
  'files.read': 'see files and packages',
  'files.write': 'upload, change or delete files and packages',
  'deployments.read': 'see deployments',
  'deployments.write': 'deploy or undeploy',
  'policies.read': 'see policies',
  'policies.write': 'set or unset policies',
  'mail.read': 'see the mail queue and settings',
  'alerts.read': 'see alert rules, incidents and webhooks',
  'alerts.write': 'change alert rules and webhooks',
  'settings.read': 'see settings',
  'settings.write': 'change settings',
  'settings.server': 'change the server settings',
  'tokens.own': 'manage their own API tokens',
  'accounts.manage': 'manage accounts',
} as const satisfies Record<string, string>;

export type Permission = keyof typeof PERMISSIONS;
export const PERMISSION_NAMES = Object.keys(PERMISSIONS) as Permission[];

const OBSERVER: readonly Permission[] = [
  'status.read',
  'events.read',
  'audit.read',
  'devices.read',
  'invitations.read',
  'codes.read',
  'fleets.read',
  'files.read',
  'deployments.read',
  'policies.read',
  'mail.read',
  'alerts.read',
  'settings.read',
  'tokens.own',
];
/** The helpdesk: invite, resend, revoke, approve, ping, locate, inventory, lock and unlock. */
const OPERATOR: readonly Permission[] = [
  ...OBSERVER,
  'invitations.create',
  'invitations.resend',
  'invitations.revoke',
  'codes.revoke',
  'devices.approve',
  'devices.ping',
  'devices.locate',
  'devices.inventory',
  'devices.lock',
];
/** Everything but accounts and the owner's settings (OWNER_SETTINGS). */
const ADMIN: readonly Permission[] = [
  ...OPERATOR,
  'devices.move',
  'devices.wipe',
  'devices.unenroll',
  'devices.delete',
  'invitations.delete',
  'codes.write',
  'simulator.run',
  'fleets.write',
  'files.write',
  'deployments.write',
  'policies.write',
  'alerts.write',
  'settings.write',
];
const OWNER: readonly Permission[] = [...ADMIN, 'settings.server', 'accounts.manage'];

/** The one table: what each role may do. */
export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  owner: OWNER,
  admin: ADMIN,
  operator: OPERATOR,
  observer: OBSERVER,
};

/**
 * The owner's settings (`settings.server`): where phones and browsers reach this server and the
 * outside services it logs in to with credentials. An admin changes every other setting (the agent
 * app, the app link, the helpdesk, invitation lifetimes, the sender and the templates of the email).
 */
export const OWNER_SETTINGS = [
  'public_host',
  'deeplink_base_url',
  'mqtt_tls',
  'android_bugcollector_url',
  'android_bugcollector_login',
  'android_bugcollector_passwd',
  'smtp_host',
  'smtp_port',
  'smtp_security',
  'smtp_user',
  'smtp_reject_unauthorized',
  'smtp_max_connections',
  'smtp_password',
  'smtp_url',
] as const;

export function can(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].includes(permission);
}

/** "An operator", "An admin", "An owner", "An observer". */
export function roleWithArticle(role: Role): string {
  return `${/^[aeiou]/.test(role) ? 'An' : 'A'} ${role}`;
}

/** The refusal's message, the same wherever it is shown: "An operator cannot wipe devices: needs devices.wipe". */
export function refusalMessage(role: Role, permission: Permission): string {
  return `${roleWithArticle(role)} cannot ${PERMISSIONS[permission]}: needs ${permission}`;
}

/** What a route needs: a permission; or none (`public`: reached without signing in; `signed-in`: any role). */
export type RoutePermission =
  | Permission
  | 'public'
  | 'signed-in'
  /** The body's field `field` names the permission by its value (the commands sent to a device). */
  | { readonly field: string; readonly values: Readonly<Record<string, Permission>> }
  /** `permission`, plus for each of `keys` present in the body, its own (the owner's settings). */
  | { readonly permission: Permission; readonly keys: Readonly<Record<string, Permission>> };

/**
 * The permissions a request needs, from its route's declaration and its (validated) body; empty for
 * a public route. A body value the declaration does not map needs nothing here (the schema refuses it).
 */
export function permissionsNeeded(rule: RoutePermission, body: unknown): Permission[] {
  if (rule === 'public' || rule === 'signed-in') return [];
  if (typeof rule === 'string') return [rule];
  const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  if ('field' in rule) {
    const value = fields[rule.field];
    const needed = typeof value === 'string' && Object.hasOwn(rule.values, value) ? rule.values[value] : undefined;
    return needed === undefined ? [] : [needed];
  }
  const extra = Object.keys(fields).flatMap((key) => (Object.hasOwn(rule.keys, key) ? [rule.keys[key]!] : []));
  return [rule.permission, ...new Set(extra)];
}
