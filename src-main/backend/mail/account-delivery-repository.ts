import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import type { AccountInviteDelivery } from '../../../src-shared/contract/index.ts';
import type { DeliveryOutcome } from './delivery-repository.ts';

/** The email of an admin's invitation as queued: the same states as the devices' invitations. */
export interface AccountDeliveryRow {
  invite_id: number;
  /** The set-up link's secret, kept until the message is out (sent, in the outbox or failed for good). */
  token: string | null;
  state: AccountInviteDelivery['state'];
  attempts: number;
  error: string | null;
  response: string | null;
  message_id: string | null;
  outbox_file: string | null;
  queued_at: string;
  updated_at: string;
  sent_at: string | null;
  retry_at: string | null;
}

/**
 * The admin_invite_deliveries table: the mail worker's second queue (admins' invitations), drained
 * beside mail_deliveries with the same transports, retries and outbox.
 */
export interface AccountDeliveryRepository {
  queue(inviteId: number, token: string): void;
  claim(): AccountDeliveryRow | undefined;
  finish(inviteId: number, outcome: DeliveryOutcome): boolean;
  scheduleRetry(inviteId: number, outcome: { error: string; response: string | null; retryAt: Date }): boolean;
  nextRetryAt(): string | null;
  requeueInterrupted(): number;
  requeue(inviteId: number): void;
  deliveriesOf(inviteIds: number[]): Map<number, AccountInviteDelivery>;
}

export class SqliteAccountDeliveryRepository implements AccountDeliveryRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      queue: db.prepare(
        `INSERT INTO admin_invite_deliveries (invite_id, token, state, attempts, queued_at, updated_at)
         VALUES (?, ?, 'queued', 0, ?, ?)`,
      ),
      claim: db.prepare(
        `UPDATE admin_invite_deliveries SET state = 'sending', attempts = attempts + 1, retry_at = NULL, updated_at = @at
         WHERE invite_id = (SELECT invite_id FROM admin_invite_deliveries WHERE state = 'queued' AND (retry_at IS NULL OR retry_at <= @at)
                            ORDER BY queued_at, invite_id LIMIT 1)
         RETURNING *`,
      ),
      // The secret goes with the attempt that ends the delivery: nothing keeps it afterwards.
      finish: db.prepare(
        `UPDATE admin_invite_deliveries SET state = @state, token = NULL, error = @error, response = @response,
           message_id = coalesce(@message_id, message_id), outbox_file = @outbox_file, sent_at = coalesce(@sent_at, sent_at), updated_at = @at
         WHERE invite_id = @invite_id AND state = 'sending'`,
      ),
      scheduleRetry: db.prepare(
        `UPDATE admin_invite_deliveries SET state = 'queued', error = @error, response = @response, retry_at = @retry_at,
           queued_at = @retry_at, updated_at = @at
         WHERE invite_id = @invite_id AND state = 'sending'`,
      ),
      nextRetry: db.prepare(
        `SELECT min(retry_at) AS at FROM admin_invite_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL`,
      ),
      requeueInterrupted: db.prepare(
        `UPDATE admin_invite_deliveries SET state = 'queued', updated_at = ? WHERE state = 'sending'`,
      ),
      requeueOne: db.prepare(
        `UPDATE admin_invite_deliveries SET state = 'queued', updated_at = ? WHERE invite_id = ? AND state = 'sending'`,
      ),
      of: db.prepare(
        `SELECT invite_id, state, attempts, error, sent_at, retry_at FROM admin_invite_deliveries
         WHERE invite_id IN (SELECT value FROM json_each(?))`,
      ),
    };
  }

  queue(inviteId: number, token: string): void {
    const at = nowIso();
    this.s.queue.run(inviteId, token, at, at);
  }

  claim(): AccountDeliveryRow | undefined {
    return this.s.claim.get({ at: nowIso() }) as AccountDeliveryRow | undefined;
  }

  finish(inviteId: number, outcome: DeliveryOutcome): boolean {
    const at = nowIso();
    return (
      this.s.finish.run({
        invite_id: inviteId,
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

  scheduleRetry(inviteId: number, outcome: { error: string; response: string | null; retryAt: Date }): boolean {
    return (
      this.s.scheduleRetry.run({
        invite_id: inviteId,
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

  requeue(inviteId: number): void {
    this.s.requeueOne.run(nowIso(), inviteId);
  }

  deliveriesOf(inviteIds: number[]): Map<number, AccountInviteDelivery> {
    const found = new Map<number, AccountInviteDelivery>();
    if (inviteIds.length === 0) return found;
    for (const { invite_id: id, ...delivery } of this.s.of.all(JSON.stringify(inviteIds)) as (AccountInviteDelivery & {
      invite_id: number;
    })[])
      found.set(id, delivery);
    return found;
  }
}
