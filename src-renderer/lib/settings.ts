import type { Settings } from '../../src-shared/contract/index.ts';
import {
  APP_LINK_SCHEME,
  BROWSER_SCHEMES,
  INVITATION_LIFETIME_DAYS,
  isValidEmail,
  isValidHost,
  isWholeNumberIn,
} from '../../src-shared/contract/rules.ts';

/** The settings the console's form edits (the mail ones have their own section). */
export const GENERAL_KEYS = [
  'public_host',
  'deeplink_base_url',
  'app_link_scheme',
  'agent_app',
  'helpdesk_name',
  'helpdesk_phone',
  'helpdesk_website',
  'helpdesk_email',
  'invitation_lifetime_days',
  'mqtt_tls',
  'android_bugcollector_url',
  'android_bugcollector_login',
  'android_bugcollector_passwd',
] as const;
export type GeneralKey = (typeof GENERAL_KEYS)[number];
export type GeneralSettings = Pick<Settings, GeneralKey>;

export function pickGeneral(settings: Settings): GeneralSettings {
  return Object.fromEntries(GENERAL_KEYS.map((key) => [key, settings[key]])) as GeneralSettings;
}

export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** Field errors of the general settings, as the admin edits them (null when fine). */
export function settingsErrors(values: GeneralSettings): Partial<Record<GeneralKey, string>> {
  const errors: Partial<Record<GeneralKey, string>> = {};
  if (values.public_host.trim() !== '' && !isValidHost(values.public_host)) {
    errors.public_host = 'A host name or an IP address, without http:// or a port';
  }
  if (values.deeplink_base_url.trim() !== '') {
    if (!isHttpUrl(values.deeplink_base_url.trim())) errors.deeplink_base_url = 'A full http:// or https:// address';
    else if (/[?#]/.test(values.deeplink_base_url)) errors.deeplink_base_url = 'Just the base address, without ? or #';
  }
  // The server's rule: lower case, and never a scheme a browser handles itself.
  if (!APP_LINK_SCHEME.test(values.app_link_scheme)) {
    errors.app_link_scheme = 'A lower-case letter, then lower-case letters, digits, + . or - (at most 32), as in mdmagent';
  } else if ((BROWSER_SCHEMES as readonly string[]).includes(values.app_link_scheme)) {
    errors.app_link_scheme = `"${values.app_link_scheme}" is not an app's scheme`;
  }
  if (values.helpdesk_email.trim() !== '' && !isValidEmail(values.helpdesk_email))
    errors.helpdesk_email = 'Not a valid email address';
  if (
    values.helpdesk_website.trim() !== '' &&
    !isHttpUrl(values.helpdesk_website.trim()) &&
    !isValidHost(values.helpdesk_website.trim().split('/')[0]!)
  ) {
    errors.helpdesk_website = 'A web address, as in https://help.example.com';
  }
  if (values.helpdesk_name.length > 200) errors.helpdesk_name = 'At most 200 characters';
  // The reference encoding cannot carry a ";": the Flyve agents split the enrollment data on it.
  if (values.agent_app === 'flyve') {
    for (const key of ['helpdesk_name', 'helpdesk_phone', 'helpdesk_website', 'helpdesk_email'] as const) {
      if (values[key].includes(';'))
        errors[key] = 'No ";" while the agent app is Flyve MDM: its agents split the enrollment data on it';
    }
  }
  if (values.helpdesk_phone.length > 100) errors.helpdesk_phone = 'At most 100 characters';
  const days = values.invitation_lifetime_days;
  if (!isWholeNumberIn(days, INVITATION_LIFETIME_DAYS))
    errors.invitation_lifetime_days = `Between ${INVITATION_LIFETIME_DAYS.min} and ${INVITATION_LIFETIME_DAYS.max} days`;
  if (values.android_bugcollector_url.trim() !== '' && !isHttpUrl(values.android_bugcollector_url.trim())) {
    errors.android_bugcollector_url = 'A full http:// or https:// address';
  }
  return errors;
}

/** The fields that changed, trimmed as they will be stored: the PATCH body. */
export function settingsPatch(before: GeneralSettings, after: GeneralSettings): Partial<GeneralSettings> {
  const patch: Record<string, unknown> = {};
  for (const key of GENERAL_KEYS) {
    let value: unknown = after[key];
    if (typeof value === 'string' && key !== 'android_bugcollector_passwd') value = value.trim();
    if (key === 'deeplink_base_url' && typeof value === 'string') value = value.replace(/\/+$/, '');
    if (value !== before[key]) patch[key] = value;
  }
  return patch as Partial<GeneralSettings>;
}

/** What to tell the admin after saving: everything here applies at once, to new and existing invitations. */
export function appliedNote(patch: Partial<GeneralSettings>): string {
  const parts: string[] = [];
  if ('agent_app' in patch)
    parts.push(
      `QR codes, deeplinks and emails are now made for ${patch.agent_app === 'flyve' ? 'the Flyve MDM agents (flyve://register)' : "the spec's agent"}`,
    );
  if ('public_host' in patch || 'deeplink_base_url' in patch || 'app_link_scheme' in patch)
    parts.push('QR codes and deeplinks of every pending invitation now carry the new address');
  if (Object.keys(patch).some((key) => key.startsWith('helpdesk_'))) parts.push('invitations show the new helpdesk details');
  if ('invitation_lifetime_days' in patch) parts.push('new invitations get the new lifetime (existing ones keep theirs)');
  if ('mqtt_tls' in patch) parts.push('devices get the new broker port the next time they read their agent record');
  return parts.length ? `Applied now, no restart needed: ${parts.join('; ')}.` : 'Applied now, no restart needed.';
}
