/** "just now", "5 min ago", "in 3 days", "2 months ago"… for timestamps near `now`. */
/**
 * "3 minutes ago", "in 2 days". `past`: the time is of something that has happened (an event, a
 * contact), so one a little ahead of `now` (a clock tick behind, a server clock slightly ahead)
 * still reads "just now", never "in a few seconds".
 */
export function relativeTime(
  iso: string | null | undefined,
  now = Date.now(),
  { past = false }: { past?: boolean } = {},
): string {
  if (!iso) return 'never';
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return '—';
  const seconds = past ? Math.min(0, Math.round((at - now) / 1000)) : Math.round((at - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return seconds <= 0 ? 'just now' : 'in a few seconds';
  const units: [Intl.RelativeTimeFormatUnit, number][] = [
    ['minute', 60],
    ['hour', 3600],
    ['day', 86400],
    ['month', 30 * 86400],
    ['year', 365 * 86400],
  ];
  let unit: [Intl.RelativeTimeFormatUnit, number] = units[0]!;
  for (const candidate of units) if (abs >= candidate[1] * 0.9) unit = candidate;
  const value = Math.round(seconds / unit[1]);
  return new Intl.RelativeTimeFormat('en', { numeric: 'auto', style: 'long' }).format(value, unit[0]);
}

export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '—';
  return date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '—';
  return date.toLocaleDateString(undefined, { dateStyle: 'medium' });
}

export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '—';
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = -1;
  do {
    value /= 1024;
    unit++;
  } while (value >= 1024 && unit < units.length - 1);
  return `${value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2)} ${units[unit]}`;
}

export function fullName(person: { firstname?: string | null; lastname?: string | null }): string {
  return [person.firstname, person.lastname].filter(Boolean).join(' ');
}

/** Invitation statuses as admins read them: a used invitation is "enrolled". */
export const INVITATION_STATUS: Record<string, { label: string; color: string }> = {
  pending: { label: 'Pending', color: 'blue' },
  done: { label: 'Enrolled', color: 'green' },
  expired: { label: 'Expired', color: 'gray' },
  revoked: { label: 'Revoked', color: 'red' },
};

export function shortHash(hash: string, length = 12): string {
  return hash.length > length ? `${hash.slice(0, length)}…` : hash;
}

/** "1 device", "2 devices", "1,200 devices": a count with its noun in the right number. */
export function countOf(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}
