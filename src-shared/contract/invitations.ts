import { Type, type Static } from 'typebox';
import { AgentBrief } from './agents.ts';
import { Helpdesk, Items, Literals, Nullable } from './common.ts';
import { LiveEvent } from './events.ts';
import { MailDelivery } from './mail.ts';
import { EMAIL_MAX_LENGTH, INVITATION_LIFETIME_DAYS } from './rules.ts';

export const INVITATION_STATUSES = ['pending', 'done', 'expired', 'revoked'] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

/** An invitation as the admin API, the CLI and the console show it. */
export const Invitation = Type.Object({
  id: Type.Integer(),
  entity_id: Type.Integer(),
  email: Type.String(),
  firstname: Nullable(Type.String()),
  lastname: Nullable(Type.String()),
  status: Literals(INVITATION_STATUSES),
  created_at: Type.String(),
  expires_at: Type.String(),
  used_at: Nullable(Type.String()),
  last_used_at: Nullable(Type.String()),
  revoked_at: Nullable(Type.String()),
  fleet_id: Type.Integer(),
  fleet: Nullable(Type.String()),
  /** The device enrolled with it. */
  agent: Nullable(AgentBrief),
  refused_attempts: Type.Integer(),
  invitation_token: Type.String(),
  user_token: Type.String(),
  deeplink: Type.String(),
  deeplink_data: Type.String(),
  app_link: Type.String(),
  /** The invitation email: null when none was ever queued. */
  delivery: Nullable(MailDelivery),
  helpdesk: Helpdesk,
});
export type Invitation = Static<typeof Invitation>;

/** One enrollment attempt with an invitation or a code: what a device sent and what came of it. */
export const EnrollmentAttempt = Type.Object({
  id: Type.Integer(),
  at: Type.String(),
  outcome: Type.Union([Type.Literal('refused'), Type.Literal('used')]),
  code: Nullable(Type.String()),
  message: Type.String(),
  remote_addr: Nullable(Type.String()),
  email: Nullable(Type.String()),
  serial: Nullable(Type.String()),
  uuid: Nullable(Type.String()),
});

export const InvitationLogEntry = Type.Object({
  ...EnrollmentAttempt.properties,
  /** The invitation_log row's own column. */
  invitation_id: Type.Integer(),
});
export type InvitationLogEntry = Static<typeof InvitationLogEntry>;

/** GET /api/invitations/:id: with its enrollment log and events. */
export const InvitationDetail = Type.Object({
  ...Invitation.properties,
  log: Type.Array(InvitationLogEntry),
  events: Type.Array(LiveEvent),
});
export type InvitationDetail = Static<typeof InvitationDetail>;

const Name = Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()]));
/** One invitation to create (a row of a bulk import alike). */
export const InvitationInput = Type.Object(
  {
    email: Type.String({ maxLength: EMAIL_MAX_LENGTH }),
    firstname: Name,
    lastname: Name,
    fleet: Name,
    // No null branch: type coercion would turn an out-of-range 0 into null, i.e. the default.
    days: Type.Optional(Type.Integer({ minimum: INVITATION_LIFETIME_DAYS.min, maximum: INVITATION_LIFETIME_DAYS.max })),
  },
  { additionalProperties: false },
);
export type InvitationInput = Static<typeof InvitationInput>;

/** Email the invitation(s) now; default: the mail_send_on_create setting (true unless changed). */
const SendEmail = Type.Optional(Type.Boolean());
/** Invite an address that already has a pending invitation (a second device); default: refused. */
const Another = Type.Optional(Type.Boolean());

/** POST /api/invitations. */
export const InvitationCreate = Type.Object(
  { ...InvitationInput.properties, send_email: SendEmail, another: Another },
  { additionalProperties: false },
);
export type InvitationCreate = Static<typeof InvitationCreate>;

export const BULK_MAX = 5000;
/** POST /api/invitations/bulk and /validate. */
export const InvitationBulk = Type.Object({
  invitations: Type.Array(InvitationInput, { minItems: 1, maxItems: BULK_MAX }),
  send_email: SendEmail,
  another: Another,
});
export type InvitationBulk = Static<typeof InvitationBulk>;

/** POST /api/invitations/validate: each problem as "row N: …"; nothing is created. */
export const InvitationValidation = Type.Object({ errors: Type.Array(Type.String()) });
export type InvitationValidation = Static<typeof InvitationValidation>;

/** POST /api/invitations/bulk (201): emails go out in the background; follow `mail.batch_id`. */
export const InvitationBulkCreated = Type.Object({
  items: Type.Array(Invitation),
  mail: Type.Object({ batch_id: Nullable(Type.String()), queued: Type.Integer() }),
});
export type InvitationBulkCreated = Static<typeof InvitationBulkCreated>;

/** GET /api/invitations?… */
export const InvitationFilter = Type.Object({
  status: Type.Optional(Literals(INVITATION_STATUSES)),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  fleet_id: Type.Optional(Type.Integer({ minimum: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type InvitationFilter = Static<typeof InvitationFilter>;

export const InvitationPage = Type.Object({ ...Items(Invitation).properties, total: Type.Integer() });
export type InvitationPage = Static<typeof InvitationPage>;

/** 409 of POST /api/invitations: the address has a pending invitation, carried to resend it (ERROR_INVITATION_PENDING). */
export const InvitationPendingError = Type.Object({
  error: Type.String(),
  message: Type.String(),
  invitation: Type.Optional(Invitation),
});
export type InvitationPendingError = Static<typeof InvitationPendingError>;

/** 400 of POST /api/invitations/bulk: each invalid row, and nothing was created (other 400s carry no `errors`). */
export const InvitationBulkError = Type.Object({
  error: Type.String(),
  message: Type.String(),
  errors: Type.Optional(Type.Array(Type.String())),
});
export type InvitationBulkError = Static<typeof InvitationBulkError>;
