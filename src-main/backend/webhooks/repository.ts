import type { Db } from '../db/database.ts';
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
  list(): WebhookRow[];
  get(id: number): WebhookRow | undefined;
  insert(fields: { name: string; url: string; secret: string; enabled: boolean; at: string }): number;
  update(id: number, fields: { name: string; url: string; secret: string; enabled: boolean; at: string }): void;
  delete(id: number): void;
  /** Rules notifying each webhook. */
  ruleIds(): Map<number, number[]>;
  queue(webhookId: number, event: string, payload: string, at: string): number;
  /** The oldest due delivery of an enabled webhook that has none in flight, marked sending (one attempt more). */
  claim(at: string): ClaimedDelivery | undefined;
  finish(id: number, outcome: AttemptOutcome, at: string): boolean;
  nextDueAt(): string | null;
  /** Deliveries cut off by a stop, queued again (due at once). */
  requeueInterrupted(at: string): number;
  delivery(id: number): DeliveryRow | undefined;
  deliveries(webhookId: number, limit: number): DeliveryRow[];
  lastDeliveries(): Map<number, DeliveryRow>;
}

export class SqliteWebhookRepository implements WebhookRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      list: db.prepare(`SELECT * FROM webhooks ORDER BY id`),
      get: db.prepare(`SELECT * FROM webhooks WHERE id = ?`),
      insert: db.prepare(
        `INSERT INTO webhooks (name, url, secret, enabled, created_at, updated_at)
         VALUES (@name, @url, @secret, @enabled, @at, @at) RETURNING id`,
      ),
      update: db.prepare(
        `UPDATE webhooks SET name = @name, url = @url, secret = @secret, enabled = @enabled, updated_at = @at WHERE id = @id`,
      ),
      delete: db.prepare(`DELETE FROM webhooks WHERE id = ?`),
      ruleIds: db.prepare(`SELECT webhook_id, rule_id FROM alert_rule_webhooks ORDER BY webhook_id, rule_id`),
      queue: db.prepare(
        `INSERT INTO webhook_deliveries (webhook_id, event, payload, state, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, 'queued', 0, ?, ?, ?) RETURNING id`,
      ),
      claim: db.prepare(
        `UPDATE webhook_deliveries SET state = 'sending', attempts = attempts + 1, next_attempt_at = NULL, updated_at = @at
         WHERE id = (
           SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
           WHERE d.state = 'queued' AND d.next_attempt_at <= @at AND w.enabled = 1
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries s WHERE s.webhook_id = d.webhook_id AND s.state = 'sending')
           ORDER BY d.next_attempt_at, d.id LIMIT 1)
         RETURNING *`,
      ),
      finish: db.prepare(
        `UPDATE webhook_deliveries SET state = @state, response_code = @response_code, response_ms = @response_ms, error = @error,
           next_attempt_at = @next_attempt_at, delivered_at = @delivered_at, updated_at = @at
         WHERE id = @id AND state = 'sending'`,
      ),
      prune: db.prepare(
        `DELETE FROM webhook_deliveries WHERE webhook_id = @webhook_id AND state IN ('delivered', 'failed') AND id < (
           SELECT id FROM webhook_deliveries WHERE webhook_id = @webhook_id ORDER BY id DESC LIMIT 1 OFFSET @keep)`,
      ),
      nextDue: db.prepare(`SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE state = 'queued'`),
      requeueInterrupted: db.prepare(
        `UPDATE webhook_deliveries SET state = 'queued', next_attempt_at = ?, updated_at = ? WHERE state = 'sending'`,
      ),
      delivery: db.prepare(`SELECT * FROM webhook_deliveries WHERE id = ?`),
      deliveries: db.prepare(`SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?`),
      last: db.prepare(
        `SELECT * FROM webhook_deliveries WHERE id IN (SELECT max(id) FROM webhook_deliveries GROUP BY webhook_id)`,
      ),
    };
  }

  list(): WebhookRow[] {
    return this.s.list.all() as WebhookRow[];
  }

  get(id: number): WebhookRow | undefined {
    return this.s.get.get(id) as WebhookRow | undefined;
  }

  insert(fields: { name: string; url: string; secret: string; enabled: boolean; at: string }): number {
    return (this.s.insert.get({ ...fields, enabled: fields.enabled ? 1 : 0 }) as { id: number }).id;
  }

  update(id: number, fields: { name: string; url: string; secret: string; enabled: boolean; at: string }): void {
    this.s.update.run({ id, ...fields, enabled: fields.enabled ? 1 : 0 });
  }

  delete(id: number): void {
    this.s.delete.run(id);
  }

  ruleIds(): Map<number, number[]> {
    const found = new Map<number, number[]>();
    for (const row of this.s.ruleIds.all() as { webhook_id: number; rule_id: number }[]) {
      found.set(row.webhook_id, [...(found.get(row.webhook_id) ?? []), row.rule_id]);
    }
    return found;
  }

  queue(webhookId: number, event: string, payload: string, at: string): number {
    return (this.s.queue.get(webhookId, event, payload, at, at, at) as { id: number }).id;
  }

  claim(at: string): ClaimedDelivery | undefined {
    const row = this.s.claim.get({ at }) as DeliveryRow | undefined;
    if (!row) return undefined;
    const hook = this.get(row.webhook_id);
    return hook ? { ...row, url: hook.url, secret: hook.secret } : undefined;
  }

  finish(id: number, outcome: AttemptOutcome, at: string): boolean {
    const changed =
      this.s.finish.run({
        id,
        state: outcome.state,
        response_code: outcome.responseCode,
        response_ms: outcome.responseMs,
        error: outcome.error,
        next_attempt_at: outcome.nextAttemptAt,
        delivered_at: outcome.state === 'delivered' ? at : null,
        at,
      }).changes === 1;
    if (changed && outcome.state !== 'queued') {
      const row = this.delivery(id);
      if (row) this.s.prune.run({ webhook_id: row.webhook_id, keep: DELIVERY_LOG_LIMIT - 1 });
    }
    return changed;
  }

  nextDueAt(): string | null {
    return (this.s.nextDue.get() as { at: string | null }).at;
  }

  requeueInterrupted(at: string): number {
    return this.s.requeueInterrupted.run(at, at).changes;
  }

  delivery(id: number): DeliveryRow | undefined {
    return this.s.delivery.get(id) as DeliveryRow | undefined;
  }

  deliveries(webhookId: number, limit: number): DeliveryRow[] {
    return this.s.deliveries.all(webhookId, limit) as DeliveryRow[];
  }

  lastDeliveries(): Map<number, DeliveryRow> {
    return new Map((this.s.last.all() as DeliveryRow[]).map((row) => [row.webhook_id, row]));
  }
}
