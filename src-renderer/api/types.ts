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

export interface MailDelivery {
  status: string;
  attempts?: number;
  last_error?: string | null;
  sent_at?: string | null;
  updated_at?: string | null;
  [key: string]: unknown;
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
  firstname?: string | null;
  lastname?: string | null;
  fleet?: string | null;
  days?: number | null;
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
  [key: string]: unknown;
}

export interface AgentDetail extends Agent {
  events: LiveEvent[];
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
}

export interface SimulateResult {
  ok: boolean;
  agent_id: number | null;
  serial: string | null;
  type: string;
  log: string[];
  error: string | null;
}
