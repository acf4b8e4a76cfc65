// Decoding of the invitation deeplink (spec §1 "Deeplink", DESIGN.md "Deeplink").
// The simulator only knows the wire, so this is a standalone decoder, deliberately
// lenient about the ways real deeplinks get mangled on their way to a device.

/** The seven fields carried by a deeplink, in wire order. */
export interface DeeplinkFields {
  backendUrl: string;
  userToken: string;
  invitationToken: string;
  helpdeskName: string;
  helpdeskPhone: string;
  helpdeskWebsite: string;
  helpdeskEmail: string;
}

export interface DeeplinkData extends DeeplinkFields {
  /** 'csv': `;` separated with CSV quoting (ours); 'legacy': `\;` separated (reference agent). */
  format: 'csv' | 'legacy';
}

export class DeeplinkError extends Error {
  override name = 'DeeplinkError';
}

const FIELD_ORDER = [
  'backendUrl',
  'userToken',
  'invitationToken',
  'helpdeskName',
  'helpdeskPhone',
  'helpdeskWebsite',
  'helpdeskEmail',
] as const satisfies readonly (keyof DeeplinkFields)[];

const FIELD_LABELS: Record<keyof DeeplinkFields, string> = {
  backendUrl: 'backend URL',
  userToken: 'user API token',
  invitationToken: 'invitation token',
  helpdeskName: 'helpdesk name',
  helpdeskPhone: 'helpdesk phone',
  helpdeskWebsite: 'helpdesk website',
  helpdeskEmail: 'helpdesk email',
};

const REQUIRED_FIELDS = 3;
const LEGACY_SEPARATOR = '\\;';

/**
 * Decodes a deeplink given as the page URL `{deeplink_url}/deeplink/?data=…`, an app link
 * `<scheme>://register?data=…`, a query string `data=…`, or the bare base64 data.
 * Throws DeeplinkError with a message fit for a user when the data is missing or unusable.
 */
export function decodeDeeplink(input: string): DeeplinkData {
  const base64 = extractData(input);
  const text = decodeBase64Text(base64);
  const { values, format } = splitFields(text);
  return toDeeplinkData(values, format);
}

/** Base64 (standard, padded) of the fields joined as our backend does; tests use it to make inputs. */
export function encodeDeeplinkData(
  fields: Partial<DeeplinkFields> & Pick<DeeplinkFields, 'backendUrl' | 'userToken' | 'invitationToken'>,
): string {
  const line = FIELD_ORDER.map((key) => quoteField(fields[key] ?? '')).join(';');
  return Buffer.from(line, 'utf8').toString('base64');
}

function quoteField(value: string): string {
  // ';' and '"' must be quoted (DESIGN.md). A backslash is quoted too so that no field can end
  // in '\' right before a separator and be read as the legacy '\;'; quoting more is valid CSV.
  if (!/[;"\\\r\n]/.test(value)) return value;
  return `"${value.replaceAll('"', '""')}"`;
}

function extractData(input: string): string {
  const trimmed = input.trim();
  if (trimmed === '') throw new DeeplinkError('deeplink is empty');

  const queryStart = trimmed.indexOf('?');
  let query: string | undefined;
  if (queryStart >= 0) query = trimmed.slice(queryStart + 1);
  else if (/^data=/i.test(trimmed)) query = trimmed;
  else if (trimmed.includes(':') || trimmed.includes('/deeplink')) {
    // ':' never occurs in base64, so this was meant as a URL.
    throw new DeeplinkError(`deeplink URL has no ?data= parameter: ${abbreviate(trimmed)}`);
  }

  let data: string;
  if (query !== undefined) {
    const hash = query.indexOf('#');
    const params = new URLSearchParams(hash >= 0 ? query.slice(0, hash) : query);
    const value = params.get('data');
    if (value === null) throw new DeeplinkError(`deeplink URL has no data parameter: ${abbreviate(trimmed)}`);
    data = value; // URLSearchParams has already undone the percent-encoding (and made '+' a space)
  } else {
    data = trimmed;
    if (data.includes('%')) {
      // Bare data copied out of a URL may still be percent-encoded.
      try {
        data = decodeURIComponent(data);
      } catch {
        throw new DeeplinkError('deeplink data has invalid percent-encoding');
      }
    }
  }
  if (data.trim() === '') throw new DeeplinkError('deeplink data parameter is empty');
  return data;
}

function decodeBase64Text(data: string): string {
  const normalized = data
    .replace(/[\r\n\t]/g, '') // line-wrapped base64
    .replace(/ /g, '+') // a '+' that was read as a space in a query string
    .replace(/-/g, '+') // base64url
    .replace(/_/g, '/')
    .replace(/=+$/, ''); // padding is recomputed below
  const bad = /[^A-Za-z0-9+/]/.exec(normalized);
  if (bad) {
    throw new DeeplinkError(`deeplink data is not base64 (unexpected ${JSON.stringify(bad[0])} at position ${bad.index})`);
  }
  if (normalized.length % 4 === 1) throw new DeeplinkError('deeplink data is truncated base64');
  const padded = normalized + '='.repeat((4 - (normalized.length % 4)) % 4);
  const bytes = Buffer.from(padded, 'base64');

  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new DeeplinkError('deeplink data does not decode to UTF-8 text');
  }
  // Random bytes that happen to be valid UTF-8 still tend to carry control characters.
  // eslint-disable-next-line no-control-regex -- the control characters are what this looks for
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text)) {
    throw new DeeplinkError('deeplink data decodes to binary, not invitation text');
  }
  return text.replace(/\r?\n$/, '');
}

