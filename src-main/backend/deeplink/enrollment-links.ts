import type { Settings, SettingsStore } from '../settings/settings.ts';
import { appLinkSchemeFor, appLinkUrl, deeplinkPageUrl, encodeDeeplinkFor } from './codec.ts';

/** Where deeplinks point; read at view time so a settings change applies to every link. */
export interface LinkTargets {
  /** With `settings`, what the URL would be under those (not yet saved) settings. */
  apiUrl(settings?: Settings): string;
  deeplinkBase(settings?: Settings): string;
}

export interface EnrollmentLinks {
  data: string;
  url: string;
  app_link: string;
}

/**
 * The deeplink of anything a device enrolls with (an invitation, an enrollment code): the user
 * token of field 2 and the token of field 3, with today's settings. The one place links are built,
 * so the agent app's encoding (`spec` or the reference `flyve`) applies to every kind alike.
 */
export function enrollmentLinks(settings: SettingsStore, links: LinkTargets, userToken: string, token: string): EnrollmentLinks {
  const current = settings.get();
  const data = encodeDeeplinkFor(current.agent_app, {
    backendUrl: links.apiUrl(),
    userToken,
    invitationToken: token,
    helpdeskName: current.helpdesk_name,
    helpdeskPhone: current.helpdesk_phone,
    helpdeskWebsite: current.helpdesk_website,
    helpdeskEmail: current.helpdesk_email,
  });
  return {
    data,
    url: deeplinkPageUrl(links.deeplinkBase(), data),
    app_link: appLinkUrl(appLinkSchemeFor(current.agent_app, current.app_link_scheme), data),
  };
}
