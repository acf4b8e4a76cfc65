import { randomUUID } from 'node:crypto';
import nodemailer, { type NodemailerError, type SendMailOptions, type Transporter } from 'nodemailer';
import type { Db } from '../db/database.ts';
import { QrTooLongError, qrDataUrl } from '../deeplink/qr.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError } from '../errors.ts';
import { statusOf, type InvitationInput, type InvitationRow, type InvitationService } from '../invitations/invitations.ts';
import type { Settings, SettingsStore } from '../settings/settings.ts';
import type { DeliveryCounts, DeliveryRepository, DeliveryRow } from './deliveries.ts';
import { MAIL_SETTING_KEYS, type MailSettings } from './mail-settings.ts';
import { composeInvitationMail, templatesOf, templateValues, testMail, type InvitationForMail } from './message.ts';
import { Outbox } from './outbox.ts';
import { DEFAULT_RETRY_DELAYS_MS, isTransientSmtpError, nextRetryAt, type RetryPolicy } from './retry-policy.ts';
import type { SecretStore } from './secrets.ts';
import { parseSmtpUrl, redactSmtpUrl, resolveMailTarget, smtpPort, SmtpUrlError, targetKey, transportOptions, type MailTarget } from './smtp-config.ts';
import type { MailTestResult } from '../../../src-shared/contract/index.ts';
import { checkTemplates, DEFAULT_TEMPLATES, renderTemplate, TEMPLATE_PLACEHOLDERS, TemplateError, type MailTemplates } from './template.ts';

/** Mail options given at start (command line, environment), stronger than the settings. */
export interface MailOverrides {
  /** smtp(s)://user:pass@host:port — replaces the SMTP settings while this process runs. */
  smtpUrl?: string;
  /** Sender, "Name <address>" or an address. */
  mailFrom?: string;
}

interface MailDeps {
  db: Db;
  events: EventLog;
  work: UnitOfWork;
  settings: SettingsStore;
  invitations: InvitationService;
  deliveries: DeliveryRepository;
  secrets: SecretStore;
  outbox: Outbox;
  overrides?: MailOverrides;
  /** How long close() lets messages in flight finish before cutting them off (they are re-queued). */
  shutdownGraceMs?: number;
  /** When transient failures are retried; default DEFAULT_RETRY_DELAYS_MS. */
  retryPolicy?: RetryPolicy;
  /** How long to wait for the server's greeting (default 15 s). */
  greetingTimeoutMs?: number;
}

interface PooledTransport {
  key: string;
  mailer: Transporter;
  inFlight: number;
}

/** What an SMTP failure reads as: the server's own words when there are some. */
export function describeSendError(error: unknown): { message: string; response: string | null } {
  const e = error as NodemailerError;
  let message = (e?.message || String(error)).trim();
  const response = typeof e?.response === 'string' && e.response ? e.response.trim() : null;
  // Node's TLS errors say what is wrong with the certificate but not that it is about TLS.
  if (!response && /certificate|self[- ]signed|tls|ssl|handshake/i.test(message) && !/^TLS/.test(message)) message = `TLS error: ${message}`;
  return { message: response && !message.includes(response) ? `${message}: ${response}` : message, response };
}

export type MailSettingsPatch = Partial<MailSettings> & { smtp_password?: string | null; smtp_url?: string };

/**
 * Invitation emails: a queue persisted in SQLite (mail_deliveries) drained in the background by a
 * worker that keeps at most `smtp_max_connections` messages in flight through nodemailer's pooled
 * SMTP transport, or writes .eml files to the outbox when there is no SMTP. A send never touches
 * the invitation itself: a failure only marks its delivery failed, with the server's message.
 */
export class MailService {
  private readonly deps: MailDeps;
  private readonly overrides: MailOverrides;
  private started = false;
  private stopping = false;
  private scheduled = false;
  private active = 0;
  private idleWaiters: (() => void)[] = [];
  private pool: PooledTransport | null = null;
  private readonly retired = new Set<PooledTransport>();
  private readonly retryPolicy: RetryPolicy;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryTimerAt = 0;

