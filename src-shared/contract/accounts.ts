import { Type, type Static } from 'typebox';
import { Items, Literals, Nullable } from './common.ts';
import { MIN_PASSWORD_LENGTH, ROLES } from './rules.ts';
import { PERMISSION_NAMES, type Permission } from './permissions.ts';

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
  /** The fleets an operator or observer is scoped to; empty: every fleet. */
  fleet_ids: Type.Array(Type.Integer()),
  /** Two-factor sign-in (TOTP) is on for this admin. */
  two_factor: Type.Boolean(),
});
export type Account = Static<typeof Account>;

/** A fleet as a scope names it. */
export const ScopeFleet = Type.Object({ id: Type.Integer(), name: Type.String() });
export type ScopeFleet = Static<typeof ScopeFleet>;

/** GET /api/me: who is calling, and how (a console session or an API token). */
export const Me = Type.Object({
  account: Account,
  via: Literals(['session', 'token'] as const),
  /** The API token used, when the call carries one. */
  token: Nullable(Type.Object({ id: Type.Integer(), name: Type.String(), role: Role })),
  /** The role this call acts with: the token's when a token is used, else the account's. */
  role: Role,
  /**
   * The fleets this call sees and acts on (the account's scope, narrowed by the token's): null,
   * every fleet; else those only (possibly none).
   */
  fleets: Nullable(Type.Array(ScopeFleet)),
  /** What that role may do (permissions.ts): the console shows or disables its controls by these. */
  permissions: Type.Array(Type.Unsafe<Permission>(Type.Union(PERMISSION_NAMES.map((name) => Type.Literal(name))))),
});
export type Me = Static<typeof Me>;

/** PUT /api/accounts/:id/scope: the fleets an operator or observer is scoped to (empty: every fleet). */
export const AccountScopeBody = Type.Object(
  { fleet_ids: Type.Array(Type.Integer({ minimum: 1 }), { maxItems: 1000 }) },
  { additionalProperties: false },
);
export type AccountScopeBody = Static<typeof AccountScopeBody>;

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
  /** The fleets the token is scoped to, within its account's; empty: its account's scope. */
  fleet_ids: Type.Array(Type.Integer()),
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
    /**
     * Scopes the token to these fleets (an operator or observer token only; within the caller's own
     * scope). None: the caller's scope (every fleet for an unscoped caller).
     */
    fleet_ids: Type.Optional(Type.Array(Type.Integer({ minimum: 1 }), { maxItems: 1000 })),
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
/**
 * Signed in (the cookie is set), or a second step first: `code` (a code of the authenticator app,
 * or a recovery code) or `enrol` (the owner requires two-factor and this admin has none yet),
 * each with a challenge good for five minutes.
 */
export const PasswordSignInResult = Type.Union([
  Type.Object({ signed_in: Type.Literal(true), account: Account }),
  Type.Object({
    signed_in: Type.Literal(false),
    second_step: Literals(['code', 'enrol'] as const),
    challenge: Type.String(),
  }),
]);
export type PasswordSignInResult = Static<typeof PasswordSignInResult>;
export const SignedInResult = Type.Object({ signed_in: Type.Literal(true), account: Account });
export type SignedInResult = Static<typeof SignedInResult>;

const Challenge = Type.String({ minLength: 1, maxLength: 200 });
/** A code of the authenticator app (six digits) or a recovery code (`xxxxx-xxxxx`). */
const TwoFactorCode = Type.String({ minLength: 1, maxLength: 40 });

/** POST /auth/two-factor: the sign-in's second step. */
export const TwoFactorSignInBody = Type.Object({ challenge: Challenge, code: TwoFactorCode }, { additionalProperties: false });
export type TwoFactorSignInBody = Static<typeof TwoFactorSignInBody>;
/** POST /auth/two-factor/enrol: enrolment at sign-in, when the owner requires two-factor. */
export const TwoFactorChallengeBody = Type.Object({ challenge: Challenge }, { additionalProperties: false });
export type TwoFactorChallengeBody = Static<typeof TwoFactorChallengeBody>;

