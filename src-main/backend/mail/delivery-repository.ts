import type { Sql } from '../db/sql.ts';
import { dialect } from '../db/dialect.ts';
import { nowIso } from '../db/database.ts';
import type { InvitationDeliveries, InvitationDelivery } from '../invitations/ports.ts';
import { DELIVERY_STATES, type DeliveryCounts, type DeliveryState } from '../../../src-shared/contract/index.ts';
import { MailQueueRepository, type ClaimedQueue, type DeliveryOutcome } from './queue-repository.ts';

export { DELIVERY_STATES, type DeliveryCounts, type DeliveryOutcome, type DeliveryState };

export interface DeliveryRow {
  invitation_id: number;
  state: DeliveryState;
  batch_id: string | null;
  attempts: number;
  error: string | null;
  response: string | null;
  message_id: string | null;
  outbox_file: string | null;
  queued_at: string;
  updated_at: string;
  sent_at: string | null;
  /** Set while a delivery that failed for a transient reason waits for its next attempt (still 'queued'). */
  retry_at: string | null;
  /** The node sending it ('sending') or that sent it last. */
  claimed_by: string | null;
  claimed_until: string | null;
}

/** What invitation views carry as `delivery` (null: never emailed); declared by invitations/. */
export type DeliveryView = InvitationDelivery;

/** The mail_deliveries table: the persisted queue of the mail worker and each invitation's delivery state. */
export interface DeliveryRepository extends InvitationDeliveries, ClaimedQueue<DeliveryRow> {
  /** Queues these invitations' emails; one queued or being sent is left alone. Returns how many were queued. */
  queue(invitationIds: number[], batchId: string | null): Promise<number>;
  waitingIds(batchId?: string): Promise<number[]>;
  failedIds(batchId?: string): Promise<number[]>;
  counts(batchId?: string): Promise<DeliveryCounts>;
}

export class SqliteDeliveryRepository extends MailQueueRepository<DeliveryRow> implements DeliveryRepository {
  private readonly statements;

  constructor(sql: Sql) {
    super(sql, 'mail_deliveries', 'invitation_id');
    const d = dialect(sql.engine);
    this.statements = {
      ofInvitations: `SELECT * FROM mail_deliveries WHERE invitation_id IN ${d.jsonIds('?')}`,
      queue: `INSERT INTO mail_deliveries (invitation_id, state, batch_id, attempts, queued_at, updated_at)
         VALUES (@invitation_id, 'queued', @batch_id, 0, @at, @at)
         ON CONFLICT(invitation_id) DO UPDATE SET
           state = 'queued', batch_id = excluded.batch_id, error = NULL, retry_at = NULL, claimed_by = NULL, claimed_until = NULL,
           queued_at = excluded.queued_at, updated_at = excluded.updated_at
         WHERE mail_deliveries.state NOT IN ('queued', 'sending') OR mail_deliveries.retry_at IS NOT NULL`,
      waitingIds: `SELECT invitation_id FROM mail_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL ORDER BY invitation_id`,
      waitingIdsOfBatch: `SELECT invitation_id FROM mail_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL AND batch_id = ? ORDER BY invitation_id`,
      retrying: `SELECT count(*) AS n FROM mail_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL`,
      batchRetrying: `SELECT count(*) AS n FROM mail_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL AND batch_id = ?`,
      failedIds: `SELECT invitation_id FROM mail_deliveries WHERE state = 'failed' ORDER BY invitation_id`,
      failedIdsOfBatch: `SELECT invitation_id FROM mail_deliveries WHERE state = 'failed' AND batch_id = ? ORDER BY invitation_id`,
      counts: `SELECT state, count(*) AS n FROM mail_deliveries GROUP BY state`,
      batchCounts: `SELECT state, count(*) AS n FROM mail_deliveries WHERE batch_id = ? GROUP BY state`,
    };
  }

  async deliveriesOf(invitationIds: number[]): Promise<Map<number, DeliveryView>> {
    const views = new Map<number, DeliveryView>();
    if (invitationIds.length === 0) return views;
    // Which node holds or sent it is the queue's business, not the invitation's.
    for (const { invitation_id: id, claimed_by: _node, claimed_until: _until, ...view } of (await this.sql.all(
      this.statements.ofInvitations,
      [JSON.stringify(invitationIds)],
    )) as DeliveryRow[])
      views.set(id, view);
    return views;
  }

  /**
   * Puts invitations in the queue (a new delivery, a resend, a retry). One already queued or
   * being sent is left alone, so a double click never sends twice. Returns how many were queued.
   * Call inside a unit of work: many rows are one transaction.
   */
  async queue(invitationIds: number[], batchId: string | null): Promise<number> {
    const at = nowIso();
    let queued = 0;
    for (const id of invitationIds)
      queued += (await this.sql.run(this.statements.queue, { invitation_id: id, batch_id: batchId, at })).changes;
    return queued;
  }

  /** Deliveries waiting for a retry (of one batch): `mail retry` sends them now. */
  async waitingIds(batchId?: string): Promise<number[]> {
    const rows = (
      batchId ? await this.sql.all(this.statements.waitingIdsOfBatch, [batchId]) : await this.sql.all(this.statements.waitingIds)
    ) as {
      invitation_id: number;
    }[];
    return rows.map((r) => r.invitation_id);
  }

  async failedIds(batchId?: string): Promise<number[]> {
    const rows = (
      batchId ? await this.sql.all(this.statements.failedIdsOfBatch, [batchId]) : await this.sql.all(this.statements.failedIds)
    ) as {
      invitation_id: number;
    }[];
    return rows.map((r) => r.invitation_id);
  }

  async counts(batchId?: string): Promise<DeliveryCounts> {
    const counts: DeliveryCounts = { queued: 0, sending: 0, sent: 0, failed: 0, outbox: 0, total: 0, retrying: 0 };
    const rows = (
      batchId ? await this.sql.all(this.statements.batchCounts, [batchId]) : await this.sql.all(this.statements.counts)
    ) as {
      state: DeliveryState;
      n: number;
    }[];
    for (const { state, n } of rows) {
      counts[state] = n;
      counts.total += n;
    }
    counts.retrying = (
      (batchId ? await this.sql.get(this.statements.batchRetrying, [batchId]) : await this.sql.get(this.statements.retrying)) as {
        n: number;
      }
    ).n;
    return counts;
  }
}
