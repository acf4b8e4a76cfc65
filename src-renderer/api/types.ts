// Shapes of the admin API (src-main/backend/admin-api). The console only knows the wire.

export type InvitationStatus = 'pending' | 'done' | 'expired' | 'revoked';

export interface Helpdesk {
  name: string;
  phone: string;
  website: string;
  email: string;
}

export interface AgentBrief {
  id: number;
  name: string;
  serial: string | null;
  uuid: string | null;
  type: string;
  enroll_status: string;
}

export interface Invitation {
  id: number;
  entity_id: number;
  email: string;
  firstname: string | null;
  lastname: string | null;
  status: InvitationStatus;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  fleet_id: number;
  fleet: string | null;
  agent: AgentBrief | null;
  refused_attempts: number;
  invitation_token: string;
  user_token: string;
  deeplink: string;
  deeplink_data: string;
  app_link: string;
  helpdesk: Helpdesk;
  /** Email delivery, once the mail capability reports it. */
  delivery?: MailDelivery | null;
}

/** The invitation email's delivery: queued → sending → sent | failed; outbox = written to a folder (no SMTP). */
export interface MailDelivery {
  state: 'queued' | 'sending' | 'sent' | 'failed' | 'outbox' | string;
  /** The last error; while `retry_at` is set, that of the attempt that will be retried. */
  error: string | null;
  /** Set after a transient failure (4xx, time-out, connection error): when the next attempt runs. */
  retry_at?: string | null;
  response: string | null;
  sent_at: string | null;
  attempts: number;
  queued_at: string;
  updated_at: string;
  message_id: string | null;
  outbox_file: string | null;
  batch_id: string | null;
}

export interface MailBatch {
  batch_id: string;
  queued: number;
  sending: number;
  sent: number;
  failed: number;
  outbox: number;
  total: number;
  /** Of the queued ones, those waiting for an automatic retry. */
  retrying?: number;
  finished: number;
  done: boolean;
}

export interface MailTransport {
  kind: 'outbox' | 'smtp';
  from: string;
  summary: string;
  [key: string]: unknown;
}

export interface MailSettings {
  smtp_host: string;
  smtp_port: number;
  smtp_security: 'auto' | 'starttls' | 'tls' | 'none';
  smtp_user: string;
  smtp_reject_unauthorized: boolean;
  smtp_max_connections: number;
  mail_from_address: string;
  mail_from_name: string;
  mail_send_on_create: boolean;
  mail_inviter: string;
  mail_agent_app_url: string;
  mail_subject_template: string;
  mail_html_template: string;
  mail_text_template: string;
}

export interface MailSettingsView {
  settings: MailSettings;
  smtp_password_set: boolean;
  smtp_password_unreadable?: boolean;
  secret_storage?: string;
  overridden_by_command_line: { smtp: boolean; from: boolean; smtp_url: string | null };
  effective: MailTransport | null;
  error: string | null;
  outbox_dir: string;
  default_templates: { subject: string; html: string; text: string };
  placeholders: Record<string, string>;
}

export interface MailPreview {
  from: string | null;
  to: string;
  subject: string | null;
  html: string | null;
  text: string | null;
  errors: Partial<Record<'subject' | 'html' | 'text', string[]>>;
  ok: boolean;
}

export interface MailTestResult {
  ok: boolean;
  via?: 'outbox' | 'smtp';
  to?: string;
  file?: string;
  response?: string | null;
  message?: string;
  error?: string;
  transport?: MailTransport;
}

export interface InvitationLogEntry {
  id: number;
  at: string;
  outcome: 'refused' | 'used';
  code: string | null;
  message: string;
  remote_addr: string | null;
  email: string | null;
  serial: string | null;
  uuid: string | null;
}

export interface InvitationDetail extends Invitation {
  log: InvitationLogEntry[];
  events: LiveEvent[];
}

export interface InvitationInput {
  email: string;
  /** Email the invitation now (default: the mail_send_on_create setting). */
  send_email?: boolean;
  firstname?: string | null;
  lastname?: string | null;
  fleet?: string | null;
  days?: number | null;
  /** Invite an address that already has a pending invitation (a second device). */
  another?: boolean;
}

export interface InvitationFilter {
  status?: InvitationStatus | undefined;
  q?: string | undefined;
  fleet_id?: number | undefined;
  limit?: number | undefined;
  offset?: number | undefined;
}

export interface Page<T> {
  items: T[];
  total: number;
}

export interface Agent {
  id: number;
  name: string;
  serial: string | null;
  uuid: string | null;
  type: string;
  version: string;
  enroll_status: string;
  is_online: boolean;
  last_contact: string | null;
  last_report: string | null;
  lock: number;
  wipe: number;
  fleet_id: number;
  fleet: string;
  email: string | null;
  firstname: string | null;
  lastname: string | null;
  computer_id: number;
  invitation_id: number | null;
  topic: string;
  entity_id: number;
  created_at: string;
  updated_at: string;
  /** From the last inventory the device sent; null until then. */
  model?: string | null;
  manufacturer?: string | null;
  os_name?: string | null;
  os_version?: string | null;
  [key: string]: unknown;
}

