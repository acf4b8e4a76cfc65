import { Type, type Static } from 'typebox';
import { Items, Literals, Nullable } from './common.ts';

import { ALERT_KINDS } from './alert-kinds.ts';

export { ALERT_KIND_INFO, ALERT_KINDS, describeAlertCondition, type AlertKind } from './alert-kinds.ts';

/** Checked by the server with the invitations' rule (rules.ts isValidEmail). */
const Email = Type.String({ minLength: 3, maxLength: 254 });
const Emails = Type.Array(Email, { maxItems: 20, uniqueItems: true });
const WebhookIds = Type.Array(Type.Integer({ minimum: 1 }), { maxItems: 20, uniqueItems: true });
const RuleName = Type.String({ minLength: 1, maxLength: 100 });
const Threshold = Type.Integer({ minimum: 1, maximum: 24 * 180 });

export const AlertRule = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  kind: Literals(ALERT_KINDS),
  /** "Device not seen for 7 days". */
  condition: Type.String(),
  enabled: Type.Boolean(),
  /** Days or hours (the kind's unit); null for kinds without one. */
  threshold: Nullable(Type.Integer()),
  /** Only devices (or invitations) of this fleet; null: every fleet. */
  fleet_id: Nullable(Type.Integer()),
  fleet_name: Nullable(Type.String()),
  emails: Type.Array(Type.String()),
  webhook_ids: Type.Array(Type.Integer()),
  open_incidents: Type.Integer(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type AlertRule = Static<typeof AlertRule>;
export const AlertRuleList = Items(AlertRule);

/** POST /api/alerts/rules. At least one channel (an email or a webhook); the threshold defaults to the kind's. */
export const AlertRuleCreate = Type.Object(
  {
    kind: Literals(ALERT_KINDS),
    name: Type.Optional(RuleName),
    enabled: Type.Optional(Type.Boolean()),
    threshold: Type.Optional(Nullable(Threshold)),
    fleet_id: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    emails: Type.Optional(Emails),
    webhook_ids: Type.Optional(WebhookIds),
  },
  { additionalProperties: false },
);
export type AlertRuleCreate = Static<typeof AlertRuleCreate>;

/** PATCH /api/alerts/rules/:id: any of these (the kind stays). */
export const AlertRulePatch = Type.Object(
  {
    name: Type.Optional(RuleName),
    enabled: Type.Optional(Type.Boolean()),
    threshold: Type.Optional(Nullable(Threshold)),
    fleet_id: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    emails: Type.Optional(Emails),
    webhook_ids: Type.Optional(WebhookIds),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type AlertRulePatch = Static<typeof AlertRulePatch>;

export const INCIDENT_STATES = ['open', 'resolved'] as const;

/** One subject (a device, a task, an invitation, the broker, SMTP) for which a rule's condition held. */
export const AlertIncident = Type.Object({
  id: Type.Integer(),
  rule_id: Type.Integer(),
  rule_name: Type.String(),
  kind: Literals(ALERT_KINDS),
  /** `agent:12`, `task:40`, `invitation:3`, `broker`, `smtp`: one open incident per rule and subject. */
  subject_key: Type.String(),
  /** What it is about, as people read it ("Pixel 7 of Ana Ruiz"). */
  subject: Type.String(),
  agent_id: Nullable(Type.Integer()),
  /** Why, when it was last seen ("last seen 2026-11-20 09:14 UTC, 6 days ago"). */
  detail: Type.String(),
  state: Literals(INCIDENT_STATES),
  opened_at: Type.String(),
  /** The last evaluation that found the condition still holding. */
  last_seen_at: Type.String(),
  resolved_at: Nullable(Type.String()),
});
export type AlertIncident = Static<typeof AlertIncident>;
export const AlertIncidentList = Items(AlertIncident);

export const AlertIncidentsQuery = Type.Object({
  state: Type.Optional(Literals(INCIDENT_STATES)),
  rule_id: Type.Optional(Type.Integer({ minimum: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 200 })),
});
export type AlertIncidentsQuery = Static<typeof AlertIncidentsQuery>;

/** POST /api/alerts/evaluate: rules evaluated now rather than at the next minute. */
export const AlertEvaluation = Type.Object({ opened: Type.Integer(), resolved: Type.Integer() });
export type AlertEvaluation = Static<typeof AlertEvaluation>;

// Webhooks

export const WEBHOOK_DELIVERY_STATES = ['queued', 'sending', 'delivered', 'failed'] as const;
export type WebhookDeliveryState = (typeof WEBHOOK_DELIVERY_STATES)[number];

export const WebhookDelivery = Type.Object({
  id: Type.Integer(),
  webhook_id: Type.Integer(),
  /** `alert.fired`, `alert.resolved`, `webhook.test`. */
  event: Type.String(),
  state: Literals(WEBHOOK_DELIVERY_STATES),
  /** Attempts made so far (the one under way included). */
  attempts: Type.Integer(),
  max_attempts: Type.Integer(),
  /** When the next attempt goes (queued), null otherwise. */
  next_attempt_at: Nullable(Type.String()),
  /** The last attempt's HTTP status, null when it got none (time-out, refused). */
  response_code: Nullable(Type.Integer()),
  /** How long the last attempt took, in milliseconds. */
  response_ms: Nullable(Type.Integer()),
  /** Why the last attempt failed. */
  error: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  delivered_at: Nullable(Type.String()),
});
export type WebhookDelivery = Static<typeof WebhookDelivery>;
export const WebhookDeliveryList = Items(WebhookDelivery);

export const WebhookDeliveriesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
});
export type WebhookDeliveriesQuery = Static<typeof WebhookDeliveriesQuery>;

export const Webhook = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  url: Type.String(),
  enabled: Type.Boolean(),
  /** The secret's last four characters ("…9f3a"): it is never shown again in full. */
  secret_hint: Type.String(),
  /** Rules that notify it. */
  rule_ids: Type.Array(Type.Integer()),
  last_delivery: Nullable(WebhookDelivery),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type Webhook = Static<typeof Webhook>;
export const WebhookList = Items(Webhook);

/** The created webhook, with its secret this once when the server drew it. */
export const WebhookCreated = Type.Object({ ...Webhook.properties, secret: Type.Optional(Type.String()) });
export type WebhookCreated = Static<typeof WebhookCreated>;

/** http:// or https:// only, with a host: checked by the server (its 400 says so). */
const WebhookUrl = Type.String({ minLength: 1, maxLength: 2048 });
/** At least 16 characters: the receiver checks signatures with it. */
const WebhookSecret = Type.String({ minLength: 16, maxLength: 256 });

/** POST /api/webhooks. Without `secret`, the server draws one and shows it once. */
export const WebhookCreate = Type.Object(
  {
    url: WebhookUrl,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    secret: Type.Optional(WebhookSecret),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type WebhookCreate = Static<typeof WebhookCreate>;

export const WebhookPatch = Type.Object(
  {
    url: Type.Optional(WebhookUrl),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    secret: Type.Optional(WebhookSecret),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type WebhookPatch = Static<typeof WebhookPatch>;

/** The headers of every delivery (docs/alerts.md says how a receiver checks them). */
export const WEBHOOK_HEADERS = {
  /** `sha256=<hex>`: HMAC-SHA256, keyed with the webhook's secret, of `<timestamp>.<body>`. */
  signature: 'x-mdm-signature',
  /** Unix seconds when this attempt was signed. */
  timestamp: 'x-mdm-timestamp',
  /** `alert.fired`, `alert.resolved`, `webhook.test`. */
  event: 'x-mdm-event',
  /** The delivery's id: the same on each retry of it (a receiver drops a repeat). */
  delivery: 'x-mdm-delivery',
} as const;
