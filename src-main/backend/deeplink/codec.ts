/**
 * The deeplink's `data`: base64 of seven `;`-separated fields (spec §1). A field holding `;` or
 * `"` is quoted CSV-style. Decoding is lenient about what travels badly (DESIGN.md): the
 * reference's `\;` separators, base64url, missing padding and `+` that became a space.
 * The reference agents (agent app "flyve") need their own encoding, see encodeFlyveDeeplinkData.
 */
import { DelimitedTextError, parseDelimited } from '../../../src-shared/delimited.ts';

/** Which agent app new codes are made for (the `agent_app` setting). */
export type AgentApp = 'spec' | 'flyve';
/** The app link scheme the reference Android agent registers (`flyve://register?data=…`). */
export const FLYVE_APP_LINK_SCHEME = 'flyve';

export interface DeeplinkFields {
  backendUrl: string;
  userToken: string;
  invitationToken: string;
  helpdeskName: string;
  helpdeskPhone: string;
  helpdeskWebsite: string;
  helpdeskEmail: string;
}

const ORDER = [
  'backendUrl',
  'userToken',
  'invitationToken',
  'helpdeskName',
  'helpdeskPhone',
  'helpdeskWebsite',
  'helpdeskEmail',
] as const satisfies readonly (keyof DeeplinkFields)[];

export class DeeplinkDataError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeeplinkDataError';
  }
}

// A backslash is quoted too: a field ending in `\` before a `;` would read as the reference's `\;`.
function quoteField(value: string): string {
  return /[;"\\\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** The seven fields, each quoted when needed, in the spec's order (joined by `;` they make the line). */
export function deeplinkFieldTexts(fields: DeeplinkFields): string[] {
  return ORDER.map((key) => quoteField(fields[key] ?? ''));
}

export function encodeDeeplinkData(fields: DeeplinkFields): string {
  return Buffer.from(deeplinkFieldTexts(fields).join(';'), 'utf8').toString('base64');
}

/**
 * The reference backend's encoding, the only one its agents read: base64 of
 * `addcslashes(implode(';', fields), '\\;')`, i.e. every `\` and `;` preceded by a backslash.
 * The agents split the text on `\;` without unescaping, so a field holding `;` cannot travel:
 * callers refuse such values first (fieldsUnfitForFlyve).
 */
export function encodeFlyveDeeplinkData(fields: DeeplinkFields): string {
  const line = ORDER.map((key) => fields[key] ?? '')
    .join(';')
    .replace(/[\\;]/g, (char) => `\\${char}`);
  return Buffer.from(line, 'utf8').toString('base64');
}

/** The encoding the given agent app reads. */
export function encodeDeeplinkFor(app: AgentApp, fields: DeeplinkFields): string {
  return app === 'flyve' ? encodeFlyveDeeplinkData(fields) : encodeDeeplinkData(fields);
}

/** The app link scheme for new codes: the reference agents register `flyve`. */
export function appLinkSchemeFor(app: AgentApp, configured: string): string {
  return app === 'flyve' ? FLYVE_APP_LINK_SCHEME : configured;
}

/** Values that would break the reference encoding (the agents split on `;`), as a message, or null. */
export function fieldsUnfitForFlyve(values: Record<string, string>): string | null {
  const bad = Object.entries(values)
    .filter(([, value]) => value.includes(';'))
    .map(([key]) => key);
  return bad.length === 0
    ? null
    : `${bad.join(', ')} cannot contain ";" while the agent app is "flyve": the Flyve agents split the enrollment data on it`;
}

/** The reference's `\;`-separated text: `\;` separates, `\\` is a backslash. */
function splitEscaped(line: string): string[] {
  const fields: string[] = [];
  let current = '';
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    const next = line[i + 1];
    if (char === '\\' && next === ';') {
      fields.push(current);
      current = '';
      i++;
    } else if (char === '\\' && next === '\\') {
      current += '\\';
      i++;
    } else current += char;
  }
  fields.push(current);
  return fields;
}

/**
 * Whether decoded text is in the reference encoding: it has `\;` separators and no bare `;` (ours
 * always has six bare separators; in the reference's every `;` and `\` is escaped).
 */
function isFlyveEncoded(line: string): boolean {
  if (!line.includes('\\;')) return false;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '\\') i++;
    else if (line[i] === ';') return false;
  }
  return true;
}

/** Splits one CSV-style line on `;`, honouring quotes. */
function splitFields(line: string): string[] {
  if (isFlyveEncoded(line)) return splitEscaped(line);
  try {
    return parseDelimited(line, ';', false)[0]!;
  } catch (error) {
    if (error instanceof DelimitedTextError) throw new DeeplinkDataError('unterminated quoted field');
    throw error;
  }
}

/** Standard, padded base64 of whatever form arrived (base64url, no padding, `+` read as space). */
export function canonicalBase64(data: string): string {
  const normalized = data.trim().replace(/ /g, '+').replace(/-/g, '+').replace(/_/g, '/');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(normalized) || normalized.replace(/=+$/, '').length % 4 === 1) {
    throw new DeeplinkDataError('data is not base64');
  }
  return Buffer.from(normalized, 'base64').toString('base64');
}

function decodeBase64(data: string): string {
  const bytes = Buffer.from(canonicalBase64(data), 'base64');
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
}

/** Which encoding `data` is in (it must decode: call decodeDeeplinkData first). */
export function deeplinkEncodingOf(data: string): AgentApp {
  return isFlyveEncoded(decodeBase64(data)) ? 'flyve' : 'spec';
}

export function decodeDeeplinkData(data: string | undefined | null): DeeplinkFields {
  if (!data || !data.trim()) throw new DeeplinkDataError('the data parameter is missing');
  let text: string;
  try {
    text = decodeBase64(data);
  } catch (error) {
    throw error instanceof DeeplinkDataError ? error : new DeeplinkDataError('data is not valid UTF-8 text');
  }
  const values = splitFields(text.replace(/\r?\n$/, ''));
  if (values.length < 3 || values.length > ORDER.length) {
    throw new DeeplinkDataError(`expected ${ORDER.length} fields, found ${values.length}`);
  }
  const fields = Object.fromEntries(ORDER.map((key, i) => [key, values[i] ?? ''])) as unknown as DeeplinkFields;
  if (!fields.backendUrl || !fields.userToken || !fields.invitationToken) {
    throw new DeeplinkDataError('backend URL, user token and invitation token are required');
  }
  return fields;
}

/** The page URL a QR code and an email carry: `{deeplink_url}/deeplink/?data=…`. */
export function deeplinkPageUrl(deeplinkBase: string, data: string): string {
  return `${deeplinkBase.replace(/\/+$/, '')}/deeplink/?data=${encodeURIComponent(data)}`;
}

/** The app link the phone page's button carries. */
export function appLinkUrl(scheme: string, data: string): string {
  return `${scheme}://register?data=${encodeURIComponent(data)}`;
}
