/**
 * Refuses settings under which an invitation's QR code could not be drawn: the public host, the
 * deeplink base and the helpdesk fields all travel in the deeplink, which a QR code must hold.
 */
import { ApiError } from '../errors.ts';
import type { Settings } from '../settings/settings.ts';
import type { LinkTargets } from './enrollment-links.ts';
import { maxFieldLength, worstCaseQrTextBytes, type LinkField, type LinkInputs } from './link-budget.ts';
import { QR_MAX_BYTES } from './qr.ts';

/** The settings keys that end up in the deeplink, and their field in the link budget. */
const LINK_FIELDS: ReadonlyArray<[keyof Settings, LinkField | null]> = [
  ['helpdesk_website', 'helpdeskWebsite'],
  ['helpdesk_name', 'helpdeskName'],
  ['helpdesk_email', 'helpdeskEmail'],
  ['helpdesk_phone', 'helpdeskPhone'],
  ['deeplink_base_url', 'deeplinkBase'],
  ['public_host', null],
];

export function linkInputs(settings: Settings, links: LinkTargets): LinkInputs {
  return {
    agentApp: settings.agent_app,
    deeplinkBase: links.deeplinkBase(settings),
    apiUrl: links.apiUrl(settings),
    helpdeskName: settings.helpdesk_name,
    helpdeskPhone: settings.helpdesk_phone,
    helpdeskWebsite: settings.helpdesk_website,
    helpdeskEmail: settings.helpdesk_email,
  };
}

/**
 * Throws a 400 naming the field to shorten and how many characters it may have, when `candidate`
 * (the current settings with a patch applied) would make any invitation's QR code overflow.
 * `changed` are the patch's keys: the field blamed is the longest of those that count.
 */
export function checkLinkFitsQr(candidate: Settings, changed: string[], links: LinkTargets): void {
  const inputs = linkInputs(candidate, links);
  const bytes = worstCaseQrTextBytes(inputs);
  if (bytes <= QR_MAX_BYTES) return;
  const over = bytes - QR_MAX_BYTES;
  const head = `These settings make the enrollment link too long for a QR code: it could reach ${bytes} characters and a QR code holds ${QR_MAX_BYTES} (${over} too many).`;
  const blamed = LINK_FIELDS.filter(([key, field]) => field !== null && changed.includes(key))
    .map(([key, field]) => ({ key, field: field!, length: [...inputs[field!]].length }))
    .sort((a, b) => b.length - a.length)[0];
  if (!blamed)
    throw new ApiError(400, 'ERROR_LINK_TOO_LONG', `${head} Shorten the public host, the deeplink base or the helpdesk fields.`);
  const allowed = maxFieldLength(inputs, blamed.field);
  const left =
    allowed === 0
      ? `the other settings already fill the QR code, leaving no characters for ${blamed.key}: shorten them first`
      : `${blamed.key} has ${allowed} characters left: it may have at most ${allowed} (it has ${blamed.length})`;
  throw new ApiError(400, 'ERROR_LINK_TOO_LONG', `${head} With the other settings as they are, ${left}.`);
}
