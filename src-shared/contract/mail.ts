import { Type, type Static } from 'typebox';
import { Literals, Nullable } from './common.ts';

export const SMTP_SECURITY = ['auto', 'starttls', 'tls', 'none'] as const;
export type SmtpSecurity = (typeof SMTP_SECURITY)[number];

/** What the mail address fields accept (the sender, the test recipient). */
export const MAIL_ADDRESS_PATTERN = '^[^\\s@<>",;]+@[^\\s@<>",;]+$';

/**
 * The mail part of the settings (readable through GET /api/settings). Nothing secret lives here:
 * the SMTP password is kept by the secret store.
 */
export const MailSettingsFields = {
  /** SMTP server; empty = no SMTP: messages are written to DATA_DIR/outbox as .eml files. */
  smtp_host: Type.String({ maxLength: 253, pattern: '^[^\\s/@]*$' }),
  /** 0 = the usual port of the security mode (465 for tls, 587 otherwise). */
  smtp_port: Type.Integer({ minimum: 0, maximum: 65535 }),
  /** auto: STARTTLS when offered; starttls: required; tls: implicit TLS (smtps); none: never TLS. */
  smtp_security: Literals(SMTP_SECURITY),
  /** Empty = no authentication. The password is set through PUT /api/mail/settings. */
  smtp_user: Type.String({ maxLength: 254 }),
  /** Off only for servers with self-signed certificates one trusts. */
  smtp_reject_unauthorized: Type.Boolean(),
  /** Pooled connections, which is also how many messages are in flight at once. */
  smtp_max_connections: Type.Integer({ minimum: 1, maximum: 20 }),
  /** Sender address; empty = the SMTP user when it is an address, else no-reply@<this host>. */
  mail_from_address: Type.String({ maxLength: 254, pattern: `^$|${MAIL_ADDRESS_PATTERN}` }),
  mail_from_name: Type.String({ maxLength: 200, pattern: '^[^\\r\\n]*$' }),
  /** Whether creating an invitation emails it unless the request says otherwise. */
  mail_send_on_create: Type.Boolean(),
  /** "Who invites" in the message; empty = the helpdesk name, else "Your IT team". */
  mail_inviter: Type.String({ maxLength: 200 }),
  /** Where to get the agent app (store page or download); empty = a generic sentence. */
  mail_agent_app_url: Type.String({ maxLength: 2048, pattern: '^$|^https?://\\S+$' }),
  /** Templates; empty = the built-in default (see the placeholders of GET /api/mail/settings). */
  mail_subject_template: Type.String({ maxLength: 500 }),
  mail_html_template: Type.String({ maxLength: 100_000 }),
  mail_text_template: Type.String({ maxLength: 50_000 }),
};
export const MailSettings = Type.Object(MailSettingsFields);
export type MailSettings = Static<typeof MailSettings>;

