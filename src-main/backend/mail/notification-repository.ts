import type { Sql } from '../db/sql.ts';
import { nowIso } from '../db/database.ts';
import { MailQueueRepository, type ClaimedQueue } from './queue-repository.ts';

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
  claimed_by: string | null;
  claimed_until: string | null;
}

/**
 * The notification_mails table: the mail worker's third queue (alert emails), drained beside the
 * invitations' with the same transports, retries and outbox.
 */
export interface NotificationRepository extends ClaimedQueue<NotificationRow> {
  queue(recipients: string[], subject: string, body: string): Promise<number>;
}

export class SqliteNotificationRepository extends MailQueueRepository<NotificationRow> implements NotificationRepository {
  private readonly s;

  constructor(sql: Sql) {
    super(sql, 'notification_mails', 'id');
    this.s = {
      queue: `INSERT INTO notification_mails (recipients, subject, body, state, attempts, queued_at, updated_at)
         VALUES (?, ?, ?, 'queued', 0, ?, ?) RETURNING id`,
    };
  }

  async queue(recipients: string[], subject: string, body: string): Promise<number> {
    const at = nowIso();
    return ((await this.sql.get(this.s.queue, [JSON.stringify(recipients), subject, body, at, at])) as { id: number }).id;
  }
}
