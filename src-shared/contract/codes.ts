import { Type, type Static } from 'typebox';
import { Helpdesk, Items, Literals, Nullable } from './common.ts';
import { EnrollmentAttempt } from './invitations.ts';
import { CODE_LIFETIME_DAYS, CODE_MAX_USES } from './rules.ts';

export const CODE_STATUSES = ['active', 'expired', 'used_up', 'revoked'] as const;
export type CodeStatus = (typeof CODE_STATUSES)[number];
export const CodeApproval = Type.Union([Type.Literal('auto'), Type.Literal('manual')]);
export type CodeApproval = Static<typeof CodeApproval>;

/** An enrollment code as the admin API, the CLI and the console show it. */
export const EnrollmentCode = Type.Object({
  id: Type.Integer(),
  entity_id: Type.Integer(),
  name: Type.String(),
  status: Literals(CODE_STATUSES),
  fleet_id: Type.Integer(),
  fleet: Nullable(Type.String()),
  /** Email domains allowed to use it; empty: any. */
  domains: Type.Array(Type.String()),
  max_uses: Nullable(Type.Integer()),
  uses: Type.Integer(),
  approval: CodeApproval,
  created_at: Type.String(),
  expires_at: Nullable(Type.String()),
  revoked_at: Nullable(Type.String()),
  rotated_at: Nullable(Type.String()),
  last_used_at: Nullable(Type.String()),
  refused_attempts: Type.Integer(),
  pending_approval: Type.Integer(),
  token: Type.String(),
  user_token: Type.String(),
  deeplink: Type.String(),
  deeplink_data: Type.String(),
  app_link: Type.String(),
  helpdesk: Helpdesk,
});
export type EnrollmentCode = Static<typeof EnrollmentCode>;
export const CodeList = Items(EnrollmentCode);

export const CodeLogEntry = Type.Object({
  ...EnrollmentAttempt.properties,
  user_id: Nullable(Type.Integer()),
  agent_id: Nullable(Type.Integer()),
  agent_name: Nullable(Type.String()),
  enroll_status: Nullable(Type.String()),
});
export type CodeLogEntry = Static<typeof CodeLogEntry>;

/** GET /api/codes/:id: with its enrollment log. */
export const CodeDetail = Type.Object({ ...EnrollmentCode.properties, log: Type.Array(CodeLogEntry) });
export type CodeDetail = Static<typeof CodeDetail>;

/** POST /api/codes. */
export const CodeCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    fleet: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
    domains: Type.Optional(Type.Array(Type.String({ maxLength: 253 }), { maxItems: 50 })),
    // Absent: unlimited uses / never expires. No null branch: type coercion would turn a 0 into null.
    max_uses: Type.Optional(Type.Integer({ minimum: 1, maximum: CODE_MAX_USES })),
    days: Type.Optional(Type.Integer({ minimum: CODE_LIFETIME_DAYS.min, maximum: CODE_LIFETIME_DAYS.max })),
    approval: Type.Optional(CodeApproval),
  },
  { additionalProperties: false },
);
export type CodeCreate = Static<typeof CodeCreate>;
