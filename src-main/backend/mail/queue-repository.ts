import type { Sql } from '../db/sql.ts';
import { dialect } from '../db/dialect.ts';
import { nowIso } from '../db/database.ts';

/** How one delivery ended (sent, in the outbox, failed for good). */
export type DeliveryOutcome = {
  state: 'sent' | 'failed' | 'outbox';
  error?: string | null;
  response?: string | null;
  messageId?: string | null;
  outboxFile?: string | null;
};

/**
 * A claim on a queued row: the node that holds it, and the attempt it counted. The attempt is the
 * fence: a row another node has taken over since (after this claim expired) has counted one more,
 * so the old holder's outcome is not written over the new holder's.
 */
export interface Claim {
  node: string;
  attempts: number;
}

/** The columns every mail queue has (mail_deliveries, admin_invite_deliveries, notification_mails). */
export interface QueuedMailRow {
  state: 'queued' | 'sending' | 'sent' | 'failed' | 'outbox';
  attempts: number;
  retry_at: string | null;
  /** The node that holds the row ('sending') or that sent it last. */
  claimed_by: string | null;
  /** Until when the claim holds unless its node renews it; a 'sending' row past it is taken by another node. */
  claimed_until: string | null;
}

/** One of the mail worker's queues, as far as claiming goes: any node may drain it. */
export interface ClaimedQueue<Row extends QueuedMailRow> {
  /** The row's key (invitation, admin invitation or notification id). */
  keyOf(row: Row): number;
  /**
   * Claims the oldest due row for `node` until `ttlMs` from now (state 'sending', one attempt
   * more): a queued row whose time has come, or one whose claim has expired (its node died). Rows
   * another node is claiming at the same moment are passed over, so no two nodes get the same row.
   */
  claim(node: string, ttlMs: number): Promise<Row | undefined>;
  /** Keeps these rows' claims of `node` alive for `ttlMs` more (a send still in progress); returns how many it still holds. */
  extend(node: string, keys: number[], ttlMs: number): Promise<number>;
  /** Writes how the claimed attempt ended; false when the claim was lost (the row is another node's now). */
  finish(key: number, claim: Claim, outcome: DeliveryOutcome): Promise<boolean>;
  /** A transient failure: back in the queue, not to be taken before `retryAt`; written by the claim's holder only. */
  scheduleRetry(key: number, claim: Claim, outcome: { error: string; response: string | null; retryAt: Date }): Promise<boolean>;
  /** A send cut off by our own shutdown: queued again at once, for any node. */
  requeue(key: number, claim: Claim): Promise<void>;
  /** At start: what this node's previous run left 'sending' (it was stopped or killed) goes back to the queue. */
  requeueInterrupted(node: string): Promise<number>;
  /** The earliest scheduled retry, if any (the worker sets a timer for it). */
  nextRetryAt(): Promise<string | null>;
}

/**
 * The claim logic of the three mail queues, written once over the table's name and key: each queue
 * repository extends it with what is its own (how rows are queued and shown). A claim is one
 * statement, so one short transaction: the sub-select takes the oldest due row, locked and skipping
 * rows other nodes are claiming (PostgreSQL), and the update stamps it with the node and the end of
 * the claim.
 */
export class MailQueueRepository<Row extends QueuedMailRow> implements ClaimedQueue<Row> {
  protected readonly sql: Sql;
  private readonly key: string;
  private readonly claims;

