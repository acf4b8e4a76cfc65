// `report enrollments|online|compliance|os|models|deployments [--days N] [--fleet NAME|ID] [--json|--csv]`:
// a report of the daily figures the server keeps (the console's Reports page), as a table, JSON or CSV.
import { REPORT_NAMES, type Report, type ReportName } from '../../src-shared/contract/index.ts';
import { reportCsv } from '../../src-shared/report-csv.ts';
import { findFleet } from './deploy-commands.ts';
import { output, parse, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';

/** The report as a table: a line per day, a column per series; `–` where no sample was taken; OS versions and models now below. */
export function reportTable(report: Report, fleetName?: string): string {
  const header = ['day', ...report.series.map((series) => series.label)];
  const rows = report.points.map((point) => [
    point.day,
    ...report.series.map((series) => {
      const value = point.values[series.key];
      return value === null || value === undefined ? '–' : value.toLocaleString('en-US');
    }),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) =>
    cells.map((text, column) => (column === 0 ? text.padEnd(widths[0]!) : text.padStart(widths[column]!))).join('  ');
  const lines = [
    `${report.title}${fleetName ? `, fleet "${fleetName}"` : ''}: ${report.from} to ${report.to} (UTC)`,
    line(header),
    ...rows.map(line),
  ];
  if (report.current) {
    lines.push('', 'Now:');
    if (report.current.length === 0) lines.push('  no device');
    for (const share of report.current) lines.push(`  ${share.key}: ${share.devices.toLocaleString('en-US')}`);
  }
  if (report.sampled_at === null && ['online', 'compliance', 'os', 'models'].includes(report.report))
    lines.push('', `No sample yet: the server samples its devices every ${Math.round(report.sample_every_s / 60)} minutes.`);
  return lines.join('\n');
}

const report: Handler = async (argv) => {
  const { values, positionals, admin, json } = parse(argv, {
    days: { type: 'string' },
    fleet: { type: 'string' },
    csv: { type: 'boolean' },
  });
  const name = positionals[0];
  if (name === undefined || !(REPORT_NAMES as readonly string[]).includes(name) || positionals.length > 1)
    throw new CliError(
      name === undefined
        ? `which report? one of ${REPORT_NAMES.join(', ')}`
        : `no report "${positionals.join(' ')}": one of ${REPORT_NAMES.join(', ')}`,
    );
  if (json && values.csv === true) throw new CliError('--json or --csv, not both');
  let days: number | undefined;
  if (values.days !== undefined) {
    days = Number(values.days);
    if (!Number.isInteger(days) || days < 1 || days > 366)
      throw new CliError(`--days takes 1 to 366, not "${String(values.days)}"`);
  }
  const fleet = values.fleet === undefined ? undefined : await findFleet(admin(), values.fleet as string);
  const result = await admin().reports.get({
    params: { report: name as ReportName },
    query: { ...(days === undefined ? {} : { days }), ...(fleet ? { fleet_id: fleet.id } : {}) },
  });
  if (values.csv === true) {
    process.stdout.write(reportCsv(result));
    return 0;
  }
  return output(json, result, () => reportTable(result, fleet?.name));
};

export const reportCommands: Record<string, Handler> = { report };
