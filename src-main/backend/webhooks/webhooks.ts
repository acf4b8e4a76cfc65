import { randomBytes } from 'node:crypto';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError } from '../errors.ts';
import { redactValue } from '../audit/redact.ts';
import type {
  Webhook,
  WebhookCreate,
  WebhookCreated,
  WebhookDelivery,
  WebhookPatch,
} from '../../../src-shared/contract/index.ts';
import type { DeliveryRow, WebhookRepository, WebhookRow } from './repository.ts';
import type { WebhookWorker } from './worker.ts';

/** The JSON body of every delivery: what happened, when, and its data. */
export interface WebhookPayload {
  event: string;
  created_at: string;
  data: Record<string, unknown>;
}

/**
 * Webhooks: where alerts are POSTed (http or https URLs with a secret that signs each delivery),
 * their delivery logs and the test event. The secret is shown in full once, when the server draws
 * it; afterwards only its last four characters.
 */
export class WebhookService {
  private readonly repo: WebhookRepository;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly worker: WebhookWorker;
  private readonly now: () => number;

  constructor(deps: { repo: WebhookRepository; events: EventLog; work: UnitOfWork; worker: WebhookWorker; now?: () => number }) {
    this.repo = deps.repo;
    this.events = deps.events;
    this.work = deps.work;
    this.worker = deps.worker;
    this.now = deps.now ?? Date.now;
  }

  async list(): Promise<Webhook[]> {
    const rules = await this.repo.ruleIds();
    const last = await this.repo.lastDeliveries();
    return (await this.repo.list()).map((row) => this.view(row, rules.get(row.id) ?? [], last.get(row.id) ?? null));
  }

  async get(id: number): Promise<Webhook> {
    return this.view(
      await this.row(id),
      (await this.repo.ruleIds()).get(id) ?? [],
      (await this.repo.lastDeliveries()).get(id) ?? null,
    );
  }

  /** Whether each of these ids is a webhook (a rule's channels are checked with it). */
  async exists(id: number): Promise<boolean> {
    return (await this.repo.get(id)) !== undefined;
  }

  create(body: WebhookCreate): Promise<WebhookCreated> {
    const url = checkUrl(body.url);
    const drawn = body.secret === undefined ? randomBytes(24).toString('base64url') : null;
    const secret = body.secret ?? drawn!;
    const name = body.name?.trim() || new URL(url).host;
    return this.work.run(async () => {
      const at = this.iso();
      const id = await this.repo.insert({ name, url, secret, enabled: body.enabled ?? true, at });
      const created = await this.get(id);
      await this.events.record(
        'webhook.created',
        `Webhook "${name}" added (${String(redactValue(url))})`,
        {},
        {
          id,
          name,
          before: null,
          after: auditView(created, secret),
        },
      );
      return drawn === null ? created : { ...created, secret: drawn };
    });
  }

  update(id: number, patch: WebhookPatch): Promise<Webhook> {
    return this.work.run(async () => {
      const row = await this.row(id);
      const before = await this.get(id);
      const next = {
        name: patch.name?.trim() || row.name,
        url: patch.url === undefined ? row.url : checkUrl(patch.url),
        secret: patch.secret ?? row.secret,
        enabled: patch.enabled ?? row.enabled === 1,
        at: this.iso(),
      };
      await this.repo.update(id, next);
      const after = await this.get(id);
      await this.events.record(
        'webhook.updated',
        `Webhook "${next.name}" changed`,
        {},
        {
          id,
          name: next.name,
          before: auditView(before, row.secret),
          after: auditView(after, next.secret),
        },
      );
      if (after.enabled) await this.work.afterCommit(() => this.worker.kick());
      return after;
    });
  }

  delete(id: number): Promise<Webhook> {
    return this.work.run(async () => {
      const row = await this.row(id);
      const before = await this.get(id);
      await this.repo.delete(id);
      await this.events.record(
        'webhook.deleted',
        `Webhook "${row.name}" deleted`,
        {},
        {
          id,
          name: row.name,
          before: auditView(before, row.secret),
          after: null,
        },
      );
      return before;
    });
  }