export const DELIVERY_STATES = ['queued', 'sending', 'sent', 'failed', 'outbox'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** An invitation's email: queued → sending → sent | failed; outbox = written to a folder (no SMTP). */
export const MailDelivery = Type.Object({
  state: Literals(DELIVERY_STATES),
  /** The last error; while `retry_at` is set, that of the attempt that will be retried. */
  error: Nullable(Type.String()),
  /** Set after a transient failure (4xx, time-out, connection error): when the next attempt runs. */
  retry_at: Nullable(Type.String()),
  /** The server's last answer, e.g. "250 OK: queued as …". */
  response: Nullable(Type.String()),
  sent_at: Nullable(Type.String()),
  attempts: Type.Integer(),
  queued_at: Type.String(),
  updated_at: Type.String(),
  message_id: Nullable(Type.String()),
  outbox_file: Nullable(Type.String()),
  batch_id: Nullable(Type.String()),
});
export type MailDelivery = Static<typeof MailDelivery>;

/** Deliveries by state; `retrying`: of the queued ones, those waiting for a retry. */
export const DeliveryCounts = Type.Object({
  queued: Type.Integer(),
  sending: Type.Integer(),
  sent: Type.Integer(),
  failed: Type.Integer(),
  outbox: Type.Integer(),
  total: Type.Integer(),
  retrying: Type.Integer(),
});
export type DeliveryCounts = Static<typeof DeliveryCounts>;

/** GET /api/mail/batches/:batch_id: progress of a bulk send. */
export const MailBatch = Type.Object({
  batch_id: Type.String(),
  ...DeliveryCounts.properties,
  /** Sent, failed, written to the outbox, or waiting for a retry (it has had its try). */
  finished: Type.Integer(),
  done: Type.Boolean(),
});
export type MailBatch = Static<typeof MailBatch>;
export const MailBatchParams = Type.Object({ batch_id: Type.String({ maxLength: 64 }) });

/** Where mail goes: the outbox folder, or an SMTP server (from the settings or the command line). */
export const MailTransport = Type.Union([
  Type.Object({ kind: Type.Literal('outbox'), from: Type.String(), outbox_dir: Type.String(), summary: Type.String() }),
  Type.Object({
    kind: Type.Literal('smtp'),
    source: Type.Union([Type.Literal('command line'), Type.Literal('settings')]),
    host: Type.String(),
    port: Type.Integer(),
    security: Literals(SMTP_SECURITY),
    user: Type.String(),
    reject_unauthorized: Type.Boolean(),
    from: Type.String(),
    max_connections: Type.Integer(),
    url: Type.String(),
    summary: Type.String(),
  }),
]);
export type MailTransport = Static<typeof MailTransport>;

/** GET /api/mail/status. */
export const MailStatus = Type.Object({
  transport: Nullable(MailTransport),
  /** Why there is no transport (settings that cannot work). */
  error: Nullable(Type.String()),
  outbox_dir: Type.String(),
  counts: DeliveryCounts,
  in_flight: Type.Integer(),
  next_retry_at: Nullable(Type.String()),
});
export type MailStatus = Static<typeof MailStatus>;

/** POST /api/mail/retry: all failed deliveries, one batch's, or those of the listed invitations. */
export const MailRetryBody = Type.Optional(
  Type.Object(
    {
      batch_id: Type.Optional(Type.String({ maxLength: 64 })),
      invitation_ids: Type.Optional(Type.Array(Type.Integer({ minimum: 1 }), { maxItems: 10000 })),
    },
    { additionalProperties: false },
  ),
);
export type MailRetryBody = Static<typeof MailRetryBody>;
/** 202: how many were queued again. */
export const MailRetryResult = Type.Object({ queued: Type.Integer() });
export type MailRetryResult = Static<typeof MailRetryResult>;

const Templates = Type.Object({ subject: Type.String(), html: Type.String(), text: Type.String() });

/** GET and PUT /api/mail/settings: the settings, whether a password is set (never the password). */
export const MailSettingsView = Type.Object({
  settings: MailSettings,
  smtp_password_set: Type.Boolean(),
  smtp_password_unreadable: Type.Boolean(),
  /** How the secret store protects the password. */
  secret_storage: Type.String(),
  overridden_by_command_line: Type.Object({ smtp: Type.Boolean(), from: Type.Boolean(), smtp_url: Nullable(Type.String()) }),
  effective: Nullable(MailTransport),
  error: Nullable(Type.String()),
  outbox_dir: Type.String(),
  default_templates: Templates,
  /** Placeholder name → what it stands for. */
  placeholders: Type.Record(Type.String(), Type.String()),
});
export type MailSettingsView = Static<typeof MailSettingsView>;

/** PUT /api/mail/settings: any mail setting, and the SMTP password (write-only). */
export const MailSettingsPut = Type.Object(
  {
    ...Type.Partial(MailSettings).properties,
    /** Sets the SMTP password (kept in the secret store, never returned); null removes it. */
    smtp_password: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
    /** smtp(s)://user:pass@host:port — fills the SMTP fields (and the password) at once; "" = no SMTP. */
    smtp_url: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);
export type MailSettingsPut = Static<typeof MailSettingsPut>;

/** POST /api/mail/preview: these templates (else those in force), for an invitation or a sample one. */
export const MailPreviewBody = Type.Object(
  {
    subject: Type.Optional(Type.String({ maxLength: 500 })),
    html: Type.Optional(Type.String({ maxLength: 100_000 })),
    text: Type.Optional(Type.String({ maxLength: 50_000 })),
    invitation_id: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);
export type MailPreviewBody = Static<typeof MailPreviewBody>;

const TemplateErrors = Type.Array(Type.String());
export const MailPreview = Type.Object({
  from: Nullable(Type.String()),
  to: Type.String(),
  /** null: the template has errors (see `errors`). */
  subject: Nullable(Type.String()),
  html: Nullable(Type.String()),
  text: Nullable(Type.String()),
  errors: Type.Object({
    subject: Type.Optional(TemplateErrors),
    html: Type.Optional(TemplateErrors),
    text: Type.Optional(TemplateErrors),
  }),
  ok: Type.Boolean(),
  attachments: Type.Array(Type.Object({ filename: Type.String(), content_type: Type.String() })),
});
export type MailPreview = Static<typeof MailPreview>;

/** POST /api/mail/test. */
export const MailTestBody = Type.Object(
  { to: Type.String({ minLength: 3, maxLength: 254, pattern: MAIL_ADDRESS_PATTERN }) },
  { additionalProperties: false },
);
export type MailTestBody = Static<typeof MailTestBody>;

/** 200 of POST /api/mail/test: written to the outbox, or the SMTP server's answer. */
export const MailTestResult = Type.Union([
  Type.Object({
    ok: Type.Literal(true),
    via: Type.Literal('outbox'),
    to: Type.String(),
    file: Type.String(),
    message_id: Type.String(),
    response: Type.Null(),
    transport: MailTransport,
  }),
  Type.Object({
    ok: Type.Literal(true),
    via: Type.Literal('smtp'),
    to: Type.String(),
    response: Nullable(Type.String()),
    message_id: Nullable(Type.String()),
    accepted: Type.Array(Type.Unknown()),
    rejected: Type.Array(Type.Unknown()),
    transport: MailTransport,
  }),
]);
export type MailTestResult = Static<typeof MailTestResult>;

/** 502 of POST /api/mail/test: the server refused or could not be reached (ERROR_MAIL_SEND). */
export const MailTestFailure = Type.Object({
  ok: Type.Literal(false),
  error: Type.String(),
  message: Type.String(),
  response: Nullable(Type.String()),
  /** nodemailer's code (ECONNECTION, EAUTH, …). */
  code: Nullable(Type.String()),
  response_code: Nullable(Type.Integer()),
  transport: MailTransport,
});
export type MailTestFailure = Static<typeof MailTestFailure>;