/** The device's last FusionInventory report, as the server parsed it. */
export interface Inventory {
  model: string | null;
  manufacturer: string | null;
  os_name: string | null;
  os_version: string | null;
  serial: string | null;
  imei: string | null;
  battery: { level: string | null; health: string | null; status: string | null; chemistry: string | null; capacity: string | null } | null;
  storage: { name: string; total_mb: number | null; free_mb: number | null }[];
  memory_mb: number | null;
  applications: { name: string; version: string | null; package: string | null }[];
  source: 'enrollment' | 'http' | 'mqtt';
  received_at: string;
}

export interface Position {
  latitude: number | null;
  longitude: number | null;
  located_at: string;
  source: string;
  received_at: string;
}

export interface AgentDetail extends Agent {
  events: LiveEvent[];
  inventory?: Inventory | null;
  positions?: Position[];
}

export interface Fleet {
  id: number;
  entity_id: number;
  name: string;
  is_default: number;
  created_at: string;
  agent_count: number;
}

export interface Settings {
  public_host: string;
  deeplink_base_url: string;
  app_link_scheme: string;
  /** Which agent app codes are made for: the spec's agent, or the reference Flyve MDM agents. */
  agent_app: 'spec' | 'flyve';
  helpdesk_name: string;
  helpdesk_phone: string;
  helpdesk_website: string;
  helpdesk_email: string;
  invitation_lifetime_days: number;
  mqtt_tls: boolean;
  android_bugcollector_url: string;
  android_bugcollector_login: string;
  android_bugcollector_passwd: string;
  [key: string]: unknown;
}

export interface ServerStatus {
  api_url: string;
  deeplink_url: string;
  admin_url: string;
  console_url?: string;
  mqtt_port: number;
  mqtt_tls_port: number;
  public_host: string;
  data_dir: string;
  pid: number;
  started_at: string;
  counts: {
    invitations: number;
    pending: number;
    used: number;
    agents: number;
    enrolled: number;
    online: number;
    [key: string]: number;
  };
  lan_addresses: string[];
  warnings: string[];
  /** SHA-256 fingerprint of the broker's TLS certificate, when the broker reports it. */
  mqtt_tls_fingerprint?: string | null;
  tls_fingerprint?: string | null;
  broker?: Record<string, unknown> | null;
  /** embedded, mosquitto or rabbitmq (older servers: absent, embedded). */
  mqtt_broker?: string;
  mqtt?: {
    mode: string;
    connected: boolean;
    problem: string | null;
    url: string | null;
    agent_endpoint?: { host: string; port: number; tls: boolean };
  } | null;
  [key: string]: unknown;
}

export interface LiveEvent {
  id: number;
  at: string;
  type: string;
  entity_id: number | null;
  invitation_id: number | null;
  agent_id: number | null;
  message: string;
  data: Record<string, unknown> | null;
  /** On the live stream, `agent.*` events only: the agent's device-list row after the event (null: gone). */
  agent?: Agent | null;
}

export type StoredKind = 'file' | 'package';

export interface StoredItem {
  id: number;
  entity_id: number;
  name: string;
  size: number;
  mime_type: string;
  sha256: string;
  created_at: string;
  updated_at: string;
  /** Files: the version deployFile announces. */
  version?: number;
  /** Packages: from the APK's manifest, or given by the admin. */
  package_name?: string | null;
  version_code?: number | null;
  version_name?: string | null;
  label?: string | null;
  icon?: string | null;
}

export type TaskStatus = 'pending' | 'received' | 'in progress' | 'waiting' | 'done' | 'failed' | 'canceled';

export interface TaskHistoryEntry {
  task_id: number;
  status: TaskStatus;
  reason: string | null;
  source: 'server' | 'mqtt' | 'http';
  at: string;
}

export interface DeviceTask {
  id: number;
  deployment_id: number;
  agent_id: number;
  agent_name: string;
  status: TaskStatus;
  reason: string | null;
  created_at: string;
  updated_at: string;
  history?: TaskHistoryEntry[];
  deployment?: { id: number; policy: string; item_name: string; target_name: string; state: string };
}

export interface TaskCounts {
  total: number;
  pending: number;
  in_progress: number;
  done: number;
  failed: number;
  canceled: number;
}

export interface Deployment extends TaskCounts {
  id: number;
  policy: 'deployApp' | 'deployFile' | 'removeApp' | 'removeFile';
  item_kind: StoredKind | null;
  item_id: number | null;
  item_name: string;
  fleet_id: number | null;
  agent_id: number | null;
  target_name: string;
  destination: string | null;
  remove_on_delete: boolean;
  topic: string;
  message: Record<string, unknown>;
  state: 'active' | 'removed';
  progress: string;
  created_at: string;
  removed_at: string | null;
  tasks?: DeviceTask[];
}

export interface DeploymentFilter {
  fleet_id?: number;
  agent_id?: number;
  state?: 'active' | 'removed';
}

export interface DeployInput {
  kind: StoredKind;
  item_id: number;
  fleet_id?: number;
  agent_id?: number;
  destination?: string;
  remove_on_delete?: boolean;
}

export interface SimulateResult {
  ok: boolean;
  agent_id: number | null;
  serial: string | null;
  type: string;
  log: string[];
  error: string | null;
}