function splitFields(text: string): { values: string[]; format: DeeplinkData['format'] } {
  // Legacy data is `url\;token\;…` with no quoting. A CSV line can contain '\;' too (inside a
  // quoted field, or after a field ending in '\'), but then the part before the first '\;'
  // holds ordinary ';' separators, whereas legacy's first part is a bare URL.
  const legacyParts = text.split(LEGACY_SEPARATOR);
  if (legacyParts.length >= REQUIRED_FIELDS && !(legacyParts[0] ?? '').includes(';')) {
    return { values: legacyParts, format: 'legacy' };
  }
  return { values: parseCsvLine(text), format: 'csv' };
}

/** One `;` separated CSV record: a field starting with '"' is quoted, '""' inside is a quote. */
function parseCsvLine(text: string): string[] {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    if (text[i] === '"') {
      let value = '';
      i += 1;
      for (;;) {
        const quote = text.indexOf('"', i);
        if (quote < 0) throw new DeeplinkError(`deeplink field ${fields.length + 1} has an unterminated quote`);
        value += text.slice(i, quote);
        if (text[quote + 1] === '"') {
          value += '"';
          i = quote + 2;
        } else {
          i = quote + 1;
          break;
        }
      }
      if (i < text.length && text[i] !== ';') {
        throw new DeeplinkError(`deeplink field ${fields.length + 1} has text after its closing quote`);
      }
      fields.push(value);
    } else {
      const separator = text.indexOf(';', i);
      const end = separator < 0 ? text.length : separator;
      fields.push(text.slice(i, end));
      i = end;
    }
    if (i >= text.length) return fields;
    i += 1; // skip ';' (a trailing ';' yields a last, empty field on the next turn)
  }
}

function toDeeplinkData(values: string[], format: DeeplinkData['format']): DeeplinkData {
  if (values.length > FIELD_ORDER.length) {
    throw new DeeplinkError(
      `deeplink data has ${values.length} fields, expected at most ${FIELD_ORDER.length} (an unquoted ';' in a field?)`,
    );
  }
  const fields = {} as DeeplinkFields;
  FIELD_ORDER.forEach((key, index) => {
    const raw = values[index] ?? '';
    // Whitespace around a URL or token is never meaningful and would break requests.
    fields[key] = index < REQUIRED_FIELDS ? raw.trim() : raw;
  });

  const missing = FIELD_ORDER.slice(0, REQUIRED_FIELDS).filter((key) => fields[key] === '');
  if (missing.length > 0) {
    throw new DeeplinkError(
      `deeplink data lacks the ${missing.map((key) => FIELD_LABELS[key]).join(', ')} ` +
        `(got ${values.filter((v) => v.trim() !== '').length} non-empty of ${values.length} fields; ` +
        `backend URL, user API token and invitation token are required)`,
    );
  }
  let url: URL;
  try {
    url = new URL(fields.backendUrl);
  } catch {
    throw new DeeplinkError(`deeplink backend URL is not a URL: ${abbreviate(fields.backendUrl)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DeeplinkError(`deeplink backend URL must be http(s): ${abbreviate(fields.backendUrl)}`);
  }
  return { ...fields, format };
}

function abbreviate(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
