import type { EventLog } from '../events/event-log.ts';
import { ApiError } from '../errors.ts';
import { MAIL_SETTING_KEYS, type MailSettings } from '../settings/mail-settings.ts';
import type { Settings, SettingsStore } from '../settings/settings.ts';
import type { SecretVault } from './secrets.ts';
import { parseSmtpUrl, redactSmtpUrl, resolveMailTarget, smtpPort, type MailTarget } from './smtp-config.ts';
import { checkTemplates, DEFAULT_TEMPLATES, TEMPLATE_PLACEHOLDERS } from './template.ts';

/** Mail options given at start (command line, environment), stronger than the settings. */
export interface MailOverrides {
  /** smtp(s)://user:pass@host:port — replaces the SMTP settings while this process runs. */
  smtpUrl?: string;
  /** Sender, "Name <address>" or an address. */
  mailFrom?: string;
}

export type MailSettingsPatch = Partial<MailSettings> & { smtp_password?: string | null; smtp_url?: string };

/** Where mail goes (SMTP or the outbox folder), and the mail settings the admin reads and changes. */
export class MailSettingsService {
  readonly outboxDir: string;
  private readonly settings: SettingsStore;
  private readonly secrets: SecretVault;
  private readonly events: EventLog;
  private readonly overrides: MailOverrides;
  private readonly listeners: (() => void)[] = [];

  constructor(deps: {
    settings: SettingsStore;
    secrets: SecretVault;
    events: EventLog;
    outboxDir: string;
    overrides?: MailOverrides;
  }) {
    this.settings = deps.settings;
    this.secrets = deps.secrets;
    this.events = deps.events;
    this.outboxDir = deps.outboxDir;
    this.overrides = { ...deps.overrides };
    // A bad --smtp-url stops the start, with a message, rather than failing every send later.
    if (this.overrides.smtpUrl) parseSmtpUrl(this.overrides.smtpUrl);
  }

  /** Called after each change (the worker retries what waits on a better configuration). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Reads the SMTP password again: another node changed it (its `settings.updated` reached this node). */
  async reloadSecrets(): Promise<void> {
    await this.secrets.reload?.();
  }

  target(): MailTarget {
    return resolveMailTarget(this.settings.get(), this.secrets.get('smtp_password'), this.overrides);
  }

  /** Where mail goes, for the console and `serve`; never the password. */
  describeTarget(target = this.target()) {
    if (target.kind === 'outbox') {
      return {
        kind: 'outbox' as const,
        from: target.from,
        outbox_dir: this.outboxDir,
        summary: `no SMTP server configured: messages are written to ${this.outboxDir}`,
      };
    }
    const { smtp } = target;
    const url = `${smtp.security === 'tls' ? 'smtps' : 'smtp'}://${smtp.user ? `${encodeURIComponent(smtp.user)}@` : ''}${smtp.host.includes(':') ? `[${smtp.host}]` : smtp.host}:${smtpPort(smtp)}`;
    return {
      kind: 'smtp' as const,
      source: target.source,
      host: smtp.host,
      port: smtpPort(smtp),
      security: smtp.security,
      user: smtp.user,
      reject_unauthorized: smtp.rejectUnauthorized,
      from: target.from,
      max_connections: target.maxConnections,
      url,
      summary: `SMTP ${url} (${smtp.security}), from ${target.from}${target.source === 'command line' ? ' — set by --smtp-url / MDM_CONSOLE_SMTP_URL' : ''}`,
    };
  }

  /** The target's description, or why there is none. */
  describeOrError(): { transport: ReturnType<MailSettingsService['describeTarget']> | null; error: string | null } {
    try {
      return { transport: this.describeTarget(), error: null };
    } catch (e) {
      return { transport: null, error: (e as Error).message };
    }
  }

  view() {
    const all = this.settings.get();
    const settings = Object.fromEntries(MAIL_SETTING_KEYS.map((key) => [key, all[key]])) as MailSettings;
    const { transport: effective, error } = this.describeOrError();
    return {
      settings,
      smtp_password_set: this.secrets.has('smtp_password'),
      smtp_password_unreadable: this.secrets.isUnreadable('smtp_password'),
      secret_storage: this.secrets.protection,
      overridden_by_command_line: {
        smtp: Boolean(this.overrides.smtpUrl),
        from: Boolean(this.overrides.mailFrom),
        smtp_url: this.overrides.smtpUrl ? redactSmtpUrl(this.overrides.smtpUrl) : null,
      },
      effective,
      error,
      outbox_dir: this.outboxDir,
      default_templates: DEFAULT_TEMPLATES,
      placeholders: TEMPLATE_PLACEHOLDERS,
    };
  }

  /**
   * Applies a change of the mail settings. `smtp_password`: a string sets it, null removes it,
   * absent keeps it. `smtp_url` fills host, port, security, user, certificate check and password
   * at once. Templates are checked first: a broken one changes nothing.
   */
  async update(patch: MailSettingsPatch) {
    const { smtp_password: password, smtp_url: url, ...fields } = patch;
    const changes: Partial<Settings> = { ...fields };
    let newPassword = password;
    if (url !== undefined && url.trim() !== '') {
      let parsed;
      try {
        parsed = parseSmtpUrl(url);
      } catch (error) {
        throw new ApiError(400, 'ERROR_BAD_REQUEST', (error as Error).message);
      }
      Object.assign(changes, {
        smtp_host: parsed.host,
        smtp_port: parsed.port,
        smtp_security: parsed.security,
        smtp_user: parsed.user,
        smtp_reject_unauthorized: parsed.rejectUnauthorized,
      });
      if (password === undefined) newPassword = parsed.password || null;
    } else if (url !== undefined) {
      changes.smtp_host = '';
    }
    const problems = checkTemplates({
      subject: fields.mail_subject_template,
      html: fields.mail_html_template,
      text: fields.mail_text_template,
    });
    const listed = Object.entries(problems).flatMap(([part, errors]) => errors.map((e) => `${part} template, ${e}`));
    if (listed.length > 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', listed.join('; '));
    // One transaction: the settings, their audited change, and last the password (a file, or a row
    // of the database on PostgreSQL): if it cannot be written, nothing is changed. The password's
    // change is recorded, never its value (the audit trail's one rule redacts it).
    const hadPassword = this.secrets.has('smtp_password');
    const secret = newPassword === undefined ? undefined : newPassword === '' ? null : newPassword;
    try {
      await this.updateSettings(changes, secret, hadPassword);
    } finally {
      // The store's cache follows what was committed (a rolled-back change leaves it as it was).
      if (secret !== undefined) await this.secrets.reload?.();
    }
    for (const listener of this.listeners) listener();
    return this.view();
  }

  private async updateSettings(changes: Partial<Settings>, secret: string | null | undefined, hadPassword: boolean) {
    await this.settings.update(changes, async (change) => {
      if (secret !== undefined) {
        change.keys.push('smtp_password');
        change.before.smtp_password = hadPassword ? 'set' : null;
        change.after.smtp_password = secret === null ? null : 'set';
      }
      if (change.keys.length > 0) {
        await this.events.record('settings.updated', `Mail settings changed: ${change.keys.join(', ')}`, {}, change);
      }
      if (secret !== undefined) await this.secrets.set('smtp_password', secret);
    });
  }
}