  /** Queues a test event to one webhook (signed and retried like an alert); even a disabled one is tested. */
  test(id: number): Promise<WebhookDelivery> {
    return this.work.run(async () => {
      const row = await this.row(id);
      if (row.enabled !== 1)
        throw new ApiError(409, 'ERROR_WEBHOOK_DISABLED', `Webhook "${row.name}" is disabled: enable it to test it`);
      const deliveryId = await this.queueOne(id, 'webhook.test', {
        message: 'A test event from MDM Console: this webhook is set up.',
        webhook: { id, name: row.name },
      });
      const delivery = (await this.repo.delivery(deliveryId))!;
      await this.events.record('webhook.test', `Test event queued to webhook "${row.name}"`, {}, deliveryData(delivery));
      return this.deliveryView(delivery);
    });
  }

  /** Queues one delivery of `event` to each of these webhooks that is enabled, in the caller's transaction. */
  queue(webhookIds: number[], event: string, data: Record<string, unknown>): Promise<number[]> {
    return this.work.run(async () => {
      const queued: number[] = [];
      for (const id of webhookIds) {
        const row = await this.repo.get(id);
        if (row && row.enabled === 1) queued.push(await this.queueOne(id, event, data));
      }
      return queued;
    });
  }

  async deliveries(id: number, limit = 50): Promise<WebhookDelivery[]> {
    await this.row(id);
    return (await this.repo.deliveries(id, limit)).map((row) => this.deliveryView(row));
  }

  private async queueOne(webhookId: number, event: string, data: Record<string, unknown>): Promise<number> {
    const at = this.iso();
    const payload: WebhookPayload = { event, created_at: at, data };
    const id = await this.repo.queue(webhookId, event, JSON.stringify(payload), at);
    await this.work.afterCommit(() => this.worker.kick());
    return id;
  }

  private async row(id: number): Promise<WebhookRow> {
    const row = await this.repo.get(id);
    if (!row) throw new ApiError(404, 'ERROR_NOT_FOUND', `No webhook #${id}`);
    return row;
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }

  private view(row: WebhookRow, ruleIds: number[], last: DeliveryRow | null): Webhook {
    return {
      id: row.id,
      name: row.name,
      url: row.url,
      enabled: row.enabled === 1,
      secret_hint: `…${row.secret.slice(-4)}`,
      rule_ids: ruleIds,
      last_delivery: last ? this.deliveryView(last) : null,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  private deliveryView(row: DeliveryRow): WebhookDelivery {
    return {
      id: row.id,
      webhook_id: row.webhook_id,
      event: row.event,
      state: row.state,
      attempts: row.attempts,
      max_attempts: this.worker.timing.maxAttempts,
      next_attempt_at: row.next_attempt_at,
      response_code: row.response_code,
      response_ms: row.response_ms,
      error: row.error,
      created_at: row.created_at,
      updated_at: row.updated_at,
      delivered_at: row.delivered_at,
    };
  }
}

/**
 * What the audit trail keeps of a webhook: its fields, the secret among them (redacted by its name,
 * audit/redact.ts), and the hint the API shows (its last four characters), so a changed secret shows.
 */
function auditView(webhook: Webhook, secret: string): Record<string, unknown> {
  return { name: webhook.name, url: webhook.url, enabled: webhook.enabled, secret, secret_hint: webhook.secret_hint };
}

function deliveryData(row: DeliveryRow) {
  return {
    webhook_id: row.webhook_id,
    delivery_id: row.id,
    event: row.event,
    attempts: row.attempts,
    response_code: row.response_code,
    error: row.error,
  };
}

/** An http or https URL with a host, nothing else (no file:, ftp:, javascript: …); returned as the URL parser writes it. */
export function checkUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new ApiError(400, 'ERROR_BAD_REQUEST', `Not a URL: ${text} (a webhook URL starts with http:// or https://)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ApiError(400, 'ERROR_BAD_REQUEST', `A webhook URL must start with http:// or https://, not ${url.protocol}//`);
  }
  if (!url.hostname) throw new ApiError(400, 'ERROR_BAD_REQUEST', `A webhook URL needs a host: ${text}`);
  if (url.hash) throw new ApiError(400, 'ERROR_BAD_REQUEST', 'A webhook URL cannot have a #fragment (it is never sent)');
  return url.href;
}