  /** `finishSet`: more columns the end of a delivery clears (an admin invitation's link secret). */
  constructor(sql: Sql, table: string, key: string, finishSet = '') {
    this.sql = sql;
    this.key = key;
    const d = dialect(sql.engine);
    const held = `${key} = @key AND state = 'sending' AND claimed_by = @node AND attempts = @attempts`;
    this.claims = {
      claim: `UPDATE ${table} SET state = 'sending', attempts = attempts + 1, retry_at = NULL, claimed_by = @node,
           claimed_until = @until, updated_at = @at
         WHERE ${key} = (
           SELECT ${key} FROM ${table}
           WHERE (state = 'queued' AND (retry_at IS NULL OR retry_at <= @at))
              OR (state = 'sending' AND (claimed_until IS NULL OR claimed_until < @at))
           ORDER BY queued_at, ${key} LIMIT 1${d.skipLocked()})
         RETURNING *`,
      extend: `UPDATE ${table} SET claimed_until = @until
         WHERE state = 'sending' AND claimed_by = @node AND ${key} IN ${d.jsonIds('@keys')}`,
      finish: `UPDATE ${table} SET state = @state,${finishSet} error = @error, response = @response,
           message_id = coalesce(@message_id, message_id), outbox_file = @outbox_file, sent_at = coalesce(@sent_at, sent_at),
           claimed_until = NULL, updated_at = @at
         WHERE ${held}`,
      // Back in the queue at its retry time, behind what was queued before: a server that keeps
      // failing some messages never starves the others.
      scheduleRetry: `UPDATE ${table} SET state = 'queued', error = @error, response = @response, retry_at = @retry_at,
           queued_at = @retry_at, claimed_by = NULL, claimed_until = NULL, updated_at = @at
         WHERE ${held}`,
      requeue: `UPDATE ${table} SET state = 'queued', claimed_by = NULL, claimed_until = NULL, updated_at = @at WHERE ${held}`,
      requeueInterrupted: `UPDATE ${table} SET state = 'queued', claimed_by = NULL, claimed_until = NULL, updated_at = @at
         WHERE state = 'sending' AND claimed_by = @node`,
      nextRetry: `SELECT min(retry_at) AS at FROM ${table} WHERE state = 'queued' AND retry_at IS NOT NULL`,
    };
  }

  keyOf(row: Row): number {
    return (row as unknown as Record<string, number>)[this.key]!;
  }

  async claim(node: string, ttlMs: number): Promise<Row | undefined> {
    const now = Date.now();
    return (await this.sql.get(this.claims.claim, {
      node,
      at: new Date(now).toISOString(),
      until: new Date(now + ttlMs).toISOString(),
    })) as Row | undefined;
  }

  async extend(node: string, keys: number[], ttlMs: number): Promise<number> {
    if (keys.length === 0) return 0;
    const until = new Date(Date.now() + ttlMs).toISOString();
    return (await this.sql.run(this.claims.extend, { node, until, keys: JSON.stringify(keys) })).changes;
  }

  async finish(key: number, claim: Claim, outcome: DeliveryOutcome): Promise<boolean> {
    const at = nowIso();
    const { changes } = await this.sql.run(this.claims.finish, {
      key,
      ...claim,
      state: outcome.state,
      error: outcome.error ?? null,
      response: outcome.response ?? null,
      message_id: outcome.messageId ?? null,
      outbox_file: outcome.outboxFile ?? null,
      sent_at: outcome.state === 'failed' ? null : at,
      at,
    });
    return changes === 1;
  }

  async scheduleRetry(
    key: number,
    claim: Claim,
    outcome: { error: string; response: string | null; retryAt: Date },
  ): Promise<boolean> {
    const { changes } = await this.sql.run(this.claims.scheduleRetry, {
      key,
      ...claim,
      error: outcome.error,
      response: outcome.response,
      retry_at: outcome.retryAt.toISOString(),
      at: nowIso(),
    });
    return changes === 1;
  }

  async requeue(key: number, claim: Claim): Promise<void> {
    await this.sql.run(this.claims.requeue, { key, ...claim, at: nowIso() });
  }

  async requeueInterrupted(node: string): Promise<number> {
    return (await this.sql.run(this.claims.requeueInterrupted, { node, at: nowIso() })).changes;
  }

  async nextRetryAt(): Promise<string | null> {
    return ((await this.sql.get(this.claims.nextRetry)) as { at: string | null }).at;
  }
}
