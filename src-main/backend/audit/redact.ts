// The one rule that keeps secrets out of the audit trail and of the events: a field is secret when
// the last word of its name (`smtp_password`, `admin_token`, `totp_secret`, `api_key`) is one of
// SECRET_WORDS, or its name mentions TOTP or recovery codes; its values become REDACTED. A URL
// value loses its password (`smtp://user:pw@host` → `smtp://user:[redacted]@host`).

export const REDACTED = '[redacted]';

const SECRET_WORDS = new Set(['password', 'passwd', 'pass', 'secret', 'token', 'hash', 'key', 'credential', 'ticket']);

/** Whether values of a field of this name are secret. */
export function isSecretField(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  const last = words.at(-1) ?? '';
  return SECRET_WORDS.has(last) || words.includes('totp') || words.includes('recovery');
}

/** A value as it may be kept: nested objects field by field, URLs without their password nor secret query values. */
export function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redactUrl(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (value !== null && typeof value === 'object') return redactFields(value as Record<string, unknown>);
  return value;
}

/**
 * A URL's password (`smtp://user:pw@host` → `smtp://user:[redacted]@host`) and the values of its
 * query parameters named like secrets (a webhook's `?token=…`, `&api_key=…`) replaced; any other text as it is.
 */
function redactUrl(text: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text;
  const withoutPassword = text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@/\s]*@/i, `$1:${REDACTED}@`);
  return withoutPassword.replace(/([?&;])([^=&#;]+)=([^&#;]*)/g, (whole, separator: string, name: string) => {
    let decoded = name;
    try {
      decoded = decodeURIComponent(name);
    } catch {
      // a malformed escape: judged by its raw name
    }
    return isSecretField(decoded) ? `${separator}${name}=${REDACTED}` : whole;
  });
}

/** An object with each secret field's value replaced by REDACTED (null and absent stay so: "none" is no secret). */
export function redactFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).map(([name, value]) => [
      name,
      isSecretField(name) && value !== null && value !== undefined ? REDACTED : redactValue(value),
    ]),
  );
}

/** What changed, field by field: `{ field: { before, after } }` for the fields whose values differ; null when none did. */
export type FieldChanges = Record<string, { before: unknown; after: unknown }>;

/**
 * The fields that differ between `before` and `after` (null: the object did not exist, or no longer
 * does), redacted. A secret that changed reads `{before: "[redacted]", after: "[redacted]"}`: it is
 * known that it changed, never to what.
 */
export function changedFields(
  before: Record<string, unknown> | null | undefined,
  after: Record<string, unknown> | null | undefined,
): FieldChanges | null {
  const names = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  const changes: FieldChanges = {};
  for (const name of names) {
    const was = before?.[name] ?? null;
    const is = after?.[name] ?? null;
    if (JSON.stringify(was) === JSON.stringify(is)) continue;
    changes[name] = isSecretField(name)
      ? { before: was === null ? null : REDACTED, after: is === null ? null : REDACTED }
      : { before: redactValue(was), after: redactValue(is) };
  }
  return Object.keys(changes).length > 0 ? changes : null;
}
