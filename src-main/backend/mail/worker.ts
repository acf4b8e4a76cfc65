import type { SendMailOptions } from 'nodemailer';
import { isClosedDatabase, isDiskFull } from '../db/disk-full.ts';
import type { EventLog } from '../events/event-log.ts';
import type { SettingsStore } from '../settings/settings.ts';
import type { DeliveryRepository, DeliveryRow } from './delivery-repository.ts';
import type { Claim, ClaimedQueue, DeliveryOutcome, QueuedMailRow } from './queue-repository.ts';
import { composeInvitationMail } from './message.ts';
import type { Outbox } from './outbox.ts';
import type { MailableAccountInvites, MailableInvitation, MailableInvitations } from './ports.ts';
import type { AccountDeliveryRepository, AccountDeliveryRow } from './account-delivery-repository.ts';
import { composeAccountInviteMail } from './account-message.ts';
import type { NotificationRepository, NotificationRow } from './notification-repository.ts';
import { DEFAULT_RETRY_DELAYS_MS, isTransientSmtpError, nextRetryAt, type RetryPolicy } from './retry-policy.ts';
import { describeSendError } from './send-error.ts';
import type { MailSettingsService } from './settings-service.ts';
import { SmtpUrlError, type MailTarget } from './smtp-config.ts';
import { TemplateError } from './template.ts';
import type { TransportPool } from './transport-pool.ts';

interface WorkerDeps {
  deliveries: DeliveryRepository;
  invitations: MailableInvitations;
  /** The second queue: admins' invitations (their set-up links). */
  accountDeliveries: AccountDeliveryRepository;
  accountInvites: MailableAccountInvites;
  /** The third queue: notification emails composed by their sender (alerts). */
  notifications: NotificationRepository;
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
  /** This node's name: what it claims is stamped with it (several nodes drain one queue). */
  node: string;
  /** How long a claim holds unless renewed; default DEFAULT_CLAIM_TTL_MS. Renewed every third of it. */
  claimTtlMs?: number;
  /**
   * How often an idle worker looks for due mail queued by other nodes; default DEFAULT_POLL_MS; 0: one
   * node, which looks only once per claim lifetime (for expired claims).
   */
  pollMs?: number;
}

/**
 * A claim lives 15 s unless its node renews it (every 5 s while the send is in progress): a node
 * that dies has its messages taken by another within about 15 s, and a send that stalls on a slow
 * server keeps its claim however long it takes.
 */
export const DEFAULT_CLAIM_TTL_MS = 15_000;
/** Mail queued on another node is seen within this (its own node is told at once). */
export const DEFAULT_POLL_MS = 1_500;

