import type { Sql } from '../db/sql.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventFeed } from '../cluster/feed.ts';
import type { EventLog } from '../events/event-log.ts';
import type { MailQueue } from '../mail/index.ts';
import { SqliteWebhookRepository } from '../webhooks/repository.ts';
import { WebhookService } from '../webhooks/webhooks.ts';
import { WebhookWorker, type WebhookTiming } from '../webhooks/worker.ts';
import { AlertService } from './alerts.ts';
import { SqliteConditionRepository } from './condition-repository.ts';
import { AlertEngine, type AlertProbes } from './engine.ts';
import { tcpProblem } from './probe.ts';
import { SqliteAlertRepository } from './repository.ts';

export { AlertEngine, AlertService, WebhookService, WebhookWorker };
export { DEFAULT_WEBHOOK_TIMING, backoffMs, type WebhookTiming } from '../webhooks/worker.ts';
export { signDelivery, verifyDelivery } from '../webhooks/signature.ts';

export interface AlertOptions {
  /** The alert clock: rules' time conditions and the webhooks' back-off (tests drive it). */
  now?: () => number;
  /** How often every rule is evaluated; default 60 s. */
  intervalMs?: number;
  /** Webhook retries and time-out (tests shorten them). */
  webhooks?: Partial<WebhookTiming>;
}

/** The alerts room, wired: rules and incidents, the engine, webhooks and their worker. */
export interface Alerts {
  rules: AlertService;
  engine: AlertEngine;
  webhooks: WebhookService;
  worker: WebhookWorker;
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createAlerts(
  deps: {
    db: Sql;
    /** Whether the database is still open (the webhook worker stops once it closes). */
    isOpen: () => boolean;
    events: EventLog;
    /** Every node's events (cluster/feed.ts): another node's may call for an evaluation too; default the local ones. */
    feed?: EventFeed;
    work: UnitOfWork;
    mail: Pick<MailQueue, 'queueNotification'>;
    /** Throws a 404 for a fleet that does not exist (or is out of the caller's scope). */
    fleetName: (id: number) => Promise<string>;
    /** Null while the broker is fine, else what is wrong. */
    brokerProblem: () => string | null;
    /** Where SMTP mail goes (null: no SMTP, the outbox). */
    smtpEndpoint: () => { host: string; port: number } | null;
    consoleUrl: () => string;
    /** This node's name: the webhook worker's claims carry it. */
    nodeName: string;
  },
  options: AlertOptions = {},
): Alerts {
  const { db, events, work } = deps;
  const now = options.now ?? Date.now;
  const worker = new WebhookWorker({
    repo: new SqliteWebhookRepository(db),
    events,
    timing: options.webhooks,
    now,
    isOpen: deps.isOpen,
    node: deps.nodeName,
  });
  const webhooks = new WebhookService({ repo: new SqliteWebhookRepository(db), events, work, worker, now });
  const probes: AlertProbes = {
    broker: deps.brokerProblem,
    smtp: async () => {
      const endpoint = deps.smtpEndpoint();
      return endpoint === null ? null : await tcpProblem(endpoint.host, endpoint.port);
    },
  };
  const engine = new AlertEngine(
    {
      repo: new SqliteAlertRepository(db),
      conditions: new SqliteConditionRepository(db),
      events,
      feed: deps.feed,
      work,
      channels: {
        queueEmail: async (to, subject, body) => {
          await deps.mail.queueNotification(to, subject, body);
        },
        queueWebhooks: async (ids, event, data) => {
          await webhooks.queue(ids, event, data);
        },
      },
      probes,
      consoleUrl: deps.consoleUrl,
    },
    { now, intervalMs: options.intervalMs },
  );
  const rules = new AlertService({
    repo: new SqliteAlertRepository(db),
    events,
    work,
    engine,
    targets: { fleetName: deps.fleetName, webhookExists: (id) => webhooks.exists(id) },
  });
  return {
    rules,
    engine,
    webhooks,
    worker,
    // The engine's evaluations are a duty (server.ts): started on the node that holds it.
    start: async () => {
      await worker.start();
    },
    close: async () => {
      await engine.close();
      await worker.close();
    },
  };
}
