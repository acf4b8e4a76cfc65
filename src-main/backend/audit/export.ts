// The audit trail as a download: CSV or JSON lines, produced line by line from the repository's
// paged iterator, so an export of any length holds one page of rows in memory.
import type { AuditExportFormat } from '../../../src-shared/contract/index.ts';
import type { AuditRow } from './repository.ts';

export const AUDIT_CSV_COLUMNS = [
  'id',
  'at',
  'actor',
  'account_id',
  'token_name',
  'role',
  'address',
  'action',
  'target_kind',
  'target_id',
  'target_name',
  'message',
  'changes',
] as const satisfies readonly (keyof AuditRow)[];

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled.
 * A text starting with = + - @ (or a tab or carriage return) is prefixed with ' so that a
 * spreadsheet shows it rather than running it as a formula (CSV injection).
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (typeof value !== 'number' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The export's lines (each ending with a line break): a header and one line per entry for CSV, one JSON object per entry for JSON lines. */
export async function* auditExportLines(rows: AsyncIterable<AuditRow>, format: AuditExportFormat): AsyncGenerator<string> {
  if (format === 'jsonl') {
    for await (const row of rows) yield `${JSON.stringify(row)}\n`;
    return;
  }
  yield `${AUDIT_CSV_COLUMNS.join(',')}\r\n`;
  for await (const row of rows) yield `${AUDIT_CSV_COLUMNS.map((column) => csvCell(row[column])).join(',')}\r\n`;
}
