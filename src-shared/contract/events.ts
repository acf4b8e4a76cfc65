import { Type, type Static } from 'typebox';
import { AnyObject, Items, Nullable } from './common.ts';

/** One recorded event: the history (GET /api/events) and each frame of the live stream. */
export const LiveEvent = Type.Object({
  id: Type.Integer(),
  at: Type.String(),
  type: Type.String(),
  entity_id: Nullable(Type.Integer()),
  invitation_id: Nullable(Type.Integer()),
  agent_id: Nullable(Type.Integer()),
  message: Type.String(),
  data: Nullable(AnyObject),
  /** Who caused it: an admin ("Ana Ruiz") or an API token and its role ("token ci-bot (admin)"); null for a device or the server. */
  actor: Nullable(Type.String()),
});
export type LiveEvent = Static<typeof LiveEvent>;

export const EventsQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })) });

/** GET /api/events/stream's query: the id after which to replay (the Last-Event-ID header wins; anything not a positive integer replays nothing). */
export const EventStreamQuery = Type.Object({ after: Type.Optional(Type.String({ maxLength: 32 })) });
export type EventStreamQuery = Static<typeof EventStreamQuery>;
export const EventList = Items(LiveEvent);
export type EventList = Static<typeof EventList>;

/**
 * What a change did, field by field: the values before and after (null: the object did not exist
 * before, or no longer does). The audit trail keeps the fields that differ, secrets redacted.
 */
export type ChangeData = { before: Record<string, unknown> | null; after: Record<string, unknown> | null };
type AccountRef = { account_id: number; email: string | null; name: string };
type AccountMailData = {
  account_invite_id: number;
  email?: string;
  attempts: number;
  error?: string;
  [key: string]: unknown;
};

type AttemptData = { remote_addr: string | null; email: string | null; serial: string | null; uuid: string | null };
type CommandData = { command: string; topic: string; payload: Record<string, unknown>; retained: boolean; online: boolean };
type PresenceData = { reason: string; last_contact: string; [key: string]: unknown };
type JobEventData = {
  job_id: number;
  action: string;
  state: string;
  total: number;
  processed: number;
  counts: { sent: number; answered: number; offline: number; done: number; refused: number; failed: number };
  fleet_ids: number[];
};
type StoredItemData = { id: number; name: string; size: number } & ChangeData;
type MailStateData = {
  state: string;
  batch_id: string | null;
  attempts: number;
  error?: string;
  response?: string;
  [key: string]: unknown;
};

type NotificationMailData = { notification_id: number; to: string[]; subject: string; attempts: number; error?: string };
type AlertRuleRef = { id: number; name: string };
type AlertNoticeData = {
  rule_id: number;
  name: string;
  kind: string;
  /** How many incidents the notice names (the list below stops at 50). */
  count: number;
  incidents: { id: number; subject_key: string; subject: string; agent_id: number | null; detail: string }[];
};
type WebhookDeliveryData = {
  webhook_id: number;
  delivery_id: number;
  event: string;
  attempts: number;
  response_code: number | null;
  error: string | null;
};

/**
 * The server's events by type: what `data` carries. The one list of event types: the backend's
 * `EventLog.record(type, message, refs, data)` takes only a key of this map and, for it, only this
 * data (optional where it is null); the console's stream consumers and the CLI read events through
 * `ServerEvent`, narrowed by `type`. A new event is one line here.
 */
