import { Type, type Static } from 'typebox';

/**
 * The mail part of the settings (SQLite, readable through GET /api/settings). Nothing secret
 * lives here: the SMTP password is kept by mail's secret store (mail/secrets.ts).
 */
export const SMTP_SECURITY = ['auto', 'starttls', 'tls', 'none'] as const;
export type SmtpSecurity = (typeof SMTP_SECURITY)[number];

export const MailSettingsFields = {
  /** SMTP server; empty = no SMTP: messages are written to DATA_DIR/outbox as .eml files. */
  smtp_host: Type.String({ maxLength: 253, pattern: '^[^\\s/@]*$' }),
  /** 0 = the usual port of the security mode (465 for tls, 587 otherwise). */
  smtp_port: Type.Integer({ minimum: 0, maximum: 65535 }),
  /** auto: STARTTLS when offered; starttls: required; tls: implicit TLS (smtps); none: never TLS. */
  smtp_security: Type.Union([Type.Literal('auto'), Type.Literal('starttls'), Type.Literal('tls'), Type.Literal('none')]),
  /** Empty = no authentication. The password is set through PUT /api/mail/settings. */
  smtp_user: Type.String({ maxLength: 254 }),
  /** Off only for servers with self-signed certificates one trusts. */
  smtp_reject_unauthorized: Type.Boolean(),
  /** Pooled connections, which is also how many messages are in flight at once. */
  smtp_max_connections: Type.Integer({ minimum: 1, maximum: 20 }),
  /** Sender address; empty = the SMTP user when it is an address, else no-reply@<this host>. */
  mail_from_address: Type.String({ maxLength: 254, pattern: '^$|^[^\\s@<>",;]+@[^\\s@<>",;]+$' }),
  mail_from_name: Type.String({ maxLength: 200, pattern: '^[^\\r\\n]*$' }),
  /** Whether creating an invitation emails it unless the request says otherwise. */
  mail_send_on_create: Type.Boolean(),
  /** "Who invites" in the message; empty = the helpdesk name, else "Your IT team". */
  mail_inviter: Type.String({ maxLength: 200 }),
  /** Where to get the agent app (store page or download); empty = a generic sentence. */
  mail_agent_app_url: Type.String({ maxLength: 2048, pattern: '^$|^https?://\\S+$' }),
  /** Templates; empty = the built-in default (see template.ts for the placeholders). */
  mail_subject_template: Type.String({ maxLength: 500 }),
  mail_html_template: Type.String({ maxLength: 100_000 }),
  mail_text_template: Type.String({ maxLength: 50_000 }),
};

export const MailSettingsSchema = Type.Object(MailSettingsFields);
export type MailSettings = Static<typeof MailSettingsSchema>;

export const DEFAULT_MAIL_SETTINGS: MailSettings = {
  smtp_host: '',
  smtp_port: 0,
  smtp_security: 'auto',
  smtp_user: '',
  smtp_reject_unauthorized: true,
  smtp_max_connections: 3,
  mail_from_address: '',
  mail_from_name: 'MDM Console',
  mail_send_on_create: true,
  mail_inviter: '',
  mail_agent_app_url: '',
  mail_subject_template: '',
  mail_html_template: '',
  mail_text_template: '',
};

export const MAIL_SETTING_KEYS = Object.keys(DEFAULT_MAIL_SETTINGS) as (keyof MailSettings)[];