/** What became of one message handed to the transport (or the outbox). */
type Transmitted =
  | { state: 'sent'; response: string | null; messageId: string | undefined }
  | { state: 'outbox'; file: string; messageId: string }
  | { state: 'failed'; error: string; response?: string | null }
  | { state: 'retry'; error: string; response: string | null; retryAt: Date }
  /** Cut off by our own shutdown: queued again, sent after the restart. */
  | { state: 'cut' };

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
  private pumping = false;
  private pumpAgain = false;
  private active = 0;
  private idleWaiters: (() => void)[] = [];
  private retryTimer: NodeJS.Timeout | null = null;
  private retryTimerAt = 0;
  private readonly claimTtlMs: number;
  /** The keys this node holds claims on, per queue: their claims are renewed until each send ends. */
  private readonly held = new Map<ClaimedQueue<QueuedMailRow>, Set<number>>();
  private renewTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;

  constructor(deps: WorkerDeps) {
    this.deps = deps;
    this.retryPolicy = deps.retryPolicy ?? { delaysMs: DEFAULT_RETRY_DELAYS_MS };
    this.claimTtlMs = deps.claimTtlMs ?? DEFAULT_CLAIM_TTL_MS;
  }

  /** This node's name, as its claims are stamped. */
  get node(): string {
    return this.deps.node;
  }

  /** Starts the worker: deliveries interrupted by the last stop go first. Call once listening. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    // What this node's previous run held when it stopped or was killed goes back to the queue now
    // (another node's claims are left to expire: that node may still be sending).
    const node = this.deps.node;
    const resumed =
      (await this.deps.deliveries.requeueInterrupted(node)) +
      (await this.deps.accountDeliveries.requeueInterrupted(node)) +
      (await this.deps.notifications.requeueInterrupted(node));
    if (resumed > 0)
      await this.deps.events.record(
        'mail.resumed',
        `${resumed} interrupted invitation email(s) queued again`,
        {},
        { count: resumed },
      );
    // Claims are kept alive while their sends run; the other nodes' mail is looked for now and then.
    this.renewTimer = setInterval(() => void this.renewClaims(), Math.max(50, Math.floor(this.claimTtlMs / 3)));
    this.renewTimer.unref();
    // With one node (pollMs 0: nothing else queues) the worker still looks once per claim lifetime:
    // a row left 'sending' whose final write failed (the database refused it) is taken again once
    // its claim has expired, not only when more mail is queued or at the next start.
    const pollMs = this.deps.pollMs ?? DEFAULT_POLL_MS;
    this.pollTimer = setInterval(() => this.kick(), pollMs > 0 ? pollMs : this.claimTtlMs);
    this.pollTimer.unref();
    this.kick();
    // Retries scheduled before the stop keep their time.
    await this.armRetryTimer();
  }

  /** Renews the claims of the sends in progress (one statement per queue). */
  private async renewClaims(): Promise<void> {
    if (!this.deps.isOpen()) return;
    for (const [queue, keys] of this.held) {
      if (keys.size === 0) continue;
      try {
        await queue.extend(this.deps.node, [...keys], this.claimTtlMs);
      } catch (error) {
        // The database is away: the claims may expire (another node would then send again); tried next round.
        reportUnlessClosing(error);
      }
    }
  }

  /** Claims the next due row of `queue` for this node and holds it until `release`. */
  private async claimFrom<Row extends QueuedMailRow>(queue: ClaimedQueue<Row>): Promise<Row | undefined> {
    const row = await queue.claim(this.deps.node, this.claimTtlMs);
    if (row) {
      const keys = this.held.get(queue as ClaimedQueue<QueuedMailRow>) ?? new Set<number>();
      keys.add(queue.keyOf(row));
      this.held.set(queue as ClaimedQueue<QueuedMailRow>, keys);
    }
    return row;
  }

  private release<Row extends QueuedMailRow>(queue: ClaimedQueue<Row>, row: Row): void {
    this.held.get(queue as ClaimedQueue<QueuedMailRow>)?.delete(queue.keyOf(row));
  }

  /** The claim this node holds on a row it claimed: its writes are fenced by it. */
  private claimOf(row: QueuedMailRow): Claim {
    return { node: this.deps.node, attempts: row.attempts };
  }

  /** Stops taking work, lets messages in flight finish for a moment, then cuts them off. */
  async close(): Promise<void> {
    this.stopping = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    // Claims stay renewed while the sends in flight finish (or are cut off and queued again).
    if (this.active > 0) await this.idleOrAfter(this.deps.shutdownGraceMs ?? 3000);
    this.deps.transports.closeAll();
    if (this.active > 0) await this.idleOrAfter(2000);
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = null;
  }

  /** What the console's mail page shows: where mail goes, the queue, what is in flight. */
  async status() {
    const { transport, error } = this.deps.mailSettings.describeOrError();
    return {
      transport,
      error,
      outbox_dir: this.deps.mailSettings.outboxDir,
      counts: await this.deps.deliveries.counts(),
      in_flight: this.active,
      next_retry_at: await this.deps.deliveries.nextRetryAt(),
    };
  }

  /** There may be work: look on a later tick (after the caller's transaction). */
  kick(): void {
    if (!this.started || this.stopping || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.pump();
    });
  }

  /** One pump at a time (each claims with awaits in between): a kick meanwhile makes it look again. */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        await this.pumpOnce();
      } while (this.pumpAgain);
    } catch (error) {
      // The database went away under the worker (the server is closing) or its disk is full: the
      // queue is in the database, looked at again on the next kick or start.
      if (!isDiskFull(error) && !isClosedDatabase(error)) console.error(error);
    } finally {
      this.pumping = false;
    }
  }

  private async idleOrAfter(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await Promise.race([idle, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /** Wakes the worker when the earliest scheduled retry is due (the schedule itself is in the database). */
  private async armRetryTimer(): Promise<void> {
    if (!this.started || this.stopping || !this.deps.isOpen()) return;
    const next = [
      await this.deps.deliveries.nextRetryAt(),
      await this.deps.accountDeliveries.nextRetryAt(),
      await this.deps.notifications.nextRetryAt(),
    ]
      .filter((at): at is string => at !== null)
      .sort()[0];
    if (!next) return;
    const at = Date.parse(next);
    if (this.retryTimer && this.retryTimerAt <= at) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimerAt = at;
    this.retryTimer = setTimeout(
      () => {
        this.retryTimer = null;
        this.kick();
        this.armRetryTimer().catch(reportUnlessClosing);
      },
      Math.max(0, at - Date.now()) + 5,
    );
    this.retryTimer.unref();
  }

  private async pumpOnce(): Promise<void> {
    if (this.stopping || !this.deps.isOpen()) return;
    const limit = this.deps.settings.get().smtp_max_connections;
    while (!this.stopping && this.active < limit) {
      const job = await this.claimFrom(this.deps.deliveries);
      const accountJob = job ? undefined : await this.claimFrom(this.deps.accountDeliveries);
      const notification = job || accountJob ? undefined : await this.claimFrom(this.deps.notifications);
      if (!job && !accountJob && !notification) break;
      this.active++;
      const failed = async (error: unknown) => {
        const outcome = { state: 'failed' as const, error: `Internal error: ${(error as Error).message}` };
        if (job) await this.finish(job, outcome);
        else if (accountJob) await this.finishAccount(accountJob, outcome);
        else await this.finishNotification(notification!, outcome);
      };
      const delivery = job
        ? this.deliver(job)
        : accountJob
          ? this.deliverAccountInvite(accountJob)
          : this.deliverNotification(notification!);
      // Even the failure may not be written (the database refuses): the row stays 'sending' until
      // its claim expires and the timer above takes it again.
      void delivery
        .catch(failed)
        .catch(reportUnlessClosing)
        .finally(() => {
          if (job) this.release(this.deps.deliveries, job);
          else if (accountJob) this.release(this.deps.accountDeliveries, accountJob);
          else this.release(this.deps.notifications, notification!);
          this.active--;
          if (this.active === 0) for (const wake of this.idleWaiters.splice(0)) wake();
          this.kick();
        });
    }
  }

  private async finish(
    job: DeliveryRow,
    outcome: DeliveryOutcome & { error?: string },
    invitation?: MailableInvitation,
  ): Promise<void> {
    if (!this.deps.isOpen()) return;
    if (!(await this.deps.deliveries.finish(job.invitation_id, this.claimOf(job), outcome))) return;
    const { state, error, response } = outcome;
    const email = invitation?.email ?? `invitation #${job.invitation_id}`;
    const message = {
      sent: `Invitation email sent to ${email}`,
      outbox: `Invitation email for ${email} written to the outbox (no SMTP configured)`,
      failed: `Invitation email to ${email} failed: ${error ?? ''}`,
    }[state];
    await this.deps.events.record(
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

  private async scheduleRetry(
    job: DeliveryRow,
    invitation: MailableInvitation,
    outcome: { error: string; response: string | null; retryAt: Date },
  ): Promise<void> {
    if (!this.deps.isOpen() || !(await this.deps.deliveries.scheduleRetry(job.invitation_id, this.claimOf(job), outcome))) return;
    const at = outcome.retryAt.toISOString();
    await this.deps.events.record(
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
    await this.armRetryTimer();
  }

  private async deliver(job: DeliveryRow): Promise<void> {
    const invitation = await this.deps.invitations.forMail(job.invitation_id);
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
    const result = await this.transmit(
      target,
      message,
      `invitation-${invitation.id}-${invitation.email}`,
      job.attempts,
      invitation.expires_at,
    );
    if (result.state === 'cut') {
      if (this.deps.isOpen()) await this.deps.deliveries.requeue(job.invitation_id, this.claimOf(job));
    } else if (result.state === 'retry') await this.scheduleRetry(job, invitation, result);
    else if (result.state === 'outbox')
      await this.finish(job, { state: 'outbox', outboxFile: result.file, messageId: result.messageId }, invitation);
    else await this.finish(job, result, invitation);
  }

  /** Sends one composed message through the pool (or writes it to the outbox); failures are sorted into final and transient. */
  private async transmit(
    target: MailTarget,
    message: SendMailOptions,
    outboxLabel: string,
    attempts: number,
    expiresAt?: string,
  ): Promise<Transmitted> {
    if (target.kind === 'outbox') {
      try {
        const { file, messageId } = await this.deps.outbox.write(message, outboxLabel);
        return { state: 'outbox', file, messageId };
      } catch (error) {
        return { state: 'failed', error: `Could not write to the outbox ${this.deps.outbox.dir}: ${(error as Error).message}` };
      }
    }
    const lease = this.deps.transports.lease(target);
    try {
      const info = (await lease.mailer.sendMail(message)) as { response?: string; messageId?: string };
      return { state: 'sent', response: info.response ?? null, messageId: info.messageId };
    } catch (error) {
      // Cut off by our own shutdown, not refused by the server: sent after the restart.
      if (this.stopping) return { state: 'cut' };
      const { message: text, response } = describeSendError(error);
      if (!isTransientSmtpError(error)) return { state: 'failed', error: text, response };
      const retryAt = nextRetryAt(attempts, new Date(), this.retryPolicy, expiresAt);
      if (!retryAt) {
        const why =
          attempts > this.retryPolicy.delaysMs.length || expiresAt === undefined
            ? `gave up after ${attempts} attempts`
            : 'no retry: the invitation expires first';
        return { state: 'failed', error: `${text} (${why})`, response };
      }
      return { state: 'retry', error: text, response, retryAt };
    } finally {
      lease.release();
    }
  }

  /** An admin's invitation: the set-up link, sent while the invitation is pending. */
  private async deliverAccountInvite(job: AccountDeliveryRow): Promise<void> {
    const invite = await this.deps.accountInvites.forMail(job.invite_id);
    if (!invite) return; // the account was deleted meanwhile; its delivery row went with it
    if (invite.status !== 'pending' || job.token === null) {
      const why = {
        pending: 'its link is no longer kept',
        used: 'the link has been used already',
        replaced: 'a newer invitation replaced it',
        expired: 'it has expired',
        disabled: 'the account is disabled',
      }[invite.status];
      return this.finishAccount(job, { state: 'failed', error: `Not sent: ${why}` }, invite.email);
    }
    let target: MailTarget;
    let message: SendMailOptions;
    try {
      target = this.deps.mailSettings.target();
      message = composeAccountInviteMail(
        invite,
        this.deps.accountInvites.setupLink(job.token),
        this.deps.settings.get(),
        target.from,
      );
    } catch (error) {
      const what = error instanceof SmtpUrlError ? 'The SMTP URL is not valid' : 'The message could not be built';
      return this.finishAccount(job, { state: 'failed', error: `${what}: ${(error as Error).message}` }, invite.email);
    }
    const result = await this.transmit(
      target,
      message,
      `admin-invite-${invite.id}-${invite.email}`,
      job.attempts,
      invite.expires_at,
    );
    if (result.state === 'cut') {
      if (this.deps.isOpen()) await this.deps.accountDeliveries.requeue(job.invite_id, this.claimOf(job));
    } else if (result.state === 'retry') {
      if (!this.deps.isOpen() || !(await this.deps.accountDeliveries.scheduleRetry(job.invite_id, this.claimOf(job), result)))
        return;
      await this.deps.events.record(
        'account.invitation_retrying',
        `Admin invitation email to ${invite.email} failed (${result.error}); will retry ${inAbout(result.retryAt)}`,
        {},
        {
          account_invite_id: job.invite_id,
          email: invite.email,
          attempts: job.attempts,
          error: result.error,
          retry_at: result.retryAt.toISOString(),
        },
      );
      await this.armRetryTimer();
    } else if (result.state === 'outbox') {
      await this.finishAccount(job, { state: 'outbox', outboxFile: result.file, messageId: result.messageId }, invite.email);
    } else await this.finishAccount(job, result, invite.email);
  }

  /** A notification email (an alert): composed by its sender, sent as it is, retried like the others. */
  private async deliverNotification(job: NotificationRow): Promise<void> {
    const to = recipientsOf(job);
    let target: MailTarget;
    try {
      target = this.deps.mailSettings.target();
    } catch (error) {
      return this.finishNotification(
        job,
        { state: 'failed', error: `The SMTP URL is not valid: ${(error as Error).message}` },
        to,
      );
    }
    const message: SendMailOptions = {
      from: target.from,
      to,
      subject: job.subject.replace(/[\r\n\t]+/g, ' '),
      text: job.body,
      headers: { 'X-MDM-Notification-Id': String(job.id) },
    };
    const result = await this.transmit(target, message, `notification-${job.id}`, job.attempts);
    if (result.state === 'cut') {
      if (this.deps.isOpen()) await this.deps.notifications.requeue(job.id, this.claimOf(job));
    } else if (result.state === 'retry') {
      if (!this.deps.isOpen() || !(await this.deps.notifications.scheduleRetry(job.id, this.claimOf(job), result))) return;
      await this.deps.events.record(
        'mail.notification_retrying',
        `Email "${job.subject}" to ${to.join(', ')} failed (${result.error}); will retry ${inAbout(result.retryAt)}`,
        {},
        {
          notification_id: job.id,
          to,
          subject: job.subject,
          attempts: job.attempts,
          error: result.error,
          retry_at: result.retryAt.toISOString(),
        },
      );
      await this.armRetryTimer();
    } else if (result.state === 'outbox') {
      await this.finishNotification(job, { state: 'outbox', outboxFile: result.file, messageId: result.messageId }, to);
    } else await this.finishNotification(job, result, to);
  }

  private async finishNotification(
    job: NotificationRow,
    outcome: DeliveryOutcome & { error?: string },
    to = recipientsOf(job),
  ): Promise<void> {
    if (!this.deps.isOpen() || !(await this.deps.notifications.finish(job.id, this.claimOf(job), outcome))) return;
    const message = {
      sent: `Email "${job.subject}" sent to ${to.join(', ')}`,
      outbox: `Email "${job.subject}" written to the outbox (no SMTP configured)`,
      failed: `Email "${job.subject}" to ${to.join(', ')} failed: ${outcome.error ?? ''}`,
    }[outcome.state];
    await this.deps.events.record(
      `mail.notification_${outcome.state}`,
      message,
      {},
      {
        notification_id: job.id,
        to,
        subject: job.subject,
        attempts: job.attempts,
        ...(outcome.error ? { error: outcome.error } : {}),
      },
    );
  }

  private async finishAccount(
    job: AccountDeliveryRow,
    outcome: DeliveryOutcome & { error?: string },
    email?: string,
  ): Promise<void> {
    if (!this.deps.isOpen() || !(await this.deps.accountDeliveries.finish(job.invite_id, this.claimOf(job), outcome))) return;
    const to = email ?? `admin invitation #${job.invite_id}`;
    const message = {
      sent: `Admin invitation email sent to ${to}`,
      outbox: `Admin invitation email for ${to} written to the outbox (no SMTP configured)`,
      failed: `Admin invitation email to ${to} failed: ${outcome.error ?? ''}`,
    }[outcome.state];
    await this.deps.events.record(
      `account.invitation_${outcome.state}`,
      message,
      {},
      {
        account_invite_id: job.invite_id,
        state: outcome.state,
        attempts: job.attempts,
        ...(email ? { email } : {}),
        ...(outcome.error ? { error: outcome.error } : {}),
        ...(outcome.response ? { response: outcome.response } : {}),
      },
    );
  }
}

/** Addresses of a queued notification (stored as a JSON array). */
function recipientsOf(row: NotificationRow): string[] {
  const parsed = JSON.parse(row.recipients) as unknown;
  return Array.isArray(parsed) ? parsed.filter((to): to is string => typeof to === 'string') : [];
}

/** "in about 3 minutes", for event messages read by people. */
function inAbout(at: Date): string {
  const minutes = Math.max(1, Math.round((at.getTime() - Date.now()) / 60_000));
  if (minutes < 90) return `in about ${minutes} minute${minutes === 1 ? '' : 's'}`;
  const hours = Math.round(minutes / 60);
  return `in about ${hours} hours`;
}

/** An error of the worker's own timers: dropped when the server is closing or its disk is full, else reported. */
function reportUnlessClosing(error: unknown): void {
  if (!isDiskFull(error) && !isClosedDatabase(error)) console.error(error);
}
