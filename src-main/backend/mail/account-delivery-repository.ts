import type { Sql } from '../db/sql.ts';
import { dialect } from '../db/dialect.ts';
import { nowIso } from '../db/database.ts';
import type { AccountInviteDelivery } from '../../../src-shared/contract/index.ts';
import { MailQueueRepository, type ClaimedQueue } from './queue-repository.ts';

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
  claimed_by: string | null;
  claimed_until: string | null;
}

/**
 * The admin_invite_deliveries table: the mail worker's second queue (admins' invitations), drained
 * beside mail_deliveries with the same transports, retries and outbox.
 */
export interface AccountDeliveryRepository extends ClaimedQueue<AccountDeliveryRow> {
  queue(inviteId: number, token: string): Promise<void>;
  deliveriesOf(inviteIds: number[]): Promise<Map<number, AccountInviteDelivery>>;
}

export class SqliteAccountDeliveryRepository
  extends MailQueueRepository<AccountDeliveryRow>
  implements AccountDeliveryRepository
{
  private readonly s;

  constructor(sql: Sql) {
    // The secret goes with the attempt that ends the delivery: nothing keeps it afterwards.
    super(sql, 'admin_invite_deliveries', 'invite_id', ' token = NULL,');
    const d = dialect(sql.engine);
    this.s = {
      queue: `INSERT INTO admin_invite_deliveries (invite_id, token, state, attempts, queued_at, updated_at)
         VALUES (?, ?, 'queued', 0, ?, ?)`,
      of: `SELECT invite_id, state, attempts, error, sent_at, retry_at FROM admin_invite_deliveries
         WHERE invite_id IN ${d.jsonIds('?')}`,
    };
  }

  async queue(inviteId: number, token: string): Promise<void> {
    const at = nowIso();
    await this.sql.run(this.s.queue, [inviteId, token, at, at]);
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
