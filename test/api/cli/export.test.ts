// `export` from the CLI (issue 25, item 3): a list as CSV or JSON lines with the console's filters,
// streamed to stdout or written whole to --out; a bad filter is an error that writes nothing. A real
// `serve` with devices seeded into its database, each command its own process.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type RunningServe } from '../../helpers/cli.ts';
import { parseCsv } from '../../helpers/csv.ts';
import { seededFleet, seededType, seedDevices } from '../../helpers/seed-devices.ts';

let serve: RunningServe;
const COUNT = 300;

beforeAll(async () => {
  serve = await startServe('mdm-cli-export-', { untilBanner: true });
  expect((await cli(['fleet', 'add', 'North'])).code).toBe(0);
  expect((await cli(['fleet', 'add', '=South'])).code).toBe(0);
  await seedDevices(serve.dataDir, { count: COUNT, fleets: ['North', '=South'], prefix: 'CLI' });
  expect((await cli(['invite', '--email', 'ana@example.com', '--fleet', 'North', '--no-email'])).code).toBe(0);
}, 60_000);
afterAll(() => serve?.stop('SIGKILL'));

const cli = (args: string[]) => runCli(serve.dataDir, args);

describe('cli export', { timeout: 240_000 }, () => {
  it('streams the filtered devices as CSV to stdout, formulas defused, and JSON lines to a file', async () => {
    const csv = await cli(['export', 'devices', '--fleet', 'north', '--type', 'apple']);
    expect(csv.code, csv.stderr).toBe(0);
    const [header, ...rows] = parseCsv(csv.stdout);
    expect(header!.slice(0, 4)).toEqual(['id', 'name', 'type', 'serial']);
    const north = [...Array(COUNT).keys()].filter((i) => seededFleet(i, 2) === 0 && seededType(i) === 'apple');
    expect(rows.map((row) => row[1])).toEqual(north.map((i) => `CLI${String(i).padStart(6, '0')}`));
    expect(new Set(rows.map((row) => row[header!.indexOf('fleet')]))).toEqual(new Set(['North']));

    // The same devices by the filter language.
    const where = await cli(['export', 'devices', '--where', 'fleet=North type=apple']);
    expect(where.code, where.stderr).toBe(0);
    expect(where.stdout).toBe(csv.stdout);

    const south = await cli(['export', 'devices', '--fleet', '=South', '--search', 'cli00001']);
    expect(south.code, south.stderr).toBe(0);
    expect(south.stdout).toContain(",'=South,");

    const out = join(serve.dataDir, 'devices.jsonl');
    const written = await cli(['export', 'devices', '--format', 'jsonl', '--out', out]);
    expect(written.code, written.stderr).toBe(0);
    expect(written.stdout).toMatch(
      /^Wrote [\d,]+ bytes of JSON lines to .*devices\.jsonl \(devices-\d{4}-\d{2}-\d{2}-\d{4}\.jsonl\)/,
    );
    const lines = readFileSync(out, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: number; fleet: string });
    expect(lines).toHaveLength(COUNT);
    expect(lines.map((line) => line.id)).toEqual([...lines.map((line) => line.id)].sort((a, b) => a - b));
    expect(existsSync(`${out}.part`)).toBe(false);
  });

  it('exports the other lists, and refuses a bad filter without writing anything', async () => {
    const invitations = await cli(['export', 'invitations', '--status', 'pending', '--format', 'jsonl']);
    expect(invitations.code, invitations.stderr).toBe(0);
    expect(
      invitations.stdout
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { email: string }).email),
    ).toEqual(['ana@example.com']);
    const job = await cli(['command', '--fleet', 'North', 'lock']);
    expect(job.code, job.stderr).toBe(0);
    const jobs = await cli(['export', 'jobs', '--format', 'jsonl']);
    expect(jobs.code, jobs.stderr).toBe(0);
    expect(
      jobs.stdout
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { action: string }).action),
    ).toEqual(['lock']);
    const results = await cli(['export', 'job-results']);
    expect(results.code, results.stderr).toBe(0);
    const [header = [], ...rows] = parseCsv(results.stdout);
    expect(rows).toHaveLength([...Array(COUNT).keys()].filter((i) => seededFleet(i, 2) === 0).length);
    const status = rows[0]![header.indexOf('status')]!;
    const some = await cli(['export', 'job-results', '--status', status, '--format', 'jsonl']);
    const lines = some.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { status: string });
    expect(lines.length).toBe(rows.filter((row) => row[header.indexOf('status')] === status).length);
    expect(lines.every((line) => line.status === status)).toBe(true);

    const audit = await cli(['export', 'audit', '--action', 'fleet.created']);
    expect(audit.code, audit.stderr).toBe(0);
    expect(parseCsv(audit.stdout)).toHaveLength(3);

    const out = join(serve.dataDir, 'nothing.csv');
    for (const [args, message] of [
      [['export', 'devices', '--fleet', 'Nowhere', '--out', out], 'Unknown fleet "Nowhere"'],
      [['export', 'devices', '--format', 'xml', '--out', out], '--format must be csv or jsonl, not "xml"'],
      [['export', 'devices', '--compliance', 'good', '--out', out], '--compliance must be'],
      [['export', 'devices', '--where', 'os<<10', '--out', out], 'where: at column 4'],
      [['export', 'gadgets'], 'cannot export "gadgets"'],
      [['export', 'devices', '--json'], 'use --format jsonl'],
    ] as const) {
      const refused = await cli([...args]);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr).toContain(message);
    }
    expect(existsSync(out)).toBe(false);
  });
});
