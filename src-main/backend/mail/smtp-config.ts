import { hostname } from 'node:os';
import type { SMTPPoolOptions } from 'nodemailer';
import { SMTP_SECURITY, type MailSettings, type SmtpSecurity } from '../settings/mail-settings.ts';

export interface SmtpConfig {
  host: string;
  port: number;
  security: SmtpSecurity;
  user: string;
  password: string;
  rejectUnauthorized: boolean;
}

/** Where messages go, and who sends them. */
export type MailTarget =
  | { kind: 'smtp'; source: 'command line' | 'settings'; smtp: SmtpConfig; from: string; maxConnections: number }
  | { kind: 'outbox'; from: string };

export class SmtpUrlError extends Error {}

/**
 * `smtp://[user[:pass]@]host[:port]` (STARTTLS when offered) or `smtps://…` (implicit TLS).
 * Query: `security=auto|starttls|tls|none`, `reject_unauthorized=false` (self-signed servers).
 * User and password are percent-decoded.
 */
export function parseSmtpUrl(text: string): SmtpConfig {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    // Not echoed: a URL that does not parse cannot be redacted reliably, and it may hold the password.
    throw new SmtpUrlError('the SMTP URL is not a valid URL; expected smtp://user:password@host:port or smtps://…');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new SmtpUrlError(`SMTP URL must start with smtp:// or smtps://, not ${url.protocol}//`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!host) throw new SmtpUrlError('SMTP URL has no host');
  let security: SmtpSecurity = url.protocol === 'smtps:' ? 'tls' : 'auto';
  const asked = url.searchParams.get('security');
  if (asked !== null) {
    if (!(SMTP_SECURITY as readonly string[]).includes(asked))
      throw new SmtpUrlError(`security must be one of ${SMTP_SECURITY.join(', ')}, not "${asked}"`);
    security = asked as SmtpSecurity;
  }
  const reject = url.searchParams.get('reject_unauthorized');
  let user: string;
  let password: string;
  try {
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    throw new SmtpUrlError('SMTP URL user or password is not properly percent-encoded');
  }
  return {
    host,
    port: url.port ? Number(url.port) : 0,
    security,
    user,
    password,
    rejectUnauthorized: !(reject === 'false' || reject === '0'),
  };
}

/** The URL with its password replaced, fit for logs and the console. */
export function redactSmtpUrl(text: string): string {
  try {
    const url = new URL(text.trim());
    if (url.password) url.password = '****';
    return url.toString();
  } catch {
    return text.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:****@');
  }
}

export function smtpPort(config: Pick<SmtpConfig, 'port' | 'security'>): number {
  if (config.port) return config.port;
  return config.security === 'tls' ? 465 : 587;
}

/** Sender when none is configured: the SMTP user if it is an address, else no-reply@<host name>. */
export function defaultFromAddress(smtpUser: string): string {
  if (/^[^\s@]+@[^\s@]+$/.test(smtpUser)) return smtpUser;
  const host =
    hostname()
      .toLowerCase()
      .replace(/[^a-z0-9.-]/g, '') || 'localhost';
  return `no-reply@${host.includes('.') ? host : `${host}.local`}`;
}

/** RFC 5322 "Name <address>", the name quoted when needed. */
export function formatFrom(name: string, address: string): string {
  const clean = name.replace(/[\r\n]/g, ' ').trim();
  if (!clean) return address;
  const quoted = /^[\w !#$%&'*+\-/=?^`{|}~.]+$/.test(clean) ? clean : `"${clean.replace(/["\\]/g, '\\$&')}"`;
  return `${quoted} <${address}>`;
}

/**
 * What the worker should use now: the command line / environment URL wins over the settings;
 * without either, the outbox folder.
 */
export function resolveMailTarget(
  settings: MailSettings,
  password: string | undefined,
  override: { smtpUrl?: string; mailFrom?: string },
): MailTarget {
  let smtp: SmtpConfig | null = null;
  let source: 'command line' | 'settings' = 'settings';
  if (override.smtpUrl) {
    smtp = parseSmtpUrl(override.smtpUrl);
    source = 'command line';
  } else if (settings.smtp_host) {
    smtp = {
      host: settings.smtp_host,
      port: settings.smtp_port,
      security: settings.smtp_security,
      user: settings.smtp_user,
      password: settings.smtp_user ? (password ?? '') : '',
      rejectUnauthorized: settings.smtp_reject_unauthorized,
    };
  }
  const from =
    override.mailFrom?.trim() ||
    formatFrom(settings.mail_from_name, settings.mail_from_address || defaultFromAddress(smtp?.user ?? settings.smtp_user));
  if (!smtp) return { kind: 'outbox', from };
  return { kind: 'smtp', source, smtp, from, maxConnections: settings.smtp_max_connections };
}

/** nodemailer options for a config; `pool` for the worker, a single connection for test emails. */
export function transportOptions(config: SmtpConfig, pool: { maxConnections: number } | null): SMTPPoolOptions {
  return {
    ...(pool ? { pool: true, maxConnections: pool.maxConnections, maxMessages: 100, maxRequeues: 1 } : {}),
    host: config.host,
    port: smtpPort(config),
    secure: config.security === 'tls',
    requireTLS: config.security === 'starttls',
    ignoreTLS: config.security === 'none',
    auth: config.user ? { user: config.user, pass: config.password } : undefined,
    tls: { rejectUnauthorized: config.rejectUnauthorized, servername: /^[\d.]+$|:/.test(config.host) ? undefined : config.host },
    // Fail in seconds rather than minutes, so a dead server shows as "failed" while the admin looks.
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 60_000,
    dnsTimeout: 15_000,
  };
}

/** A stable key: a new transport is made when (and only when) this changes. */
export function targetKey(target: MailTarget): string {
  return JSON.stringify(target);
}
