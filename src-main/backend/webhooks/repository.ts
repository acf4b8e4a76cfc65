import { dialect } from '../db/dialect.ts';
import type { Sql } from '../db/sql.ts';
import type { WebhookDeliveryState } from '../../../src-shared/contract/index.ts';

export interface WebhookRow {
  id: number;
  name: string;
  url: string;
  secret: string;
  enabled: number;
  created_at: string;
  updated_at: string;
}

export interface DeliveryRow {
  id: number;
  webhook_id: number;
  event: string;
  payload: string;
  state: WebhookDeliveryState;
  attempts: number;
  next_attempt_at: string | null;
  response_code: number | null;
  response_ms: number | null;
  error: string | null;
  created_at: string;
  updated_at: string;
  delivered_at: string | null;
  /** The node sending it ('sending') or that sent it last. */
  claimed_by: string | null;
  /** Until when the claim holds unless its node renews it; a 'sending' row past it is taken by another node. */
  claimed_until: string | null;
}

/** The node holding a claimed delivery and the attempt it counted (the fence of its writes). */
export interface WebhookClaim {
  node: string;
  attempts: number;
}

/** A claimed delivery with what sending it needs. */
export interface ClaimedDelivery extends DeliveryRow {
  url: string;
  secret: string;
}

/** How one attempt ended: delivered, to be retried at `nextAttemptAt`, or failed for good. */
export interface AttemptOutcome {
  state: 'delivered' | 'queued' | 'failed';
  responseCode: number | null;
  responseMs: number | null;
  error: string | null;
  nextAttemptAt: string | null;
}

/** How many finished deliveries each webhook's log keeps (the oldest go first). */
export const DELIVERY_LOG_LIMIT = 500;

/** The webhooks table and the webhook worker's queue (webhook_deliveries): one row per delivery, its last attempt. */
export interface WebhookRepository {
  list(): Promise<WebhookRow[]>;
  get(id: number): Promise<WebhookRow | undefined>;
  insert(fields: { name: string; url: string; secret: string; enabled: boolean; at: string }): Promise<number>;
  update(id: number, fields: { name: string; url: string; secret: string; enabled: boolean; at: string }): Promise<void>;
  delete(id: number): Promise<void>;
  /** Rules notifying each webhook. */
  ruleIds(): Promise<Map<number, number[]>>;
  queue(webhookId: number, event: string, payload: string, at: string): Promise<number>;
  /**
   * The oldest due delivery of an enabled webhook that has none in flight on any node (or one whose
   * node's claim expired), claimed for `node` until `ttlMs` from now (real time) and marked sending
   * (one attempt more). `at` is the clock of due times (a test's).
   */
  claim(at: string, node: string, ttlMs: number): Promise<ClaimedDelivery | undefined>;
  /** Keeps these deliveries' claims of `node` alive for `ttlMs` more; returns how many it still holds. */
  extend(node: string, ids: number[], ttlMs: number): Promise<number>;
  /** Writes how the claimed attempt ended; false when the claim was lost (another node took the delivery). */
  finish(id: number, claim: WebhookClaim, outcome: AttemptOutcome, at: string): Promise<boolean>;
  nextDueAt(): Promise<string | null>;
  /** A delivery cut off by our own stop: queued again, due at once, for any node. */
  requeue(id: number, claim: WebhookClaim, at: string): Promise<void>;
  /** At start: what this node's previous run left sending goes back to the queue (due at once). */
  requeueInterrupted(node: string, at: string): Promise<number>;
  delivery(id: number): Promise<DeliveryRow | undefined>;
  deliveries(webhookId: number, limit: number): Promise<DeliveryRow[]>;
  lastDeliveries(): Promise<Map<number, DeliveryRow>>;
}

