import { dirname } from 'node:path';
import { tmpdir } from 'node:os';
import type { Db } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { InvitationService } from '../invitations/invitations.ts';
import type { SettingsStore } from '../settings/settings.ts';
import type { DeliveryRepository } from './deliveries.ts';
import { MailService, type MailOverrides } from './mail-service.ts';
import { Outbox } from './outbox.ts';
import type { RetryPolicy } from './retry-policy.ts';
import { SecretStore, type SecretProtector } from './secrets.ts';

export { DeliveryRepository, DELIVERY_STATES, type DeliveryState, type DeliveryView } from './deliveries.ts';
export { MailSendError, MailService, type MailOverrides, type MailSettingsPatch } from './mail-service.ts';
export { MailSettingsSchema, type MailSettings } from './mail-settings.ts';
export { osSecretProtector, plainProtector, SecretStore, type OsSecretStorage, type SecretProtector } from './secrets.ts';
export { DEFAULT_RETRY_DELAYS_MS, isTransientSmtpError, nextRetryAt, type RetryPolicy } from './retry-policy.ts';
export { parseSmtpUrl, redactSmtpUrl, SmtpUrlError } from './smtp-config.ts';

export interface MailOptions extends MailOverrides {
  /** Where secrets.json and outbox/ live; default: the database file's folder. */
  dataDir?: string;
  /** Protects the SMTP password at rest; default, as headless: a 0600 file (the desktop shell passes the OS keychain). */
  secretProtector?: SecretProtector;
  shutdownGraceMs?: number;
  /** Back-off of automatic retries (tests shorten it). */
  retryPolicy?: RetryPolicy;
  greetingTimeoutMs?: number;
}

export function createMailService(
  deps: { db: Db; events: EventLog; work: UnitOfWork; settings: SettingsStore; invitations: InvitationService; deliveries: DeliveryRepository },
  options: MailOptions = {},
): MailService {
  const dataDir = options.dataDir ?? (deps.db.memory ? tmpdir() : dirname(deps.db.name));
  return new MailService({
    ...deps,
    secrets: new SecretStore(dataDir, options.secretProtector),
    outbox: new Outbox(dataDir),
    overrides: { smtpUrl: options.smtpUrl, mailFrom: options.mailFrom },
    shutdownGraceMs: options.shutdownGraceMs,
    retryPolicy: options.retryPolicy,
    greetingTimeoutMs: options.greetingTimeoutMs,
  });
}