/** A secret to enrol in an authenticator app: shown in this answer only (text, otpauth URL, QR code). */
export const TwoFactorSetup = Type.Object({
  secret: Type.String(),
  otpauth_url: Type.String(),
  /** The otpauth URL as a QR code, a PNG data URL. */
  qr_data_url: Type.String(),
});
export type TwoFactorSetup = Static<typeof TwoFactorSetup>;
/** POST /api/me/two-factor/confirm, /disable: a code of the app (or, to turn it off, a recovery code too). */
export const TwoFactorCodeBody = Type.Object({ code: TwoFactorCode }, { additionalProperties: false });
export type TwoFactorCodeBody = Static<typeof TwoFactorCodeBody>;
/** Ten single-use recovery codes, shown this once (only their hashes are kept). */
export const RecoveryCodes = Type.Object({ recovery_codes: Type.Array(Type.String()) });
export type RecoveryCodes = Static<typeof RecoveryCodes>;
/** Enrolment at sign-in confirmed: signed in, and the recovery codes shown this once. */
export const TwoFactorEnrolled = Type.Object({
  signed_in: Type.Literal(true),
  account: Account,
  recovery_codes: Type.Array(Type.String()),
});
export type TwoFactorEnrolled = Static<typeof TwoFactorEnrolled>;
/** GET /api/me/two-factor: one's own two-factor sign-in. */
export const TwoFactorStatus = Type.Object({
  enabled: Type.Boolean(),
  enabled_at: Nullable(Type.String()),
  recovery_codes_left: Type.Integer(),
  /** The owner requires two-factor for everyone: it cannot be turned off. */
  required: Type.Boolean(),
});
export type TwoFactorStatus = Static<typeof TwoFactorStatus>;

/** POST /api/me/password: one's own password; the other sessions end. */
export const PasswordChangeBody = Type.Object(
  {
    current_password: Type.String({ minLength: 1, maxLength: 1024 }),
    new_password: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: 1024 }),
  },
  { additionalProperties: false },
);
export type PasswordChangeBody = Static<typeof PasswordChangeBody>;
export const PasswordChanged = Type.Object({ changed: Type.Literal(true), ended_sessions: Type.Integer() });
export type PasswordChanged = Static<typeof PasswordChanged>;

/** One of an admin's console sessions: where and when it signed in, when last seen, when it ends. */
export const AdminSessionInfo = Type.Object({
  id: Type.String(),
  address: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  created_at: Type.String(),
  last_used_at: Type.String(),
  /** It ends then unless used before (idle time), or at its maximum age. */
  expires_at: Type.String(),
  /** The session this request comes from. */
  current: Type.Boolean(),
});
export type AdminSessionInfo = Static<typeof AdminSessionInfo>;
export const AdminSessionList = Items(AdminSessionInfo);
export type AdminSessionList = Static<typeof AdminSessionList>;
export const SessionIdParams = Type.Object({ id: Type.String({ pattern: '^[0-9a-f]{16}$' }) });
export type SessionIdParams = Static<typeof SessionIdParams>;
export const SessionsEnded = Type.Object({ ended: Type.Integer() });
export type SessionsEnded = Static<typeof SessionsEnded>;

/** The owner's sign-in settings: two-factor for everyone, and how long console sessions last. */
export const SignInSettings = Type.Object({
  /** Every admin signs in with a second factor; one without it enrols at sign-in first. */
  require_two_factor: Type.Boolean(),
  /** A console session unused this long ends (5 minutes to 30 days). */
  session_idle_minutes: Type.Integer({ minimum: 5, maximum: 43_200 }),
  /** A console session ends this long after sign-in, however busy (1 hour to 90 days). */
  session_max_age_hours: Type.Integer({ minimum: 1, maximum: 2160 }),
});
export type SignInSettings = Static<typeof SignInSettings>;
export const SignInSettingsPatch = Type.Partial(SignInSettings, { additionalProperties: false, minProperties: 1 });
export type SignInSettingsPatch = Static<typeof SignInSettingsPatch>;
export const DEFAULT_SIGN_IN_SETTINGS: SignInSettings = {
  require_two_factor: false,
  session_idle_minutes: 12 * 60,
  session_max_age_hours: 7 * 24,
};

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