export class SqliteWebhookRepository implements WebhookRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    const d = dialect(sql.engine);
    const held = `id = @id AND state = 'sending' AND claimed_by = @node AND attempts = @attempts`;
    // A delivery in flight on some node: its claim has not expired.
    const inFlight = `state = 'sending' AND claimed_until >= @now`;
    this.s = {
      list: `SELECT * FROM webhooks ORDER BY id`,
      get: `SELECT * FROM webhooks WHERE id = ?`,
      insert: `INSERT INTO webhooks (name, url, secret, enabled, created_at, updated_at)
         VALUES (@name, @url, @secret, @enabled, @at, @at) RETURNING id`,
      update: `UPDATE webhooks SET name = @name, url = @url, secret = @secret, enabled = @enabled, updated_at = @at WHERE id = @id`,
      delete: `DELETE FROM webhooks WHERE id = ?`,
      ruleIds: `SELECT webhook_id, rule_id FROM alert_rule_webhooks ORDER BY webhook_id, rule_id`,
      queue: `INSERT INTO webhook_deliveries (webhook_id, event, payload, state, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, 'queued', 0, ?, ?, ?) RETURNING id`,
      // The delivery and its webhook are locked, passing over those other nodes are claiming: a
      // webhook being claimed elsewhere is skipped whole, so each has at most one delivery in flight.
      // A delivery whose claim expired (its node died) goes first: it was its webhook's next.
      pick: `SELECT d.id, d.webhook_id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
         WHERE w.enabled = 1
           AND ((d.state = 'queued' AND d.next_attempt_at <= @at)
             OR (d.state = 'sending' AND (d.claimed_until IS NULL OR d.claimed_until < @now)))
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries s WHERE s.webhook_id = d.webhook_id AND s.id <> d.id AND s.${inFlight})
         ORDER BY coalesce(d.next_attempt_at, ''), d.id LIMIT 1${d.skipLocked('d, w')}`,
      // Read again once the webhook is locked (a statement of its own sees every claim committed before).
      busy: `SELECT count(*) FROM webhook_deliveries WHERE webhook_id = @webhook_id AND id <> @id AND ${inFlight}`,
      claim: `UPDATE webhook_deliveries SET state = 'sending', attempts = attempts + 1, next_attempt_at = NULL, claimed_by = @node,
           claimed_until = @until, updated_at = @at
         WHERE id = @id RETURNING *`,
      extend: `UPDATE webhook_deliveries SET claimed_until = @until
         WHERE state = 'sending' AND claimed_by = @node AND id IN ${d.jsonIds('@ids')}`,
      finish: `UPDATE webhook_deliveries SET state = @state, response_code = @response_code, response_ms = @response_ms, error = @error,
           next_attempt_at = @next_attempt_at, delivered_at = @delivered_at, claimed_until = NULL,
           claimed_by = CASE WHEN @state = 'queued' THEN NULL ELSE claimed_by END, updated_at = @at
         WHERE ${held}`,
      requeue: `UPDATE webhook_deliveries SET state = 'queued', next_attempt_at = @at, claimed_by = NULL, claimed_until = NULL, updated_at = @at
         WHERE ${held}`,
      prune: `DELETE FROM webhook_deliveries WHERE webhook_id = @webhook_id AND state IN ('delivered', 'failed') AND id < (
           SELECT id FROM webhook_deliveries WHERE webhook_id = @webhook_id ORDER BY id DESC LIMIT 1 OFFSET @keep)`,
      nextDue: `SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE state = 'queued'`,
      requeueInterrupted: `UPDATE webhook_deliveries SET state = 'queued', next_attempt_at = @at, claimed_by = NULL, claimed_until = NULL,
           updated_at = @at
         WHERE state = 'sending' AND claimed_by = @node`,
      delivery: `SELECT * FROM webhook_deliveries WHERE id = ?`,
      deliveries: `SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?`,
      last: `SELECT * FROM webhook_deliveries WHERE id IN (SELECT max(id) FROM webhook_deliveries GROUP BY webhook_id)`,
    };
  }

  async list(): Promise<WebhookRow[]> {
    return (await this.sql.all(this.s.list)) as WebhookRow[];
  }

  async get(id: number): Promise<WebhookRow | undefined> {
    return (await this.sql.get(this.s.get, [id])) as WebhookRow | undefined;
  }

  async insert(fields: { name: string; url: string; secret: string; enabled: boolean; at: string }): Promise<number> {
    return ((await this.sql.get(this.s.insert, { ...fields, enabled: fields.enabled ? 1 : 0 })) as { id: number }).id;
  }

  async update(id: number, fields: { name: string; url: string; secret: string; enabled: boolean; at: string }): Promise<void> {
    await this.sql.run(this.s.update, { id, ...fields, enabled: fields.enabled ? 1 : 0 });
  }

  async delete(id: number): Promise<void> {
    await this.sql.run(this.s.delete, [id]);
  }

  async ruleIds(): Promise<Map<number, number[]>> {
    const found = new Map<number, number[]>();
    for (const row of (await this.sql.all(this.s.ruleIds)) as { webhook_id: number; rule_id: number }[]) {
      found.set(row.webhook_id, [...(found.get(row.webhook_id) ?? []), row.rule_id]);
    }
    return found;
  }

  async queue(webhookId: number, event: string, payload: string, at: string): Promise<number> {
    return ((await this.sql.get(this.s.queue, [webhookId, event, payload, at, at, at])) as { id: number }).id;
  }

  async claim(at: string, node: string, ttlMs: number): Promise<ClaimedDelivery | undefined> {
    const now = Date.now();
    const times = { now: new Date(now).toISOString(), until: new Date(now + ttlMs).toISOString() };
    // One short transaction: pick and lock, check the webhook is free, stamp the claim.
    const row = await this.sql.transaction(async () => {
      const picked = (await this.sql.get(this.s.pick, { at, now: times.now })) as { id: number; webhook_id: number } | undefined;
      if (!picked) return undefined;
      if ((await this.sql.value<number>(this.s.busy, { ...picked, now: times.now })) !== 0) return undefined;
      return (await this.sql.get(this.s.claim, { id: picked.id, node, at, until: times.until })) as DeliveryRow | undefined;
    });
    if (!row) return undefined;
    const hook = await this.get(row.webhook_id);
    return hook ? { ...row, url: hook.url, secret: hook.secret } : undefined;
  }

  async extend(node: string, ids: number[], ttlMs: number): Promise<number> {
    if (ids.length === 0) return 0;
    const until = new Date(Date.now() + ttlMs).toISOString();
    return (await this.sql.run(this.s.extend, { node, until, ids: JSON.stringify(ids) })).changes;
  }

  async requeue(id: number, claim: WebhookClaim, at: string): Promise<void> {
    await this.sql.run(this.s.requeue, { id, ...claim, at });
  }

  async finish(id: number, claim: WebhookClaim, outcome: AttemptOutcome, at: string): Promise<boolean> {
    const changed =
      (
        await this.sql.run(this.s.finish, {
          id,
          ...claim,
          state: outcome.state,
          response_code: outcome.responseCode,
          response_ms: outcome.responseMs,
          error: outcome.error,
          next_attempt_at: outcome.nextAttemptAt,
          delivered_at: outcome.state === 'delivered' ? at : null,
          at,
        })
      ).changes === 1;
    if (changed && outcome.state !== 'queued') {
      const row = await this.delivery(id);
      if (row) await this.sql.run(this.s.prune, { webhook_id: row.webhook_id, keep: DELIVERY_LOG_LIMIT - 1 });
    }
    return changed;
  }

  async nextDueAt(): Promise<string | null> {
    return ((await this.sql.get(this.s.nextDue)) as { at: string | null }).at;
  }

  async requeueInterrupted(node: string, at: string): Promise<number> {
    return (await this.sql.run(this.s.requeueInterrupted, { node, at })).changes;
  }

  async delivery(id: number): Promise<DeliveryRow | undefined> {
    return (await this.sql.get(this.s.delivery, [id])) as DeliveryRow | undefined;
  }

  async deliveries(webhookId: number, limit: number): Promise<DeliveryRow[]> {
    return (await this.sql.all(this.s.deliveries, [webhookId, limit])) as DeliveryRow[];
  }

  async lastDeliveries(): Promise<Map<number, DeliveryRow>> {
    return new Map(((await this.sql.all(this.s.last)) as DeliveryRow[]).map((row) => [row.webhook_id, row]));
  }
}
