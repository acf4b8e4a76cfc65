import type { Sql } from '../db/sql.ts';
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
  queue(inviteId: number, token: string): Promise<void>;
  claim(): Promise<AccountDeliveryRow | undefined>;
  finish(inviteId: number, outcome: DeliveryOutcome): Promise<boolean>;
  scheduleRetry(inviteId: number, outcome: { error: string; response: string | null; retryAt: Date }): Promise<boolean>;
  nextRetryAt(): Promise<string | null>;
  requeueInterrupted(): Promise<number>;
  requeue(inviteId: number): Promise<void>;
  deliveriesOf(inviteIds: number[]): Promise<Map<number, AccountInviteDelivery>>;
}

export class SqliteAccountDeliveryRepository implements AccountDeliveryRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      queue: `INSERT INTO admin_invite_deliveries (invite_id, token, state, attempts, queued_at, updated_at)
         VALUES (?, ?, 'queued', 0, ?, ?)`,
      claim: `UPDATE admin_invite_deliveries SET state = 'sending', attempts = attempts + 1, retry_at = NULL, updated_at = @at
         WHERE invite_id = (SELECT invite_id FROM admin_invite_deliveries WHERE state = 'queued' AND (retry_at IS NULL OR retry_at <= @at)
                            ORDER BY queued_at, invite_id LIMIT 1)
         RETURNING *`,
      // The secret goes with the attempt that ends the delivery: nothing keeps it afterwards.
      finish: `UPDATE admin_invite_deliveries SET state = @state, token = NULL, error = @error, response = @response,
           message_id = coalesce(@message_id, message_id), outbox_file = @outbox_file, sent_at = coalesce(@sent_at, sent_at), updated_at = @at
         WHERE invite_id = @invite_id AND state = 'sending'`,
      scheduleRetry: `UPDATE admin_invite_deliveries SET state = 'queued', error = @error, response = @response, retry_at = @retry_at,
           queued_at = @retry_at, updated_at = @at
         WHERE invite_id = @invite_id AND state = 'sending'`,
      nextRetry: `SELECT min(retry_at) AS at FROM admin_invite_deliveries WHERE state = 'queued' AND retry_at IS NOT NULL`,
      requeueInterrupted: `UPDATE admin_invite_deliveries SET state = 'queued', updated_at = ? WHERE state = 'sending'`,
      requeueOne: `UPDATE admin_invite_deliveries SET state = 'queued', updated_at = ? WHERE invite_id = ? AND state = 'sending'`,
      of: `SELECT invite_id, state, attempts, error, sent_at, retry_at FROM admin_invite_deliveries
         WHERE invite_id IN (SELECT value FROM json_each(?))`,
    };
  }

  async queue(inviteId: number, token: string): Promise<void> {
    const at = nowIso();
    await this.sql.run(this.s.queue, [inviteId, token, at, at]);
  }

  async claim(): Promise<AccountDeliveryRow | undefined> {
    return (await this.sql.get(this.s.claim, { at: nowIso() })) as AccountDeliveryRow | undefined;
  }

  async finish(inviteId: number, outcome: DeliveryOutcome): Promise<boolean> {
    const at = nowIso();
    return (
      (
        await this.sql.run(this.s.finish, {
          invite_id: inviteId,
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

  async scheduleRetry(inviteId: number, outcome: { error: string; response: string | null; retryAt: Date }): Promise<boolean> {
    return (
      (
        await this.sql.run(this.s.scheduleRetry, {
          invite_id: inviteId,
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

  async requeue(inviteId: number): Promise<void> {
    await this.sql.run(this.s.requeueOne, [nowIso(), inviteId]);
  }

  async deliveriesOf(inviteIds: number[]): Promise<Map<number, AccountInviteDelivery>> {
    const found = new Map<number, AccountInviteDelivery>();
    if (inviteIds.length === 0) return found;
    for (const { invite_id: id, ...delivery } of (await this.sql.all(this.s.of, [
      JSON.stringify(inviteIds),
    ])) as (AccountInviteDelivery & {
      invite_id: number;
    })[])
      found.set(id, delivery);
    return found;
  }
}
