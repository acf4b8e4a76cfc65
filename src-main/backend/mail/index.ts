import { hostname, tmpdir } from 'node:os';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { SettingsStore } from '../settings/settings.ts';
import type { DeliveryRepository } from './delivery-repository.ts';
import { Outbox } from './outbox.ts';
import type { MailableAccountInvites, MailableInvitations } from './ports.ts';
import type { AccountDeliveryRepository } from './account-delivery-repository.ts';
import type { NotificationRepository } from './notification-repository.ts';
import { MailPreview } from './preview.ts';
import { MailQueue } from './queue.ts';
import type { RetryPolicy } from './retry-policy.ts';
import { SecretStore, type SecretProtector, type SecretVault } from './secrets.ts';
import { MailSettingsService, type MailOverrides } from './settings-service.ts';
import { TestMailSender } from './test-send.ts';
import { TransportPool } from './transport-pool.ts';
import { MailWorker } from './worker.ts';

export { SqliteAccountDeliveryRepository, type AccountDeliveryRepository } from './account-delivery-repository.ts';
export { SqliteNotificationRepository, type NotificationRepository } from './notification-repository.ts';
export {
  DELIVERY_STATES,
  SqliteDeliveryRepository,
  type DeliveryRepository,
  type DeliveryState,
  type DeliveryView,
} from './delivery-repository.ts';
export type { MailSettings } from '../settings/mail-settings.ts';
export {
  osSecretProtector,
  plainProtector,
  SecretStore,
  type OsSecretStorage,
  type SecretProtector,
  type SecretVault,
} from './secrets.ts';
export { DEFAULT_CLAIM_TTL_MS, DEFAULT_POLL_MS } from './worker.ts';
export { DEFAULT_RETRY_DELAYS_MS, isTransientSmtpError, nextRetryAt, type RetryPolicy } from './retry-policy.ts';
export { describeSendError, MailSendError } from './send-error.ts';
export { MailSettingsService, type MailOverrides, type MailSettingsPatch } from './settings-service.ts';
export { parseSmtpUrl, redactSmtpUrl, SmtpUrlError } from './smtp-config.ts';
export type { MailPreview, MailQueue, MailWorker, TestMailSender };

export interface MailOptions extends MailOverrides {
  /** Where secrets.json and outbox/ live; default: the database file's folder. */
  dataDir?: string;
  /** Protects the SMTP password at rest; default, as headless: a 0600 file (the desktop shell passes the OS keychain). */
  secretProtector?: SecretProtector;
  /** Where the SMTP password is kept instead of the data dir's file (PostgreSQL: the database, sealed by the cluster key). */
  secrets?: SecretVault;
  shutdownGraceMs?: number;
  /** Back-off of automatic retries (tests shorten it). */
  retryPolicy?: RetryPolicy;
  greetingTimeoutMs?: number;
  /** This node's name (`serve --node-name`; default: the host name): the queue's claims carry it. */
  nodeName?: string;
  /** How long a claim on a queued message holds unless renewed (tests shorten it); default 15 s. */
  claimTtlMs?: number;
  /** How often an idle worker looks for mail queued on other nodes; default 1.5 s. */
  pollMs?: number;
}

/** The mail room, one part per job: queue, worker (with its transport pool), settings, preview, test email. */
export interface Mail {
  queue: MailQueue;
  worker: MailWorker;
  settings: MailSettingsService;
  preview: MailPreview;
  test: TestMailSender;
}

export function createMail(
  deps: {
    /** Whether the database is still open (the worker stops touching it once it closes). */
    isOpen: () => boolean;
    events: EventLog;
    work: UnitOfWork;
    settings: SettingsStore;
    invitations: MailableInvitations;
    deliveries: DeliveryRepository;
    /** Admins' invitations: their emails' queue, and what they are composed from. */
    accountDeliveries: AccountDeliveryRepository;
    accountInvites: MailableAccountInvites;
    /** Notification emails (alerts): the worker's third queue. */
    notifications: NotificationRepository;
  },
  options: MailOptions = {},
): Mail {
  const { isOpen, events, work, settings, invitations, deliveries, accountDeliveries, accountInvites, notifications } = deps;
  const dataDir = options.dataDir ?? tmpdir();
  const outbox = new Outbox(dataDir);
  const mailSettings = new MailSettingsService({
    settings,
    events,
    secrets: options.secrets ?? new SecretStore(dataDir, options.secretProtector),
    outboxDir: outbox.dir,
    overrides: { smtpUrl: options.smtpUrl, mailFrom: options.mailFrom },
  });
  const worker = new MailWorker({
    deliveries,
    invitations,
    accountDeliveries,
    accountInvites,
    notifications,
    settings,
    mailSettings,
    outbox,
    events,
    transports: new TransportPool({ greetingTimeoutMs: options.greetingTimeoutMs }),
    isOpen,
    shutdownGraceMs: options.shutdownGraceMs,
    retryPolicy: options.retryPolicy,
    node: options.nodeName ?? hostname(),
    claimTtlMs: options.claimTtlMs,
    pollMs: options.pollMs,
  });
  // A changed configuration may let waiting messages go.
  mailSettings.onChange(() => worker.kick());
  return {
    queue: new MailQueue({ deliveries, invitations, events, work, wake: () => worker.kick(), accountDeliveries, notifications }),
    worker,
    settings: mailSettings,
    preview: new MailPreview({ settings, mailSettings, invitations }),
    test: new TestMailSender({ mailSettings, outbox, events }),
  };
}
