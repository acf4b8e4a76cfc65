import { Type, type Static } from 'typebox';
import { Literals } from './common.ts';
import { MailSettingsFields, type MailSettings } from './mail.ts';
import { APP_LINK_SCHEME_PATTERN, HOST_MAX_LENGTH, INVITATION_LIFETIME_DAYS, PUBLIC_HOST_PATTERN } from './rules.ts';

export const AGENT_APPS = ['spec', 'flyve'] as const;
export type AgentApp = (typeof AGENT_APPS)[number];

/** Everything an admin can change at run time (GET and PATCH /api/settings). */
export const Settings = Type.Object({
  /** Address phones use to reach this machine (host name, IPv4 or IPv6); empty = detected at start. */
  public_host: Type.String({ maxLength: HOST_MAX_LENGTH, pattern: PUBLIC_HOST_PATTERN }),
  /** Base of the deeplink page, an http(s) URL without query; empty = this backend's own page. */
  deeplink_base_url: Type.String({ maxLength: 2048, pattern: '^(|https?://[^\\s?#"<>]+)$' }),
  /** Scheme of the app link the phone page's button carries: `<scheme>://register?data=…`; never a browser's own. */
  app_link_scheme: Type.String({ pattern: APP_LINK_SCHEME_PATTERN }),
  /** Which agent app new codes are for: `spec` (our encoding and scheme) or `flyve` (the reference agents'). */
  agent_app: Literals(AGENT_APPS),
  helpdesk_name: Type.String({ maxLength: 200 }),
  helpdesk_phone: Type.String({ maxLength: 100 }),
  helpdesk_website: Type.String({ maxLength: 2048 }),
  helpdesk_email: Type.String({ maxLength: 254 }),
  invitation_lifetime_days: Type.Integer({ minimum: INVITATION_LIFETIME_DAYS.min, maximum: INVITATION_LIFETIME_DAYS.max }),
  /** Agent record's `tls` flag: 1 → agents are sent to the TLS port. */
  mqtt_tls: Type.Boolean(),
  android_bugcollector_url: Type.String({ maxLength: 2048 }),
  android_bugcollector_login: Type.String({ maxLength: 200 }),
  android_bugcollector_passwd: Type.String({ maxLength: 200 }),
  /** SMTP, sender, templates; the SMTP password is not a setting. */
  ...MailSettingsFields,
});
export type Settings = Static<typeof Settings>;

/** What a fresh install holds, apart from mail (the backend's mail settings have their own defaults). */
export const DEFAULT_GENERAL_SETTINGS: Omit<Settings, keyof MailSettings> = {
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
};

/** PATCH /api/settings: any of them, at least one; unknown keys are refused. */
export const SettingsPatch = Type.Partial(Settings, { additionalProperties: false, minProperties: 1 });
export type SettingsPatch = Static<typeof SettingsPatch>;