export interface ServerEvents {
  'server.started': null;
  'settings.updated': { keys: string[] } & ChangeData;
  /** The owner account made on first start (no email yet: the set-up link gives it one). */
  'account.created': { account_id: number; role: string };
  'account.owner_set_up': { account_id: number; email: string };
  'account.token_created': { token_id: number; role: string; days: number | null; fleet_ids: number[]; by: string };
  /** An operator's or observer's fleet scope set (`after.fleet_ids` empty: every fleet again). */
  'account.scope_changed': AccountRef & ChangeData & { by: string };
  'account.token_revoked': { token_id: number; by: string };
  'account.invited': AccountRef & { role: string; email_queued: boolean; [key: string]: unknown };
  'account.reinvited': AccountRef & { email_queued: boolean };
  'account.role_changed': AccountRef & ChangeData;
  'account.disabled': AccountRef & ChangeData & { sessions_ended: number };
  'account.enabled': AccountRef & ChangeData;
  'account.deleted': AccountRef & ChangeData;
  'account.invitation_accepted': AccountRef & ChangeData;
  'account.invitation_retrying': AccountMailData & { retry_at: string };
  'account.invitation_sent': AccountMailData;
  'account.invitation_failed': AccountMailData;
  'account.invitation_outbox': AccountMailData;
  'account.password_changed': { account_id: number };
  /** Two-factor sign-in turned on (enrolment confirmed), off by its admin, or reset by another. Never the secret. */
  /** A new authenticator secret waits for its first code (never shown here). */
  'account.two_factor_enrolment_started': { account_id: number };
  'account.two_factor_enabled': { account_id: number };
  'account.two_factor_disabled': { account_id: number };
  'account.two_factor_reset': { account_id: number } & Partial<AccountRef & ChangeData>;
  'account.recovery_code_used': { account_id: number; left: number };
  /** The owner's sign-in settings changed (two-factor required, session limits), with before and after values. */
  'settings.sign_in_updated': ChangeData & { keys: string[] };
  /** `totp`, `recovery`: with the password and a two-factor code, or a recovery code. */
  'admin.signed_in': { account_id: number; address: string; with: 'token' | 'link' | 'password' | 'totp' | 'recovery' };
  'admin.signed_out': { account_id: number; address: string };
  /** An admin ended some of their own console sessions (one, or all but the current one). */
  'admin.sessions_ended': { account_id: number; ended: number };
  /** A one-time console sign-in link (`cli console`) made for the caller's account. */
  'admin.sign_in_link_issued': { account_id: number; name: string };
  /** A console sign-in, an admin API call or a sign-in link refused (wrong token, used link). */
  'admin.sign_in_failed': { address: string; with: 'form' | 'link' | 'bearer' | 'password' | 'two-factor'; email?: string };
  /** An address made too many failed sign-ins: further attempts get 429 for `retry_after_s`. */
  'admin.sign_in_throttled': { address: string; retry_after_s: number; email?: string };
  'invitation.created': { email: string; fleet: string; days: number };
  'invitation.revoked': { email: string } & ChangeData;
  /** `fleet_id`: where it was, so a scoped console is told (the invitation is gone). */
  'invitation.deleted': { fleet_id: number; email: string } & ChangeData;
  'invitation.refused': AttemptData & { code: string };
  /** An admin ran the device simulator on the invitation ("simulate a device"). */
  'invitation.simulated': { email: string; type: string; ok: boolean };
  'code.created': { code_id: number; fleet: string; domains: string[]; max_uses: number | null; [key: string]: unknown };
  'code.revoked': { code_id: number };
  'code.rotated': { code_id: number };
  'code.refused': AttemptData & { code_id: number; code: string };
  'code.simulated': { code_id: number; name: string; email: string; type: string; ok: boolean };
  'enrollment.refused': AttemptData & { code: string };
  'agent.enrolled': {
    serial: string | null;
    uuid: string | null;
    type: string;
    version: string;
    code_id: number | null;
    enroll_status: string;
  };
  'agent.reenrolled': ServerEvents['agent.enrolled'];
  'agent.approved': null;
  'agent.rejected': null;
  /** `fleet_id`: where it was, so a scoped console is told (the device is gone). */
  'agent.deleted': { fleet_id: number };
  'agent.online': PresenceData;
  'agent.offline': PresenceData;
  'agent.command': CommandData & Partial<ChangeData>;
  'agent.fleet_changed': CommandData & { from_fleet_id: number; fleet_id: number } & ChangeData;
  'agent.ping_reply': { payload: string; rtt_ms: number; transport: 'mqtt' | 'http' };
  'agent.unenrolled': { previous_status: string };
  'agent.status': { topic: string; transport: 'mqtt' | 'http'; payload: string };
  'agent.inventory': {
    source: string;
    model: string | null;
    os_name: string | null;
    os_version: string | null;
    [key: string]: unknown;
  };
  'agent.geolocation': {
    source: string;
    latitude: number | null;
    longitude: number | null;
    located_at: string;
    gps_off: boolean;
  };
  /**
   * A bulk job started (its one audit entry: the action, the selection and the count), made
   * progress, or finished. `fleet_ids`: the fleets of its devices, so a scoped console is told of
   * its own fleets' jobs only.
   */
  'job.started': JobEventData & { name: string; selection: string };
  'job.progress': JobEventData;
  'job.finished': JobEventData;
  'fleet.created': { fleet_id: number; name: string } & ChangeData;
  'fleet.renamed': { fleet_id: number; name: string } & ChangeData;
  /** A saved device view (dynamic group): its name and expression. */
  'view.created': { view_id: number; name: string; where: string } & ChangeData;
  'view.updated': { view_id: number; name: string; where: string } & ChangeData;
  'view.deleted': { view_id: number; name: string; where: string } & ChangeData;
  /** A policy or deployment assigned to a view (carried to each member by device-level assignments), or removed from it. */
  'view.assigned': { view_id: number; view_assignment_id: number; policy: string; name: string } & ChangeData;
  'view.unassigned': { view_id: number; view_assignment_id: number; policy: string; name: string } & ChangeData;
  'fleet.deleted': { fleet_id: number; name: string; [key: string]: unknown } & ChangeData;
  'mail.queued': { count: number; batch_id: string | null; invitation_id?: number };
  'mail.sending': MailStateData;
  'mail.sent': MailStateData;
  'mail.failed': MailStateData;
  'mail.outbox': MailStateData;
  'mail.retrying': MailStateData & { retry_at: string };
  'mail.resumed': { count: number };
  'mail.test': { to: string; [key: string]: unknown };
  'mail.notification_sent': NotificationMailData;
  'mail.notification_outbox': NotificationMailData;
  'mail.notification_failed': NotificationMailData;
  'mail.notification_retrying': NotificationMailData & { retry_at: string };
  'alert.rule_created': AlertRuleRef & ChangeData;
  'alert.rule_updated': AlertRuleRef & ChangeData;
  'alert.rule_deleted': AlertRuleRef & ChangeData;
  /** Incidents opened by one evaluation of a rule (one notice for all of them). */
  'alert.fired': AlertNoticeData;
  /** Incidents whose condition cleared (their one resolved notice). */
  'alert.resolved': AlertNoticeData;
  'webhook.created': { id: number; name: string } & ChangeData;
  'webhook.updated': { id: number; name: string } & ChangeData;
  'webhook.deleted': { id: number; name: string } & ChangeData;
  'webhook.test': WebhookDeliveryData;
  'webhook.delivered': WebhookDeliveryData;
  'webhook.retrying': WebhookDeliveryData & { next_attempt_at: string };
  'webhook.failed': WebhookDeliveryData;
  'file.added': StoredItemData;
  'file.removed': StoredItemData;
  'package.added': StoredItemData;
  'package.removed': StoredItemData;
  'package.updated': StoredItemData;
  'deployment.created': {
    deployment_id: number;
    policy: string;
    fleet_id: number | null;
    topic: string;
    devices: number;
  } & ChangeData;
  'deployment.removed': { deployment_id: number; fleet_id: number | null; removal_id: number | null } & ChangeData;
  'deployment.error': null;
  'deployment.publish_failed': null;
  'task.status': {
    deployment_id: number;
    task_id: number;
    status: string;
    reason: string | null;
    source: string;
    fleet_id: number | null;
  };
  'task.downloaded': { deployment_id: number; task_id: number; fleet_id: number | null };
  /** A package install checked against the device's inventory. */
  'task.verified': {
    deployment_id: number;
    task_id: number;
    result: 'verified' | 'not_found';
    inventory_at: string;
    fleet_id: number | null;
  };
  'task.report_refused': { task_id: number; reason: string; payload: string };
  'broker.started': Record<string, unknown>;
  'broker.stopped': { agent_ids: number[] };
  'broker.connected': { url: string; [key: string]: unknown };
  'broker.unreachable': { url: string; reason: string };
  'broker.certificate': { fingerprint_sha256: string; valid_to: string; alt_names: string[]; [key: string]: unknown };
  'broker.reconciled': Record<string, unknown>;
  'broker.sync_failed': null;
  'broker.error': null;
  'broker.weak_password': { account: string };
  'broker.auth_error': null;
  'mqtt.login_refused': { login: string; reason: string; [key: string]: unknown };
  'mqtt.publish_denied': { topic: string };
  'mqtt.resubscribed': { filters: string[] };
}
export type ServerEventType = keyof ServerEvents;

/** `record`'s data argument for type `K`: required, unless that type's data is null. */
export type EventDataArgs<K extends ServerEventType> = null extends ServerEvents[K]
  ? [data?: ServerEvents[K]]
  : [data: ServerEvents[K]];

/** A live event whose `type` is known, with its data typed. */
export type ServerEvent<K extends ServerEventType = ServerEventType> = {
  [T in K]: Omit<LiveEvent, 'type' | 'data'> & { type: T; data: ServerEvents[T] | null };
}[K];
