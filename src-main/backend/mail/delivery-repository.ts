import type { Sql } from '../db/sql.ts';
import { nowIso } from '../db/database.ts';
import type { InvitationDeliveries, InvitationDelivery } from '../invitations/ports.ts';
import { DELIVERY_STATES, type DeliveryCounts, type DeliveryState } from '../../../src-shared/contract/index.ts';

export { DELIVERY_STATES, type DeliveryCounts, type DeliveryState };

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
}

/** What invitation views carry as `delivery` (null: never emailed); declared by invitations/. */
export type DeliveryView = InvitationDelivery;

export type DeliveryOutcome = {
  state: 'sent' | 'failed' | 'outbox';
  error?: string | null;
  response?: string | null;
  messageId?: string | null;
  outboxFile?: string | null;
};

/** The mail_deliveries table: the persisted queue of the mail worker and each invitation's delivery state. */
export interface DeliveryRepository extends InvitationDeliveries {
  /** Queues these invitations' emails; one queued or being sent is left alone. Returns how many were queued. */
  queue(invitationIds: number[], batchId: string | null): Promise<number>;
  /** Takes the oldest due delivery and marks it sending (one attempt more). */
  claim(): Promise<DeliveryRow | undefined>;
  finish(invitationId: number, outcome: DeliveryOutcome): Promise<boolean>;
  scheduleRetry(invitationId: number, outcome: { error: string; response: string | null; retryAt: Date }): Promise<boolean>;
  nextRetryAt(): Promise<string | null>;
  waitingIds(batchId?: string): Promise<number[]>;
  failedIds(batchId?: string): Promise<number[]>;
  requeueInterrupted(): Promise<number>;
  requeue(invitationId: number): Promise<void>;
  counts(batchId?: string): Promise<DeliveryCounts>;
}

export class SqliteDeliveryRepository implements DeliveryRepository {
  private readonly sql: Sql;
  private readonly statements;

  constructor(sql: Sql) {
    this.sql = sql;
    this.statements = {
      ofInvitations: `SELECT * FROM mail_deliveries WHERE invitation_id IN (SELECT value FROM json_each(?))`,
      queue: `INSERT INTO mail_deliveries (invitation_id, state, batch_id, attempts, queued_at, updated_at)
         VALUES (@invitation_id, 'queued', @batch_id, 0, @at, @at)
         ON CONFLICT(invitation_id) DO UPDATE SET
           state = 'queued', batch_id = excluded.batch_id, error = NULL, retry_at = NULL, queued_at = excluded.queued_at, updated_at = excluded.updated_at
         WHERE mail_deliveries.state NOT IN ('queued', 'sending') OR mail_deliveries.retry_at IS NOT NULL`,
      claim: `UPDATE mail_deliveries SET state = 'sending', attempts = attempts + 1, retry_at = NULL, updated_at = @at
         WHERE invitation_id = (SELECT invitation_id FROM mail_deliveries WHERE state = 'queued' AND (retry_at IS NULL OR retry_at <= @at)
                                ORDER BY queued_at, invitation_id LIMIT 1)
         RETURNING *`,
      finish: `UPDATE mail_deliveries SET state = @state, error = @error, response = @response, message_id = coalesce(@message_id, message_id),
           outbox_file = @outbox_file, sent_at = coalesce(@sent_at, sent_at), updated_at = @at
         WHERE invitation_id = @invitation_id AND state = 'sending'`,
      // Back in the queue at its retry time, behind what was queued before: a server that keeps
      scheduleRetry:
        // failing some messages never starves the others.
        `UPDATE mail_deliveries SET state = 'queued', error = @error, response = @response, retry_at = @retry_at, queued_at = @retry_at, updated_at = @at
         WHERE invitation_id = @invitation_id AND state = 'sending'`,
      nextRetry: `SELECT min(retry_at) AS at FROM mail_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL`,
      waitingIds: `SELECT invitation_id FROM mail_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL ORDER BY invitation_id`,
      waitingIdsOfBatch: `SELECT invitation_id FROM mail_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL AND batch_id = ? ORDER BY invitation_id`,
      retrying: `SELECT count(*) AS n FROM mail_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL`,
      batchRetrying: `SELECT count(*) AS n FROM mail_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL AND batch_id = ?`,
      requeueInterrupted: `UPDATE mail_deliveries SET state = 'queued', updated_at = ? WHERE state = 'sending'`,
      requeueOne: `UPDATE mail_deliveries SET state = 'queued', updated_at = ? WHERE invitation_id = ? AND state = 'sending'`,
      failedIds: `SELECT invitation_id FROM mail_deliveries WHERE state = 'failed' ORDER BY invitation_id`,
      failedIdsOfBatch: `SELECT invitation_id FROM mail_deliveries WHERE state = 'failed' AND batch_id = ? ORDER BY invitation_id`,
      counts: `SELECT state, count(*) AS n FROM mail_deliveries GROUP BY state`,
      batchCounts: `SELECT state, count(*) AS n FROM mail_deliveries WHERE batch_id = ? GROUP BY state`,
    };
  }

  async deliveriesOf(invitationIds: number[]): Promise<Map<number, DeliveryView>> {
    const views = new Map<number, DeliveryView>();
    if (invitationIds.length === 0) return views;
    for (const { invitation_id: id, ...view } of (await this.sql.all(this.statements.ofInvitations, [
      JSON.stringify(invitationIds),
    ])) as DeliveryRow[])
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

  /** Takes the oldest queued delivery and marks it sending (one attempt more). */
  async claim(): Promise<DeliveryRow | undefined> {
    return (await this.sql.get(this.statements.claim, { at: nowIso() })) as DeliveryRow | undefined;
  }

  async finish(invitationId: number, outcome: DeliveryOutcome): Promise<boolean> {
    const at = nowIso();
    return (
      (
        await this.sql.run(this.statements.finish, {
          invitation_id: invitationId,
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

  /** A transient failure: back in the queue, not to be taken before `retryAt`; the error is kept to show. */
  async scheduleRetry(
    invitationId: number,
    outcome: { error: string; response: string | null; retryAt: Date },
  ): Promise<boolean> {
    return (
      (
        await this.sql.run(this.statements.scheduleRetry, {
          invitation_id: invitationId,
          error: outcome.error,
          response: outcome.response,
          retry_at: outcome.retryAt.toISOString(),
          at: nowIso(),
        })
      ).changes === 1
    );
  }

  /** The earliest scheduled retry, if any (the worker sets a timer for it). */
  async nextRetryAt(): Promise<string | null> {
    return ((await this.sql.get(this.statements.nextRetry)) as { at: string | null }).at;
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

  /** At start: deliveries left "sending" by a stop or a crash go back to the queue. */
  async requeueInterrupted(): Promise<number> {
    return (await this.sql.run(this.statements.requeueInterrupted, [nowIso()])).changes;
  }

  /** A delivery cut short by our own shutdown: queued again, sent after the restart. */
  async requeue(invitationId: number): Promise<void> {
    await this.sql.run(this.statements.requeueOne, [nowIso(), invitationId]);
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
