// A report's data as CSV, the same from the console's "Download CSV" and the CLI's `report --csv`:
// a header (`day` and each series' label), one line per day, an empty cell where no sample was taken.
import type { Report } from './contract/reports.ts';

/** One CSV cell (RFC 4180), with a text starting with = + - @ prefixed by ' so a spreadsheet does not run it. */
function cell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value !== 'number' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function reportCsv(report: Report): string {
  const lines = [['day', ...report.series.map((series) => series.label)].map(cell).join(',')];
  for (const point of report.points)
    lines.push([point.day, ...report.series.map((series) => point.values[series.key] ?? null)].map(cell).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
