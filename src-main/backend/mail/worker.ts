import type { SendMailOptions } from 'nodemailer';
import type { EventLog } from '../events/event-log.ts';
import type { SettingsStore } from '../settings/settings.ts';
import type { DeliveryOutcome, DeliveryRepository, DeliveryRow } from './delivery-repository.ts';
import { composeInvitationMail } from './message.ts';
import type { Outbox } from './outbox.ts';
import type { MailableInvitation, MailableInvitations } from './ports.ts';
import { DEFAULT_RETRY_DELAYS_MS, isTransientSmtpError, nextRetryAt, type RetryPolicy } from './retry-policy.ts';
import { describeSendError } from './send-error.ts';
import type { MailSettingsService } from './settings-service.ts';
import { SmtpUrlError, type MailTarget } from './smtp-config.ts';
import { TemplateError } from './template.ts';
import type { TransportPool } from './transport-pool.ts';

interface WorkerDeps {
  deliveries: DeliveryRepository;
  invitations: MailableInvitations;
  settings: SettingsStore;
  mailSettings: MailSettingsService;
  transports: TransportPool;
  outbox: Outbox;
  events: EventLog;
  /** Whether the database is still open (a send that ends after close writes nothing). */
  isOpen: () => boolean;
  /** How long close() lets messages in flight finish before cutting them off (they are re-queued). */
  shutdownGraceMs?: number;
  /** When transient failures are retried; default DEFAULT_RETRY_DELAYS_MS. */
  retryPolicy?: RetryPolicy;
}

/**
 * Drains the queue in the background, keeping at most `smtp_max_connections` messages in flight
 * through the transport pool, or writing .eml files to the outbox when there is no SMTP. A send
 * never touches the invitation itself: a failure only marks its delivery failed, with the server's message.
 */
export class MailWorker {
  private readonly deps: WorkerDeps;
  private readonly retryPolicy: RetryPolicy;
  private started = false;
  private stopping = false;
  private scheduled = false;
  private active = 0;
  private idleWaiters: (() => void)[] = [];
  private retryTimer: NodeJS.Timeout | null = null;
  private retryTimerAt = 0;

  constructor(deps: WorkerDeps) {
    this.deps = deps;
    this.retryPolicy = deps.retryPolicy ?? { delaysMs: DEFAULT_RETRY_DELAYS_MS };
  }

  /** Starts the worker: deliveries interrupted by the last stop go first. Call once listening. */
  start(): void {
    if (this.started) return;
    this.started = true;
    const resumed = this.deps.deliveries.requeueInterrupted();
    if (resumed > 0)
      this.deps.events.record('mail.resumed', `${resumed} interrupted invitation email(s) queued again`, {}, { count: resumed });
    this.kick();
    // Retries scheduled before the stop keep their time.
    this.armRetryTimer();
  }

