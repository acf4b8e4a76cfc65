import { Type, type Static } from 'typebox';
import { Items, Literals, Nullable } from './common.ts';
import { MIN_PASSWORD_LENGTH, ROLES } from './rules.ts';

/** What an admin may do (ROLES, roleAtLeast and MIN_PASSWORD_LENGTH are in rules.ts: the console loads them, and no schema). */
export const Role = Literals(ROLES);
export type Role = Static<typeof Role>;

/** An admin account as the API shows it: never its password hash. */
export const Account = Type.Object({
  id: Type.Integer(),
  /** Null for the desktop app's owner until an email is chosen (the machine's user is the owner). */
  email: Nullable(Type.String()),
  display_name: Type.String(),
  role: Role,
  has_password: Type.Boolean(),
  disabled: Type.Boolean(),
  /** `invited`: asked by email, no password chosen yet; `disabled`: refused everywhere (sessions ended, tokens refused). */
  status: Literals(['invited', 'active', 'disabled'] as const),
  created_at: Type.String(),
  last_sign_in_at: Nullable(Type.String()),
});
export type Account = Static<typeof Account>;

/** GET /api/me: who is calling, and how (a console session or an API token). */
export const Me = Type.Object({
  account: Account,
  via: Literals(['session', 'token'] as const),
  /** The API token used, when the call carries one. */
  token: Nullable(Type.Object({ id: Type.Integer(), name: Type.String(), role: Role })),
  /** The role this call acts with: the token's when a token is used, else the account's. */
  role: Role,
});
export type Me = Static<typeof Me>;

/** A personal API token as listed: never the token itself (shown once, at creation). */
export const ApiToken = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  role: Role,
  /** `data-dir`: the admin token in the data dir (the CLI's); `personal`: made by an admin. */
  kind: Literals(['personal', 'data-dir'] as const),
  account_id: Type.Integer(),
  account_name: Type.String(),
  created_at: Type.String(),
  expires_at: Nullable(Type.String()),
  last_used_at: Nullable(Type.String()),
  revoked_at: Nullable(Type.String()),
  status: Literals(['active', 'expired', 'revoked'] as const),
});
export type ApiToken = Static<typeof ApiToken>;
export const ApiTokenList = Items(ApiToken);
export type ApiTokenList = Static<typeof ApiTokenList>;

/** POST /api/tokens: a name, a role no higher than the caller's, and a lifetime (days; none: never expires). */
export const ApiTokenCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }),
    role: Role,
    days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
  },
  { additionalProperties: false },
);
export type ApiTokenCreate = Static<typeof ApiTokenCreate>;
/** The answer to POST /api/tokens (201): the token, shown this once. */
export const ApiTokenCreated = Type.Object({ ...ApiToken.properties, token: Type.String() });
export type ApiTokenCreated = Static<typeof ApiTokenCreated>;

/** POST /auth/password: the console's sign-in by email and password. */
export const PasswordSignInBody = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 320 }), password: Type.String({ minLength: 1, maxLength: 1024 }) },
  { additionalProperties: false },
);
export type PasswordSignInBody = Static<typeof PasswordSignInBody>;
export const PasswordSignInResult = Type.Object({ signed_in: Type.Literal(true), account: Account });
export type PasswordSignInResult = Static<typeof PasswordSignInResult>;

/** POST /auth/setup: the first person, with the one-time set-up link, chooses the owner's email and password. */
export const OwnerSetupBody = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.String({ minLength: 3, maxLength: 320, pattern: '^[^\\s@]+@[^\\s@]+$' }),
    display_name: Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }),
    password: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: 1024 }),
  },
  { additionalProperties: false },
);
export type OwnerSetupBody = Static<typeof OwnerSetupBody>;

/** One entry of the audit trail: who (an admin, and the API token used), from where, did what to which object. */
export const AuditEntry = Type.Object({
  id: Type.Integer(),
  at: Type.String(),
  account_id: Nullable(Type.Integer()),
  /** The admin's name ('unknown' for a failed sign-in). */
  actor: Type.String(),
  token_id: Nullable(Type.Integer()),
  token_name: Nullable(Type.String()),
  role: Nullable(Type.String()),
  address: Nullable(Type.String()),
  /** An event type (`invitation.created`, `admin.signed_in` …), or `METHOD /api/path` for a change that records none. */
  action: Type.String(),
  target_kind: Nullable(Type.String()),
  target_id: Nullable(Type.Integer()),
  target_name: Nullable(Type.String()),
  message: Type.String(),
  /** The fields the action changed: `{ field: { before, after } }` (null: it did not exist, or no longer does); secrets read "[redacted]". Null when it changed no field. */
  changes: Nullable(Type.Record(Type.String(), Type.Object({ before: Type.Unknown(), after: Type.Unknown() }))),
});
export type AuditEntry = Static<typeof AuditEntry>;
export const AuditList = Items(AuditEntry);
export type AuditList = Static<typeof AuditList>;

const ISO_TIME = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:\\d{2})?)?$';

/** The audit trail's filters: the list's and the export's. */
const AuditFilters = {
  /** Part of the admin's name, their email, or part of a token's name. */
  actor: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
  /** An action, or a prefix ending in `.` (`agent.`). */
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  target_kind: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  target_id: Type.Optional(Type.Integer({ minimum: 1 })),
  /** Part of the object's name (a device's, an invitation's email, a fleet's …). */
  target_name: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
  /** ISO 8601: a date (`2026-05-01`) or a time (`2026-05-01T09:30:00Z`). */
  since: Type.Optional(Type.String({ pattern: ISO_TIME })),
  until: Type.Optional(Type.String({ pattern: ISO_TIME })),
  before_id: Type.Optional(Type.Integer({ minimum: 1 })),
};

/** GET /api/audit: newest first, filtered. */
export const AuditQuery = Type.Object(
  { ...AuditFilters, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 200 })) },
  { additionalProperties: false },
);
export type AuditQuery = Static<typeof AuditQuery>;

export const AUDIT_EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type AuditExportFormat = (typeof AUDIT_EXPORT_FORMATS)[number];

/** GET /api/audit/export: every entry the filters match (no limit), newest first, as CSV or JSON lines. */
export const AuditExportQuery = Type.Object(
  { ...AuditFilters, format: Type.Optional(Literals(AUDIT_EXPORT_FORMATS)) },
  { additionalProperties: false },
);
export type AuditExportQuery = Static<typeof AuditExportQuery>;
