import { Type, type Static } from 'typebox';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import { DEFAULT_MAIL_SETTINGS, MailSettingsFields } from './mail-settings.ts';
import type { SettingsRepository } from './repository.ts';

/** Everything an admin can change at run time. Stored as one JSON value per key. */
export const SettingsSchema = Type.Object({
  /** Address phones use to reach this machine (host name, IPv4 or IPv6); empty = detected at start. */
  public_host: Type.String({ maxLength: 253, pattern: '^(|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$' }),
  /** Base of the deeplink page, an http(s) URL without query; empty = this backend's own page. */
  deeplink_base_url: Type.String({ maxLength: 2048, pattern: '^(|https?://[^\\s?#"<>]+)$' }),
  /** Scheme of the app link the phone page's button carries: `<scheme>://register?data=…`; never a browser's own. */
  app_link_scheme: Type.String({ pattern: '^(?!(?:javascript|data|vbscript|file|https?|blob|about|ftp|mailto|tel|ws|wss)$)[a-z][a-z0-9+.-]{0,31}$' }),
  /** Which agent app new codes are for: `spec` (our encoding and scheme) or `flyve` (the reference agents'). */
  agent_app: Type.Union([Type.Literal('spec'), Type.Literal('flyve')]),
  helpdesk_name: Type.String({ maxLength: 200 }),
  helpdesk_phone: Type.String({ maxLength: 100 }),
  helpdesk_website: Type.String({ maxLength: 2048 }),
  helpdesk_email: Type.String({ maxLength: 254 }),
  invitation_lifetime_days: Type.Integer({ minimum: 1, maximum: 180 }),
  /** Agent record's `tls` flag: 1 → agents are sent to the TLS port. */
  mqtt_tls: Type.Boolean(),
  android_bugcollector_url: Type.String({ maxLength: 2048 }),
  android_bugcollector_login: Type.String({ maxLength: 200 }),
  android_bugcollector_passwd: Type.String({ maxLength: 200 }),
  /** SMTP, sender, templates (settings/mail-settings.ts); the SMTP password is not a setting. */
  ...MailSettingsFields,
});
export type Settings = Static<typeof SettingsSchema>;

export const DEFAULT_SETTINGS: Settings = {
  public_host: '',
  deeplink_base_url: '',
  app_link_scheme: 'mdmagent',
  agent_app: 'spec',
  helpdesk_name: '',
  helpdesk_phone: '',
  helpdesk_website: '',
  helpdesk_email: '',
  invitation_lifetime_days: 7,
  mqtt_tls: false,
  android_bugcollector_url: '',
  android_bugcollector_login: '',
  android_bugcollector_passwd: '',
  ...DEFAULT_MAIL_SETTINGS,
};

export class SettingsStore {
  private readonly repository: SettingsRepository;
  private readonly work: UnitOfWork;
  private cache: Settings | null = null;

  constructor(repository: SettingsRepository, work: UnitOfWork) {
    this.repository = repository;
    this.work = work;
  }

  get(): Settings {
    if (this.cache) return this.cache;
    const settings: Settings = { ...DEFAULT_SETTINGS };
    for (const { key, value } of this.repository.all()) {
      if (key in settings) (settings as Record<string, unknown>)[key] = JSON.parse(value);
    }
    this.cache = settings;
    return settings;
  }

  /** The helpdesk fields every deeplink carries, by setting name. */
  deeplinkFields(settings: Settings = this.get()): Record<string, string> {
    return {
      helpdesk_name: settings.helpdesk_name,
      helpdesk_phone: settings.helpdesk_phone,
      helpdesk_website: settings.helpdesk_website,
      helpdesk_email: settings.helpdesk_email,
    };
  }

  /** The helpdesk as the admin API and CLI show it beside a code or an invitation. */
  helpdesk(settings: Settings = this.get()): { name: string; phone: string; website: string; email: string } {
    return {
      name: settings.helpdesk_name,
      phone: settings.helpdesk_phone,
      website: settings.helpdesk_website,
      email: settings.helpdesk_email,
    };
  }

  /** Applies a validated partial update; returns the whole new settings. */
  update(patch: Partial<Settings>): Settings {
    this.work.run(() => {
      for (const [key, value] of Object.entries(patch)) {
        if (key in DEFAULT_SETTINGS && value !== undefined) this.repository.put(key, JSON.stringify(value));
      }
    });
    this.cache = null;
    return this.get();
  }
}