  /** Stops taking work, lets messages in flight finish for a moment, then cuts them off. */
  async close(): Promise<void> {
    this.stopping = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.active > 0) await this.idleOrAfter(this.deps.shutdownGraceMs ?? 3000);
    this.deps.transports.closeAll();
    if (this.active > 0) await this.idleOrAfter(2000);
  }

  /** What the console's mail page shows: where mail goes, the queue, what is in flight. */
  status() {
    const { transport, error } = this.deps.mailSettings.describeOrError();
    return {
      transport,
      error,
      outbox_dir: this.deps.mailSettings.outboxDir,
      counts: this.deps.deliveries.counts(),
      in_flight: this.active,
      next_retry_at: this.deps.deliveries.nextRetryAt(),
    };
  }

  /** There may be work: look on a later tick (after the caller's transaction). */
  kick(): void {
    if (!this.started || this.stopping || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private async idleOrAfter(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await Promise.race([idle, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /** Wakes the worker when the earliest scheduled retry is due (the schedule itself is in the database). */
  private armRetryTimer(): void {
    if (!this.started || this.stopping || !this.deps.isOpen()) return;
    const next = this.deps.deliveries.nextRetryAt();
    if (!next) return;
    const at = Date.parse(next);
    if (this.retryTimer && this.retryTimerAt <= at) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimerAt = at;
    this.retryTimer = setTimeout(
      () => {
        this.retryTimer = null;
        this.kick();
        this.armRetryTimer();
      },
      Math.max(0, at - Date.now()) + 5,
    );
    this.retryTimer.unref();
  }

  private pump(): void {
    if (this.stopping || !this.deps.isOpen()) return;
    const limit = this.deps.settings.get().smtp_max_connections;
    while (!this.stopping && this.active < limit) {
      const job = this.deps.deliveries.claim();
      if (!job) break;
      this.active++;
      void this.deliver(job)
        .catch((error: unknown) => this.finish(job, { state: 'failed', error: `Internal error: ${(error as Error).message}` }))
        .finally(() => {
          this.active--;
          if (this.active === 0) for (const wake of this.idleWaiters.splice(0)) wake();
          this.kick();
        });
    }
  }

  private finish(job: DeliveryRow, outcome: DeliveryOutcome & { error?: string }, invitation?: MailableInvitation): void {
    if (!this.deps.isOpen()) return;
    if (!this.deps.deliveries.finish(job.invitation_id, outcome)) return;
    const { state, error, response } = outcome;
    const email = invitation?.email ?? `invitation #${job.invitation_id}`;
    const message = {
      sent: `Invitation email sent to ${email}`,
      outbox: `Invitation email for ${email} written to the outbox (no SMTP configured)`,
      failed: `Invitation email to ${email} failed: ${error ?? ''}`,
    }[state];
    this.deps.events.record(
      `mail.${state}`,
      message,
      { entityId: invitation?.entity_id ?? null, invitationId: job.invitation_id },
      {
        state,
        batch_id: job.batch_id,
        attempts: job.attempts,
        ...(error ? { error } : {}),
        ...(response ? { response } : {}),
      },
    );
  }

  private scheduleRetry(
    job: DeliveryRow,
    invitation: MailableInvitation,
    outcome: { error: string; response: string | null; retryAt: Date },
  ): void {
    if (!this.deps.isOpen() || !this.deps.deliveries.scheduleRetry(job.invitation_id, outcome)) return;
    const at = outcome.retryAt.toISOString();
    this.deps.events.record(
      'mail.retrying',
      `Invitation email to ${invitation.email} failed (${outcome.error}); will retry ${inAbout(outcome.retryAt)} (at ${at.slice(11, 19)} UTC)`,
      { entityId: invitation.entity_id, invitationId: job.invitation_id },
      {
        state: 'queued',
        batch_id: job.batch_id,
        attempts: job.attempts,
        error: outcome.error,
        retry_at: at,
        ...(outcome.response ? { response: outcome.response } : {}),
      },
    );
    this.armRetryTimer();
  }

  private async deliver(job: DeliveryRow): Promise<void> {
    const invitation = this.deps.invitations.forMail(job.invitation_id);
    if (!invitation) return; // deleted meanwhile; its delivery row went with it
    if (invitation.status !== 'pending') {
      const why = { done: 'it has already been used', revoked: 'it was revoked', expired: 'it has expired' }[invitation.status];
      return this.finish(job, { state: 'failed', error: `Not sent: ${why}` }, invitation);
    }
    let target: MailTarget;
    let message: SendMailOptions;
    try {
      target = this.deps.mailSettings.target();
      message = await composeInvitationMail(invitation, this.deps.settings.get(), target.from);
    } catch (error) {
      const what =
        error instanceof TemplateError
          ? 'The email template is broken'
          : error instanceof SmtpUrlError
            ? 'The SMTP URL is not valid'
            : 'The message could not be built';
      return this.finish(job, { state: 'failed', error: `${what}: ${(error as Error).message}` }, invitation);
    }
    if (target.kind === 'outbox') {
      try {
        const { file, messageId } = await this.deps.outbox.write(message, `invitation-${invitation.id}-${invitation.email}`);
        return this.finish(job, { state: 'outbox', outboxFile: file, messageId }, invitation);
      } catch (error) {
        return this.finish(
          job,
          { state: 'failed', error: `Could not write to the outbox ${this.deps.outbox.dir}: ${(error as Error).message}` },
          invitation,
        );
      }
    }
    const lease = this.deps.transports.lease(target);
    try {
      const info = (await lease.mailer.sendMail(message)) as { response?: string; messageId?: string };
      this.finish(job, { state: 'sent', response: info.response ?? null, messageId: info.messageId }, invitation);
    } catch (error) {
      if (this.stopping) {
        // Cut off by our own shutdown, not refused by the server: sent after the restart.
        if (this.deps.isOpen()) this.deps.deliveries.requeue(job.invitation_id);
        return;
      }
      const { message: text, response } = describeSendError(error);
      if (!isTransientSmtpError(error)) return this.finish(job, { state: 'failed', error: text, response }, invitation);
      const retryAt = nextRetryAt(job.attempts, new Date(), this.retryPolicy, invitation.expires_at);
      if (!retryAt) {
        const why =
          job.attempts > this.retryPolicy.delaysMs.length
            ? `gave up after ${job.attempts} attempts`
            : 'no retry: the invitation expires first';
        return this.finish(job, { state: 'failed', error: `${text} (${why})`, response }, invitation);
      }
      this.scheduleRetry(job, invitation, { error: text, response, retryAt });
    } finally {
      lease.release();
    }
  }
}

/** "in about 3 minutes", for event messages read by people. */
function inAbout(at: Date): string {
  const minutes = Math.max(1, Math.round((at.getTime() - Date.now()) / 60_000));
  if (minutes < 90) return `in about ${minutes} minute${minutes === 1 ? '' : 's'}`;
  const hours = Math.round(minutes / 60);
  return `in about ${hours} hours`;
}