  constructor(deps: MailDeps) {
    this.deps = deps;
    this.overrides = { ...deps.overrides };
    this.retryPolicy = deps.retryPolicy ?? { delaysMs: DEFAULT_RETRY_DELAYS_MS };
    // A bad --smtp-url stops the start, with a message, rather than failing every send later.
    if (this.overrides.smtpUrl) parseSmtpUrl(this.overrides.smtpUrl);
  }

  get outboxDir(): string {
    return this.deps.outbox.dir;
  }

  /** Starts the worker: deliveries interrupted by the last stop go first. Call once listening. */
  start(): void {
    if (this.started) return;
    this.started = true;
    const resumed = this.deps.deliveries.requeueInterrupted();
    if (resumed > 0) this.deps.events.record('mail.resumed', `${resumed} interrupted invitation email(s) queued again`, {}, { count: resumed });
    this.kick();
    // Retries scheduled before the stop keep their time.
    this.armRetryTimer();
  }

  /** Stops taking work, lets messages in flight finish for a moment, then cuts them off. */
  async close(): Promise<void> {
    this.stopping = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const grace = this.deps.shutdownGraceMs ?? 3000;
    if (this.active > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.idle(), new Promise<void>((resolve) => (timer = setTimeout(resolve, grace)))]);
      clearTimeout(timer);
    }
    for (const pool of [this.pool, ...this.retired]) pool?.mailer.close({ force: true } as never);
    this.pool = null;
    this.retired.clear();
    if (this.active > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.idle(), new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
      clearTimeout(timer);
    }
  }

  private idle(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  // ── what goes where ──────────────────────────────────────────────────────────────────────

  target(): MailTarget {
    return resolveMailTarget(this.deps.settings.get(), this.deps.secrets.get('smtp_password'), this.overrides);
  }

  /** Where mail goes, for the console and `serve`; never the password. */
  describeTarget(target = this.target()) {
    if (target.kind === 'outbox') {
      return { kind: 'outbox' as const, from: target.from, outbox_dir: this.outboxDir, summary: `no SMTP server configured: messages are written to ${this.outboxDir}` };
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

  // ── queueing ─────────────────────────────────────────────────────────────────────────────

  /**
   * Creates invitations and, when `send`, queues their emails in the same transaction: either
   * both happen or neither. Sending starts once the transaction has committed.
   */
  createInvitations(inputs: InvitationInput[], options: { send?: boolean; entityId?: number; batch?: boolean; allowPending?: boolean } = {}) {
    const send = options.send ?? this.deps.settings.get().mail_send_on_create;
    return this.deps.work.run(() => {
      const rows = this.deps.invitations.createMany(inputs, options.entityId, { allowPending: options.allowPending });
      const batchId = send && (options.batch ?? rows.length > 1) ? randomUUID() : null;
      const queued = send ? this.enqueue(rows.map((r) => r.id), batchId) : 0;
      return { rows, batch_id: batchId, queued };
    });
  }

  /** Queues emails of existing invitations; returns how many were queued. */
  enqueue(invitationIds: number[], batchId: string | null = null): number {
    if (invitationIds.length === 0) return 0;
    const queued = this.deps.deliveries.queue(invitationIds, batchId);
    if (queued > 0) {
      const single = invitationIds.length === 1 ? invitationIds[0] : undefined;
      this.deps.events.record(
        'mail.queued',
        queued === 1 ? `Invitation email queued` : `${queued} invitation emails queued`,
        single === undefined ? {} : { invitationId: single },
        { count: queued, batch_id: batchId, ...(single === undefined ? {} : { invitation_id: single }) },
      );
    }
    // After the caller's transaction commits: the worker runs on a later tick.
    this.kick();
    return queued;
  }

  /** Sends an invitation's email again: same token, same expiry. Only for pending invitations. */
  resend(invitationId: number): InvitationRow {
    const row = this.deps.invitations.get(invitationId);
    const status = statusOf(row);
    if (status !== 'pending') {
      const why = { done: 'has already been used', revoked: 'was revoked', expired: 'has expired; create a new invitation' }[status];
      throw new ApiError(409, 'ERROR_INVITATION_NOT_PENDING', `This invitation ${why}`);
    }
    this.enqueue([invitationId]);
    return this.deps.invitations.get(invitationId);
  }

  /** Queues every failed delivery again (of one batch, or of the given invitations). */
  retryFailed(filter: { batchId?: string; invitationIds?: number[] } = {}): number {
    // Those waiting for an automatic retry go now too.
    let ids = [...this.deps.deliveries.failedIds(filter.batchId), ...this.deps.deliveries.waitingIds(filter.batchId)];
    if (filter.invitationIds) {
      const wanted = new Set(filter.invitationIds);
      ids = ids.filter((id) => wanted.has(id));
    }
    const pending = ids.filter((id) => {
      try {
        return statusOf(this.deps.invitations.get(id)) === 'pending';
      } catch {
        return false;
      }
    });
    return this.enqueue(pending, filter.batchId ?? null);
  }

  counts(batchId?: string): DeliveryCounts {
    return this.deps.deliveries.counts(batchId);
  }

  /** Progress of a bulk send, for the console's progress bar. */
  batch(batchId: string) {
    const counts = this.deps.deliveries.counts(batchId);
    if (counts.total === 0) throw new ApiError(404, 'ERROR_NOT_FOUND', 'No such mail batch');
    // One waiting for a retry has had its try: it counts as finished for the progress bar, shown apart.
    const finished = counts.sent + counts.failed + counts.outbox + counts.retrying;
    return { batch_id: batchId, ...counts, finished, done: counts.queued - counts.retrying + counts.sending === 0 };
  }

  status() {
    let transport;
    let error: string | null = null;
    try {
      transport = this.describeTarget();
    } catch (e) {
      error = (e as Error).message;
    }
    return { transport: transport ?? null, error, outbox_dir: this.outboxDir, counts: this.counts(), in_flight: this.active, next_retry_at: this.deps.deliveries.nextRetryAt() };
  }

  // ── the worker ───────────────────────────────────────────────────────────────────────────

  kick(): void {
    if (!this.started || this.stopping || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /** Wakes the worker when the earliest scheduled retry is due (the schedule itself is in the database). */
  private armRetryTimer(): void {
    if (!this.started || this.stopping || !this.deps.db.open) return;
    const next = this.deps.deliveries.nextRetryAt();
    if (!next) return;
    const at = Date.parse(next);
    if (this.retryTimer && this.retryTimerAt <= at) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimerAt = at;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.kick();
      this.armRetryTimer();
    }, Math.max(0, at - Date.now()) + 5);
    this.retryTimer.unref();
  }

  private pump(): void {
    if (this.stopping || !this.deps.db.open) return;
    const limit = this.deps.settings.get().smtp_max_connections;
    while (!this.stopping && this.active < limit) {
      const job = this.deps.deliveries.claim();
      if (!job) break;
      this.active++;
      void this.deliver(job)
        .catch((error: unknown) => this.finish(job, 'failed', { error: `Internal error: ${(error as Error).message}` }))
        .finally(() => {
          this.active--;
          if (this.active === 0) for (const wake of this.idleWaiters.splice(0)) wake();
          this.kick();
        });
    }
  }

  private finish(job: DeliveryRow, state: 'sent' | 'failed' | 'outbox', detail: { error?: string; response?: string | null; messageId?: string; outboxFile?: string }, row?: InvitationRow): void {
    if (!this.deps.db.open) return;
    if (!this.deps.deliveries.finish(job.invitation_id, { state, ...detail })) return;
    const email = row?.email ?? `invitation #${job.invitation_id}`;
    const message = {
      sent: `Invitation email sent to ${email}`,
      outbox: `Invitation email for ${email} written to the outbox (no SMTP configured)`,
      failed: `Invitation email to ${email} failed: ${detail.error ?? ''}`,
    }[state];
    this.deps.events.record(`mail.${state}`, message, { entityId: row?.entity_id ?? null, invitationId: job.invitation_id }, {
      state,
      batch_id: job.batch_id,
      attempts: job.attempts,
      ...(detail.error ? { error: detail.error } : {}),
      ...(detail.response ? { response: detail.response } : {}),
    });
  }

  private scheduleRetry(job: DeliveryRow, row: InvitationRow, outcome: { error: string; response: string | null; retryAt: Date }): void {
    if (!this.deps.db.open || !this.deps.deliveries.scheduleRetry(job.invitation_id, outcome)) return;
    const at = outcome.retryAt.toISOString();
    this.deps.events.record(
      'mail.retrying',
      `Invitation email to ${row.email} failed (${outcome.error}); will retry ${inAbout(outcome.retryAt)} (at ${at.slice(11, 19)} UTC)`,
      { entityId: row.entity_id, invitationId: job.invitation_id },
      { state: 'queued', batch_id: job.batch_id, attempts: job.attempts, error: outcome.error, retry_at: at, ...(outcome.response ? { response: outcome.response } : {}) },
    );
    this.armRetryTimer();
  }

  private async deliver(job: DeliveryRow): Promise<void> {
    let row: InvitationRow;
    try {
      row = this.deps.invitations.get(job.invitation_id);
    } catch {
      return; // deleted meanwhile; its delivery row went with it
    }
    const status = statusOf(row);
    if (status !== 'pending') {
      const why = { done: 'it has already been used', revoked: 'it was revoked', expired: 'it has expired' }[status];
      return this.finish(job, 'failed', { error: `Not sent: ${why}` }, row);
    }
    let target: MailTarget;
    let message: SendMailOptions;
    try {
      target = this.target();
      message = await composeInvitationMail(this.deps.invitations.view(row) as InvitationForMail, this.deps.settings.get(), target.from);
    } catch (error) {
      const what = error instanceof TemplateError ? 'The email template is broken' : error instanceof SmtpUrlError ? 'The SMTP URL is not valid' : 'The message could not be built';
      return this.finish(job, 'failed', { error: `${what}: ${(error as Error).message}` }, row);
    }
    if (target.kind === 'outbox') {
      try {
        const { file, messageId } = await this.deps.outbox.write(message, `invitation-${row.id}-${row.email}`);
        return this.finish(job, 'outbox', { outboxFile: file, messageId }, row);
      } catch (error) {
        return this.finish(job, 'failed', { error: `Could not write to the outbox ${this.outboxDir}: ${(error as Error).message}` }, row);
      }
    }
    const lease = this.lease(target);
    try {
      const info = (await lease.mailer.sendMail(message)) as { response?: string; messageId?: string };
      this.finish(job, 'sent', { response: info.response ?? null, messageId: info.messageId }, row);
    } catch (error) {
      if (this.stopping) {
        // Cut off by our own shutdown, not refused by the server: sent after the restart.
        if (this.deps.db.open) this.deps.deliveries.requeue(job.invitation_id);
        return;
      }
      const { message: text, response } = describeSendError(error);
      if (!isTransientSmtpError(error)) return this.finish(job, 'failed', { error: text, response }, row);
      const retryAt = nextRetryAt(job.attempts, new Date(), this.retryPolicy, row.expires_at);
      if (!retryAt) {
        const why = job.attempts > this.retryPolicy.delaysMs.length ? `gave up after ${job.attempts} attempts` : 'no retry: the invitation expires first';
        return this.finish(job, 'failed', { error: `${text} (${why})`, response }, row);
      }
      this.scheduleRetry(job, row, { error: text, response, retryAt });
    } finally {
      lease.release();
    }
  }

  /** The pooled transport for a target; a changed configuration gets a new pool, the old one closes once idle. */
  private lease(target: Extract<MailTarget, { kind: 'smtp' }>): { mailer: Transporter; release(): void } {
    const key = targetKey(target);
    if (!this.pool || this.pool.key !== key) {
      if (this.pool) this.retire(this.pool);
      const options = transportOptions(target.smtp, { maxConnections: target.maxConnections });
      if (this.deps.greetingTimeoutMs) options.greetingTimeout = this.deps.greetingTimeoutMs;
      const mailer = nodemailer.createTransport(options as never) as Transporter;
      mailer.on('error', () => {
        // Per-message errors reach sendMail's promise; a transport-level one must not crash us.
      });
      this.pool = { key, mailer, inFlight: 0 };
    }
    const pool = this.pool;
    pool.inFlight++;
    return {
      mailer: pool.mailer,
      release: () => {
        pool.inFlight--;
        if (pool !== this.pool && pool.inFlight === 0) {
          pool.mailer.close();
          this.retired.delete(pool);
        }
      },
    };
  }

  private retire(pool: PooledTransport): void {
    if (pool.inFlight === 0) pool.mailer.close();
    else this.retired.add(pool);
  }

  // ── settings, preview, test ──────────────────────────────────────────────────────────────

  settingsView() {
    const all = this.deps.settings.get();
    const settings = Object.fromEntries(MAIL_SETTING_KEYS.map((key) => [key, all[key]])) as MailSettings;
    let effective;
    let error: string | null = null;
    try {
      effective = this.describeTarget();
    } catch (e) {
      error = (e as Error).message;
    }
    return {
      settings,
      smtp_password_set: this.deps.secrets.has('smtp_password'),
      smtp_password_unreadable: this.deps.secrets.isUnreadable('smtp_password'),
      secret_storage: this.deps.secrets.protection,
      overridden_by_command_line: {
        smtp: Boolean(this.overrides.smtpUrl),
        from: Boolean(this.overrides.mailFrom),
        smtp_url: this.overrides.smtpUrl ? redactSmtpUrl(this.overrides.smtpUrl) : null,
      },
      effective: effective ?? null,
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
  updateSettings(patch: MailSettingsPatch) {
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
    const problems = checkTemplates({ subject: fields.mail_subject_template, html: fields.mail_html_template, text: fields.mail_text_template });
    const listed = Object.entries(problems).flatMap(([part, errors]) => errors.map((e) => `${part} template, ${e}`));
    if (listed.length > 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', listed.join('; '));
    if (Object.keys(changes).length > 0) this.deps.settings.update(changes);
    if (newPassword !== undefined) this.deps.secrets.set('smtp_password', newPassword === '' ? null : newPassword);
    const keys = [...Object.keys(changes), ...(newPassword !== undefined ? ['smtp_password'] : [])];
    if (keys.length > 0) this.deps.events.record('settings.updated', `Mail settings changed: ${keys.join(', ')}`, {}, { keys });
    this.kick();
    return this.settingsView();
  }

  /**
   * Renders templates (the given ones, else those in force) for an invitation or a sample one.
   * The QR code is a data: URL here so the console can show the HTML as it is.
   */
  async preview(input: { subject?: string; html?: string; text?: string; invitation_id?: number }) {
    const settings = this.deps.settings.get();
    const inForce = templatesOf(settings);
    const templates: MailTemplates = { subject: input.subject ?? inForce.subject, html: input.html ?? inForce.html, text: input.text ?? inForce.text };
    const problems = checkTemplates(templates);
    const invitation: InvitationForMail = input.invitation_id
      ? (this.deps.invitations.view(this.deps.invitations.get(input.invitation_id)) as InvitationForMail)
      : sampleInvitation(settings.invitation_lifetime_days);
    const target = (() => {
      try {
        return this.target();
      } catch {
        return null;
      }
    })();
    // A link too long for a QR code (settings saved before they were checked) previews without one.
    const qr = await qrDataUrl(invitation.deeplink, 480).catch((error: unknown) => {
      if (error instanceof QrTooLongError) return '';
      throw error;
    });
    const values = templateValues(invitation, settings, qr);
    const render = (part: 'subject' | 'html' | 'text') => (problems[part] ? null : renderTemplate(part, templates[part], values));
    return {
      from: target?.from ?? null,
      to: invitation.email,
      subject: render('subject'),
      html: render('html'),
      text: render('text'),
      errors: problems,
      ok: Object.keys(problems).length === 0,
      attachments: [{ filename: 'enrollment-qr.png', content_type: 'image/png' }],
    };
  }

  /**
   * Sends a test message now, over a connection of its own, with the settings in force; returns
   * the server's answer. Without SMTP, writes it to the outbox.
   */
  async sendTest(to: string): Promise<MailTestResult> {
    let target: MailTarget;
    try {
      target = this.target();
    } catch (error) {
      throw new ApiError(400, 'ERROR_BAD_REQUEST', (error as Error).message);
    }
    const described = this.describeTarget(target);
    if (target.kind === 'outbox') {
      const { file, messageId } = await this.deps.outbox.write(testMail(target.from, to, 'the outbox folder'), `test-${to}`);
      this.deps.events.record('mail.test', `Test email to ${to} written to the outbox (no SMTP configured)`, {}, { to, file });
      return { ok: true, via: 'outbox' as const, to, file, message_id: messageId, response: null, transport: described };
    }
    const mailer = nodemailer.createTransport(transportOptions(target.smtp, null) as never) as Transporter;
    mailer.on('error', () => {});
    try {
      const info = (await mailer.sendMail(testMail(target.from, to, described.summary))) as { response?: string; messageId?: string; accepted?: unknown[]; rejected?: unknown[] };
      this.deps.events.record('mail.test', `Test email sent to ${to}: ${info.response ?? ''}`, {}, { to, response: info.response ?? null });
      return { ok: true, via: 'smtp' as const, to, response: info.response ?? null, message_id: info.messageId ?? null, accepted: info.accepted ?? [], rejected: info.rejected ?? [], transport: described };
    } catch (error) {
      const { message, response } = describeSendError(error);
      this.deps.events.record('mail.test', `Test email to ${to} failed: ${message}`, {}, { to, error: message, response });
      throw new MailSendError(message, response, (error as NodemailerError).code ?? null, (error as NodemailerError).responseCode ?? null);
    } finally {
      mailer.close();
    }
  }
}

/** A test send the server refused or that could not reach it. */
export class MailSendError extends ApiError {
  readonly response: string | null;
  readonly smtpCode: string | null;
  readonly responseCode: number | null;
  constructor(message: string, response: string | null, smtpCode: string | null, responseCode: number | null) {
    super(502, 'ERROR_MAIL_SEND', message);
    this.response = response;
    this.smtpCode = smtpCode;
    this.responseCode = responseCode;
  }
}

/** "in about 3 minutes", for event messages read by people. */
function inAbout(at: Date): string {
  const minutes = Math.max(1, Math.round((at.getTime() - Date.now()) / 60_000));
  if (minutes < 90) return `in about ${minutes} minute${minutes === 1 ? '' : 's'}`;
  const hours = Math.round(minutes / 60);
  return `in about ${hours} hours`;
}

function sampleInvitation(days: number): InvitationForMail {
  const data = Buffer.from('https://mdm.example.com/api;sample-user-token;sample-invitation-token;Helpdesk;;;').toString('base64');
  return {
    id: 0,
    email: 'alex.example@example.com',
    firstname: 'Alex',
    lastname: 'Example',
    expires_at: new Date(Date.now() + days * 86_400_000).toISOString(),
    deeplink: `https://mdm.example.com/deeplink/?data=${encodeURIComponent(data)}`,
    app_link: `mdmagent://register?data=${encodeURIComponent(data)}`,
  };
}
