// The rules the server enforces and the console's forms check as the admin types: one copy, so a
// form can never accept what the server refuses (or the reverse). Plain TypeScript, no imports:
// the browser bundle, the CLI and the backend all load it.

/** Pragmatic address check: one @, no spaces or specials in the local part, a dotted domain of letters, digits and hyphens. */
const EMAIL = /^[^\s@"<>(),;:\\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;
export const EMAIL_MAX_LENGTH = 254;

export function isValidEmail(email: string): boolean {
  return email.length <= EMAIL_MAX_LENGTH && EMAIL.test(email.trim());
}

/** Addresses are stored and compared this way. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** How long an invitation stays valid, in whole days (also the `invitation_lifetime_days` setting). */
export const INVITATION_LIFETIME_DAYS = { min: 1, max: 180 } as const;
/** How long an enrollment code stays valid, in whole days (none: it never expires). */
export const CODE_LIFETIME_DAYS = { min: 1, max: 365 } as const;
/** An enrollment code's most uses (none: unlimited). */
export const CODE_MAX_USES = 1_000_000;

export const isWholeNumberIn = (value: number, range: { readonly min: number; readonly max: number }) =>
  Number.isInteger(value) && value >= range.min && value <= range.max;

/** What the server stores as the public host: empty (detected at start), a host name or IPv4, or an IPv6 address. */
export const PUBLIC_HOST_PATTERN = '^(|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$';
export const HOST_MAX_LENGTH = 253;

const HOST_NAME = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * A host name, IPv4 or IPv6 address, without scheme or port. Stricter than PUBLIC_HOST_PATTERN
 * (labels of at most 63 characters, IPv4 parts up to 255), which every value it accepts also matches.
 */
export function isValidHost(host: string): boolean {
  const value = host.trim();
  if (value === '' || value.length > HOST_MAX_LENGTH) return false;
  if (/^\d+(\.\d+)*$/.test(value)) return IPV4.test(value);
  if (value.includes(':')) return /^\[?[0-9A-Fa-f:.]+\]?$/.test(value) && value.replace(/[[\]]/g, '').split(':').length >= 3;
  return HOST_NAME.test(value);
}

/** An address only this machine reaches: phones cannot use it. */
export function isLoopback(host: string): boolean {
  const value = host.trim().toLowerCase();
  return value === 'localhost' || value === '::1' || value === '[::1]' || /^127\./.test(value);
}

/** Schemes a browser handles itself: never an agent app's. */
export const BROWSER_SCHEMES = [
  'javascript',
  'data',
  'vbscript',
  'file',
  'http',
  'https',
  'blob',
  'about',
  'ftp',
  'mailto',
  'tel',
  'ws',
  'wss',
] as const;
/** The app link's scheme: a lower-case letter, then at most 31 of lower-case letters, digits, + . - */
export const APP_LINK_SCHEME = /^[a-z][a-z0-9+.-]{0,31}$/;
/** The same rule as one JSON-schema pattern (the settings schema). */
export const APP_LINK_SCHEME_PATTERN = `^(?!(?:${BROWSER_SCHEMES.join('|')})$)${APP_LINK_SCHEME.source.slice(1)}`;

/** Commands the broker delivers to agents over MQTT (POST /api/agents/:id/commands). */
export const AGENT_COMMANDS = ['ping', 'lock', 'unlock', 'wipe', 'unenroll', 'inventory', 'geolocate'] as const;
export type AgentCommand = (typeof AGENT_COMMANDS)[number];

/** An Android package name: dot-separated Java identifiers, at least two segments (the console checks it as typed). */
export const PACKAGE_NAME_PATTERN = '^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)+$';

/** What an admin may do, from most to least (issue 22): owner, admin, operator (helpdesk), observer. */
export const ROLES = ['owner', 'admin', 'operator', 'observer'] as const;

/** True when `role` may do at least what `than` may (a token never outranks its account). */
export const roleAtLeast = (role: (typeof ROLES)[number], than: (typeof ROLES)[number]): boolean =>
  ROLES.indexOf(role) <= ROLES.indexOf(than);

/** Passwords: at least this long (and at most 1,024 characters). */
export const MIN_PASSWORD_LENGTH = 10;

/** How long an invited admin's set-up link works, in whole days (default 7). */
export const ACCOUNT_INVITE_DAYS = { min: 1, max: 30, default: 7 } as const;
