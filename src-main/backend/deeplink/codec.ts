/**
 * The deeplink's `data`: base64 of seven `;`-separated fields (spec §1). A field holding `;` or
 * `"` is quoted CSV-style. Decoding is lenient about what travels badly (DESIGN.md): the
 * reference's `\;` separators, base64url, missing padding and `+` that became a space.
 */

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

function quoteField(value: string): string {
  return /[;"\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** The seven fields, each quoted when needed, in the spec's order (joined by `;` they make the line). */
export function deeplinkFieldTexts(fields: DeeplinkFields): string[] {
  return ORDER.map((key) => quoteField(fields[key] ?? ''));
}

export function encodeDeeplinkData(fields: DeeplinkFields): string {
  return Buffer.from(deeplinkFieldTexts(fields).join(';'), 'utf8').toString('base64');
}

/** Splits one CSV-style line on `;`, honouring quotes. */
function splitFields(line: string): string[] {
  if (!line.includes('"') && line.includes('\\;')) return line.split('\\;');
  const fields: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    if (quoted) {
      if (char === '"' && line[i + 1] === '"') {
        current += '"';
        i++;
      } else if (char === '"') quoted = false;
      else current += char;
    } else if (char === '"' && current === '') quoted = true;
    else if (char === ';') {
      fields.push(current);
      current = '';
    } else current += char;
  }
  if (quoted) throw new DeeplinkDataError('unterminated quoted field');
  fields.push(current);
  return fields;
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
