import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import type { DeliveryOutcome } from './delivery-repository.ts';

/** A notification email as queued: composed by its caller (alerts), sent by the mail worker. */
export interface NotificationRow {
  id: number;
  /** JSON array of addresses. */
  recipients: string;
  subject: string;
  body: string;
  state: 'queued' | 'sending' | 'sent' | 'failed' | 'outbox';
  attempts: number;
  error: string | null;
  retry_at: string | null;
  queued_at: string;
}

/**
 * The notification_mails table: the mail worker's third queue (alert emails), drained beside the
 * invitations' with the same transports, retries and outbox.
 */
export interface NotificationRepository {
  queue(recipients: string[], subject: string, body: string): number;
  claim(): NotificationRow | undefined;
  finish(id: number, outcome: DeliveryOutcome): boolean;
  scheduleRetry(id: number, outcome: { error: string; response: string | null; retryAt: Date }): boolean;
  nextRetryAt(): string | null;
  requeueInterrupted(): number;
  requeue(id: number): void;
}

export class SqliteNotificationRepository implements NotificationRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      queue: db.prepare(
        `INSERT INTO notification_mails (recipients, subject, body, state, attempts, queued_at, updated_at)
         VALUES (?, ?, ?, 'queued', 0, ?, ?) RETURNING id`,
      ),
      claim: db.prepare(
        `UPDATE notification_mails SET state = 'sending', attempts = attempts + 1, retry_at = NULL, updated_at = @at
         WHERE id = (SELECT id FROM notification_mails WHERE state = 'queued' AND (retry_at IS NULL OR retry_at <= @at)
                     ORDER BY queued_at, id LIMIT 1)
         RETURNING id, recipients, subject, body, state, attempts, error, retry_at, queued_at`,
      ),
      finish: db.prepare(
        `UPDATE notification_mails SET state = @state, error = @error, response = @response,
           message_id = coalesce(@message_id, message_id), outbox_file = @outbox_file, sent_at = coalesce(@sent_at, sent_at), updated_at = @at
         WHERE id = @id AND state = 'sending'`,
      ),
      scheduleRetry: db.prepare(
        `UPDATE notification_mails SET state = 'queued', error = @error, response = @response, retry_at = @retry_at,
           queued_at = @retry_at, updated_at = @at
         WHERE id = @id AND state = 'sending'`,
      ),
      nextRetry: db.prepare(`SELECT min(retry_at) AS at FROM notification_mails WHERE state = 'queued' AND retry_at IS NOT NULL`),
      requeueInterrupted: db.prepare(`UPDATE notification_mails SET state = 'queued', updated_at = ? WHERE state = 'sending'`),
      requeueOne: db.prepare(`UPDATE notification_mails SET state = 'queued', updated_at = ? WHERE id = ? AND state = 'sending'`),
    };
  }

  queue(recipients: string[], subject: string, body: string): number {
    const at = nowIso();
    return (this.s.queue.get(JSON.stringify(recipients), subject, body, at, at) as { id: number }).id;
  }

  claim(): NotificationRow | undefined {
    return this.s.claim.get({ at: nowIso() }) as NotificationRow | undefined;
  }

  finish(id: number, outcome: DeliveryOutcome): boolean {
    const at = nowIso();
    return (
      this.s.finish.run({
        id,
        state: outcome.state,
        error: outcome.error ?? null,
        response: outcome.response ?? null,
        message_id: outcome.messageId ?? null,
        outbox_file: outcome.outboxFile ?? null,
        sent_at: outcome.state === 'failed' ? null : at,
        at,
      }).changes === 1
    );
  }

  scheduleRetry(id: number, outcome: { error: string; response: string | null; retryAt: Date }): boolean {
    return (
      this.s.scheduleRetry.run({
        id,
        error: outcome.error,
        response: outcome.response,
        retry_at: outcome.retryAt.toISOString(),
        at: nowIso(),
      }).changes === 1
    );
  }

  nextRetryAt(): string | null {
    return (this.s.nextRetry.get() as { at: string | null }).at;
  }

  requeueInterrupted(): number {
    return this.s.requeueInterrupted.run(nowIso()).changes;
  }

  requeue(id: number): void {
    this.s.requeueOne.run(nowIso(), id);
  }
}
