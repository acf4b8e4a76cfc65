import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError } from '../errors.ts';
import type { InvitationMailer } from '../invitations/ports.ts';
import type { DeliveryCounts, DeliveryRepository } from './delivery-repository.ts';
import type { MailableInvitations } from './ports.ts';
import type { AccountDeliveryRepository } from './account-delivery-repository.ts';
import type { NotificationRepository } from './notification-repository.ts';
import type { AccountInviteDelivery } from '../../../src-shared/contract/index.ts';

/**
 * The queue of invitation emails, persisted in mail_deliveries: what gets queued, retried, and
 * how far a bulk send has got. The worker (worker.ts) drains it.
 */
export class MailQueue implements InvitationMailer {
  private readonly deliveries: DeliveryRepository;
  private readonly invitations: MailableInvitations;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly wake: () => void;
  private readonly accountDeliveries: AccountDeliveryRepository;
  private readonly notifications: NotificationRepository;

  /** `wake`: tells the worker there is work; called once the queueing has committed. */
  constructor(deps: {
    deliveries: DeliveryRepository;
    invitations: MailableInvitations;
    events: EventLog;
    work: UnitOfWork;
    wake: () => void;
    accountDeliveries: AccountDeliveryRepository;
    notifications: NotificationRepository;
  }) {
    this.notifications = deps.notifications;
    this.accountDeliveries = deps.accountDeliveries;
    this.deliveries = deps.deliveries;
    this.invitations = deps.invitations;
    this.events = deps.events;
    this.work = deps.work;
    this.wake = deps.wake;
  }

  /** Queues emails of existing invitations, in the caller's transaction if any; returns how many were queued. */
  async queue(invitationIds: number[], batchId: string | null = null): Promise<number> {
    if (invitationIds.length === 0) return 0;
    return this.work.run(async () => {
      const queued = await this.deliveries.queue(invitationIds, batchId);
      if (queued > 0) {
        const single = invitationIds.length === 1 ? invitationIds[0] : undefined;
        await this.events.record(
          'mail.queued',
          queued === 1 ? `Invitation email queued` : `${queued} invitation emails queued`,
          single === undefined ? {} : { invitationId: single },
          { count: queued, batch_id: batchId, ...(single === undefined ? {} : { invitation_id: single }) },
        );
      }
      await this.work.afterCommit(this.wake);
      return queued;
    });
  }

  /** Queues every failed delivery again (of one batch, or of the given invitations). */
  async retryFailed(filter: { batchId?: string; invitationIds?: number[] } = {}): Promise<number> {
    // Those waiting for an automatic retry go now too.
    let ids = [...(await this.deliveries.failedIds(filter.batchId)), ...(await this.deliveries.waitingIds(filter.batchId))];
    if (filter.invitationIds) {
      const wanted = new Set(filter.invitationIds);
      ids = ids.filter((id) => wanted.has(id));
    }
    return this.queue(await this.invitations.pendingAmong(ids), filter.batchId ?? null);
  }

  /** Queues the email of an admin's invitation in the caller's transaction; the worker sends it once that commits. */
  async queueAccountInvite(inviteId: number, token: string): Promise<void> {
    await this.work.run(async () => {
      await this.accountDeliveries.queue(inviteId, token);
      await this.work.afterCommit(this.wake);
    });
  }

  /**
   * Queues a notification email (plain text, composed by the caller: an alert) in the caller's
   * transaction; the worker sends it once that commits, with the invitations' retries and outbox.
   */
  queueNotification(to: string[], subject: string, body: string): Promise<number> {
    return this.work.run(async () => {
      const id = await this.notifications.queue(to, subject, body);
      await this.work.afterCommit(this.wake);
      return id;
    });
  }

  /** The email of each of these admin invitations that has one. */
  deliveriesOf(inviteIds: number[]): Promise<Map<number, AccountInviteDelivery>> {
    return this.accountDeliveries.deliveriesOf(inviteIds);
  }

  counts(batchId?: string): Promise<DeliveryCounts> {
    return this.deliveries.counts(batchId);
  }

  /** Progress of a bulk send, for the console's progress bar. */
  async batch(batchId: string) {
    const counts = await this.deliveries.counts(batchId);
    if (counts.total === 0) throw new ApiError(404, 'ERROR_NOT_FOUND', 'No such mail batch');
    // One waiting for a retry has had its try: it counts as finished for the progress bar, shown apart.
    const finished = counts.sent + counts.failed + counts.outbox + counts.retrying;
    return { batch_id: batchId, ...counts, finished, done: counts.queued - counts.retrying + counts.sending === 0 };
  }
}
