import type { Sql } from '../db/sql.ts';
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
  queue(recipients: string[], subject: string, body: string): Promise<number>;
  claim(): Promise<NotificationRow | undefined>;
  finish(id: number, outcome: DeliveryOutcome): Promise<boolean>;
  scheduleRetry(id: number, outcome: { error: string; response: string | null; retryAt: Date }): Promise<boolean>;
  nextRetryAt(): Promise<string | null>;
  requeueInterrupted(): Promise<number>;
  requeue(id: number): Promise<void>;
}

export class SqliteNotificationRepository implements NotificationRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      queue: `INSERT INTO notification_mails (recipients, subject, body, state, attempts, queued_at, updated_at)
         VALUES (?, ?, ?, 'queued', 0, ?, ?) RETURNING id`,
      claim: `UPDATE notification_mails SET state = 'sending', attempts = attempts + 1, retry_at = NULL, updated_at = @at
         WHERE id = (SELECT id FROM notification_mails WHERE state = 'queued' AND (retry_at IS NULL OR retry_at <= @at)
                     ORDER BY queued_at, id LIMIT 1)
         RETURNING id, recipients, subject, body, state, attempts, error, retry_at, queued_at`,
      finish: `UPDATE notification_mails SET state = @state, error = @error, response = @response,
           message_id = coalesce(@message_id, message_id), outbox_file = @outbox_file, sent_at = coalesce(@sent_at, sent_at), updated_at = @at
         WHERE id = @id AND state = 'sending'`,
      scheduleRetry: `UPDATE notification_mails SET state = 'queued', error = @error, response = @response, retry_at = @retry_at,
           queued_at = @retry_at, updated_at = @at
         WHERE id = @id AND state = 'sending'`,
      nextRetry: `SELECT min(retry_at) AS at FROM notification_mails WHERE state = 'queued' AND retry_at IS NOT NULL`,
      requeueInterrupted: `UPDATE notification_mails SET state = 'queued', updated_at = ? WHERE state = 'sending'`,
      requeueOne: `UPDATE notification_mails SET state = 'queued', updated_at = ? WHERE id = ? AND state = 'sending'`,
    };
  }

  async queue(recipients: string[], subject: string, body: string): Promise<number> {
    const at = nowIso();
    return ((await this.sql.get(this.s.queue, [JSON.stringify(recipients), subject, body, at, at])) as { id: number }).id;
  }

  async claim(): Promise<NotificationRow | undefined> {
    return (await this.sql.get(this.s.claim, { at: nowIso() })) as NotificationRow | undefined;
  }

  async finish(id: number, outcome: DeliveryOutcome): Promise<boolean> {
    const at = nowIso();
    return (
      (
        await this.sql.run(this.s.finish, {
          id,
          state: outcome.state,
          error: outcome.error ?? null,
          response: outcome.response ?? null,
          message_id: outcome.messageId ?? null,
          outbox_file: outcome.outboxFile ?? null,
          sent_at: outcome.state === 'failed' ? null : at,
          at,
        })
      ).changes === 1
    );
  }

  async scheduleRetry(id: number, outcome: { error: string; response: string | null; retryAt: Date }): Promise<boolean> {
    return (
      (
        await this.sql.run(this.s.scheduleRetry, {
          id,
          error: outcome.error,
          response: outcome.response,
          retry_at: outcome.retryAt.toISOString(),
          at: nowIso(),
        })
      ).changes === 1
    );
  }

  async nextRetryAt(): Promise<string | null> {
    return ((await this.sql.get(this.s.nextRetry)) as { at: string | null }).at;
  }

  async requeueInterrupted(): Promise<number> {
    return (await this.sql.run(this.s.requeueInterrupted, [nowIso()])).changes;
  }

  async requeue(id: number): Promise<void> {
    await this.sql.run(this.s.requeueOne, [nowIso(), id]);
  }
}
