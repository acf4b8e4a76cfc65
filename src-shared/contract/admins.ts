// Managing admins (issue 22, items 5 and 6): the Accounts page and `mdm-console admins|admin …`.
// An admin is invited by email with a role; the email carries a set-up link (expiring, one use)
// to a page where they choose their password. Until then the account reads `invited`.
import { Type, type Static } from 'typebox';
import { Items, Literals, Nullable } from './common.ts';
import { Account, Role } from './accounts.ts';
import { ACCOUNT_INVITE_DAYS, EMAIL_MAX_LENGTH, MIN_PASSWORD_LENGTH } from './rules.ts';

/** The email of an admin's invitation, as the mail worker reports it. */
export const AccountInviteDelivery = Type.Object({
  state: Literals(['queued', 'sending', 'sent', 'failed', 'outbox'] as const),
  attempts: Type.Integer(),
  error: Nullable(Type.String()),
  sent_at: Nullable(Type.String()),
  /** While a transient failure waits for its next attempt. */
  retry_at: Nullable(Type.String()),
});
export type AccountInviteDelivery = Static<typeof AccountInviteDelivery>;

/** An invited admin's latest set-up link: when it ends, and its email (null: made with no email). */
export const AccountInvite = Type.Object({
  created_at: Type.String(),
  expires_at: Type.String(),
  expired: Type.Boolean(),
  delivery: Nullable(AccountInviteDelivery),
});
export type AccountInvite = Static<typeof AccountInvite>;

/** An admin as the Accounts page lists them: the account, and its invitation while it is `invited`. */
export const AccountEntry = Type.Object({
  ...Account.properties,
  invitation: Nullable(AccountInvite),
  /** Holds the data dir's admin token (the CLI's): never demoted, disabled or deleted. */
  data_dir_owner: Type.Boolean(),
});
export type AccountEntry = Static<typeof AccountEntry>;
export const AccountList = Items(AccountEntry);
export type AccountList = Static<typeof AccountList>;

const Email = Type.String({ minLength: 3, maxLength: EMAIL_MAX_LENGTH, pattern: '^[^\\s@]+@[^\\s@]+$' });
const DisplayName = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' });

/** POST /api/accounts: invite an admin by email with a role. */
export const AccountInviteBody = Type.Object(
  {
    email: Email,
    role: Role,
    display_name: Type.Optional(DisplayName),
    /** How long the set-up link works, in days (default 7). */
    days: Type.Optional(Type.Integer({ minimum: ACCOUNT_INVITE_DAYS.min, maximum: ACCOUNT_INVITE_DAYS.max })),
    /** An operator or observer only: the fleets they see and act on (none: every fleet). */
    fleet_ids: Type.Optional(Type.Array(Type.Integer({ minimum: 1 }), { maxItems: 1000 })),
    /** True: no email; the answer carries the set-up link to hand over another way. */
    no_email: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type AccountInviteBody = Static<typeof AccountInviteBody>;

/** POST /api/accounts/:id/invitation: a new set-up link for an invited admin (the old one stops working). */
export const AccountReinviteBody = Type.Object(
  {
    days: Type.Optional(Type.Integer({ minimum: ACCOUNT_INVITE_DAYS.min, maximum: ACCOUNT_INVITE_DAYS.max })),
    no_email: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type AccountReinviteBody = Static<typeof AccountReinviteBody>;

/** The answer to an invitation: the account, and the set-up link when no email was sent (null otherwise). */
export const AccountInvited = Type.Object({
  account: AccountEntry,
  setup_url: Nullable(Type.String()),
  email_queued: Type.Boolean(),
});
export type AccountInvited = Static<typeof AccountInvited>;

/** PATCH /api/accounts/:id: a new role. */
export const AccountUpdate = Type.Object({ role: Role }, { additionalProperties: false });
export type AccountUpdate = Static<typeof AccountUpdate>;

/** The set-up page's link: `?token=`. */
export const AccountSetupQuery = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export type AccountSetupQuery = Static<typeof AccountSetupQuery>;

/** GET /auth/invitation: whom a live set-up link is for (a used, expired or replaced one answers 410, saying which). */
export const AccountSetupInfo = Type.Object({
  email: Type.String(),
  display_name: Type.String(),
  role: Role,
  expires_at: Type.String(),
  invited_by: Nullable(Type.String()),
});
export type AccountSetupInfo = Static<typeof AccountSetupInfo>;

/** POST /auth/invitation: the invited admin's password (and name), through their set-up link. */
export const AccountSetupBody = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 200 }),
    display_name: Type.Optional(DisplayName),
    password: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: 1024 }),
  },
  { additionalProperties: false },
);
export type AccountSetupBody = Static<typeof AccountSetupBody>;
