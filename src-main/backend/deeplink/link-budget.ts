/**
 * How long can an invitation's QR code text get? The QR code carries the deeplink page URL
 * `{deeplink_base}/deeplink/?data=<percent-encoded base64 of the seven fields>`. Everything in it
 * is known from the settings except the two tokens, drawn per invitation: they are hex of a fixed
 * length, but which base64 characters they produce (and so whether `+` and `/` cost 3 characters
 * once percent-encoded) depends on their value. The bound below takes, for every base64 group a
 * token byte falls in, the worst of all hex values, so no invitation can exceed it.
 */
import { deeplinkFieldTexts, type AgentApp, type DeeplinkFields } from './codec.ts';
import { QR_MAX_BYTES } from './qr.ts';

/** sessions/user-repository.ts draws user tokens as randomHex(20), invitations/invitations.ts as randomHex(32). */
export const USER_TOKEN_HEX_LENGTH = 40;
export const INVITATION_TOKEN_HEX_LENGTH = 64;

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const HEX_BYTES = [...'0123456789abcdef'].map((c) => c.charCodeAt(0));
/** Length of a base64 character once percent-encoded by encodeURIComponent. */
const COST = [...BASE64].map((c) => encodeURIComponent(c).length);
const PAD_COST = encodeURIComponent('=').length;

/** A byte of the line: known, or any hex digit (a token's). */
type LineByte = number | 'hex';

// Most groups inside a token are three hex digits: the same 4,096 cases, worked out once.
const costCache = new Map<string, number>();

function groupCost(group: LineByte[]): number {
  if (!group.includes('hex')) return worstGroupCost(group); // known bytes: one case
  const key = group.join(',');
  let cost = costCache.get(key);
  if (cost === undefined) {
    cost = worstGroupCost(group);
    if (costCache.size < 10_000) costCache.set(key, cost);
  }
  return cost;
}

function worstGroupCost(group: LineByte[]): number {
  let worst = 0;
  const choices = group.map((b) => (b === 'hex' ? HEX_BYTES : [b]));
  for (const b0 of choices[0]!) {
    for (const b1 of choices[1] ?? [0]) {
      for (const b2 of choices[2] ?? [0]) {
        const bits = (b0 << 16) | (b1 << 8) | b2;
        const sextets = [(bits >> 18) & 63, (bits >> 12) & 63, (bits >> 6) & 63, bits & 63].slice(0, group.length + 1);
        let cost = (3 - group.length) * PAD_COST;
        for (const s of sextets) cost += COST[s]!;
        if (cost > worst) worst = cost;
      }
    }
  }
  return worst;
}

export interface LinkInputs {
  /** The encoding new codes use (settings' agent app): ours quotes fields, the reference's escapes `\` and `;`. */
  agentApp: AgentApp;
  /** Base of the deeplink page (settings' deeplink base, else this backend's own). */
  deeplinkBase: string;
  /** The agent API URL the deeplink carries. */
  apiUrl: string;
  helpdeskName: string;
  helpdeskPhone: string;
  helpdeskWebsite: string;
  helpdeskEmail: string;
}

/** The longest the QR code text (deeplink page URL, in UTF-8 bytes) of any invitation can be. */
export function worstCaseQrTextBytes(inputs: LinkInputs): number {
  const fields: DeeplinkFields = {
    backendUrl: inputs.apiUrl,
    userToken: 'u'.repeat(USER_TOKEN_HEX_LENGTH),
    invitationToken: 'i'.repeat(INVITATION_TOKEN_HEX_LENGTH),
    helpdeskName: inputs.helpdeskName,
    helpdeskPhone: inputs.helpdeskPhone,
    helpdeskWebsite: inputs.helpdeskWebsite,
    helpdeskEmail: inputs.helpdeskEmail,
  };
  // The line as codec.ts encodes it: our quoted fields joined by `;`, or the reference's fields
  // with `\` and `;` escaped, joined by `\;` (encodeFlyveDeeplinkData).
  const flyve = inputs.agentApp === 'flyve';
  const texts = flyve
    ? fieldsInOrder(fields).map((value) => value.replace(/[\\;]/g, (char) => `\\${char}`))
    : deeplinkFieldTexts(fields);
  const separator = Buffer.from(flyve ? '\\;' : ';', 'utf8');
  const line: LineByte[] = [];
  texts.forEach((text, index) => {
    if (index > 0) line.push(...separator);
    // fields 2 and 3 are the tokens: hex, never quoted
    if (index === 1 || index === 2) for (let i = 0; i < text.length; i++) line.push('hex');
    else for (const byte of Buffer.from(text, 'utf8')) line.push(byte);
  });
  let bytes = Buffer.byteLength(`${inputs.deeplinkBase.replace(/\/+$/, '')}/deeplink/?data=`, 'utf8');
  for (let i = 0; i < line.length; i += 3) bytes += groupCost(line.slice(i, i + 3));
  return bytes;
}

function fieldsInOrder(fields: DeeplinkFields): string[] {
  return [
    fields.backendUrl,
    fields.userToken,
    fields.invitationToken,
    fields.helpdeskName,
    fields.helpdeskPhone,
    fields.helpdeskWebsite,
    fields.helpdeskEmail,
  ];
}

export type LinkField = 'deeplinkBase' | 'helpdeskName' | 'helpdeskPhone' | 'helpdeskWebsite' | 'helpdeskEmail';

/**
 * The most characters `field` may have (its current text cut short, the others as they are) for
 * every invitation's QR code to fit; 0 when the other settings alone already overflow.
 */
export function maxFieldLength(inputs: LinkInputs, field: LinkField): number {
  const chars = [...inputs[field]];
  const fits = (n: number) => worstCaseQrTextBytes({ ...inputs, [field]: chars.slice(0, n).join('') }) <= QR_MAX_BYTES;
  if (fits(chars.length)) return chars.length;
  let low = 0;
  let high = chars.length; // fits(low) may be false: then 0 is the answer
  if (!fits(0)) return 0;
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if (fits(middle)) low = middle;
    else high = middle;
  }
  return low;
}
