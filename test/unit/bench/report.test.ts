// The results table of `npm run bench` (bench/lib/report.ts): one row per figure of issue 24,
// each with its reference, ratio, goal and verdict computed from the run's figures, and the
// table written between its markers in docs/benchmarks.md with the text around it kept.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BEGIN,
  brokerResult,
  END,
  goalRows,
  resultsTable,
  writeReport,
  type GoalRow,
  type Results,
} from '../../../bench/lib/report.ts';
import type { BrokerRun, ConnectStep, HttpAtLimit } from '../../../bench/scenarios/broker.ts';
import type { BrokerModeRun } from '../../../bench/scenarios/broker-modes.ts';
import type { Throughput } from '../../../bench/scenarios/downloads.ts';
import type { EnrollmentFigures } from '../../../bench/scenarios/enrollment.ts';

const step = (held: number, perS: number, kib: number, cpuUs: number): ConnectStep => ({
  held,
  connected_in_step: held,
  failed: 0,
  seconds: held / perS,
  connections_per_s: perS,
  server_cpu_us_per_connection: cpuUs,
  rss_mib: (held * kib) / 1024,
  kib_per_connection: kib,
  marginal_kib_per_connection: kib,
});

const http = (enrollmentOk = true): HttpAtLimit => ({
  held: 19_832,
  admin: { ok: true, ms: 12 },
  enrollment: { ok: enrollmentOk, ms: 95 },
});

const brokerRun = (
  name: string,
  steps: ConnectStep[],
  fanout: { seconds: number; cpu: number },
  limit?: HttpAtLimit,
): BrokerRun => ({
  name,
  rss_idle_mib: 100,
  peak_rss_mib: 400,
  steps,
  fanout: {
    agents: steps.at(-1)!.held,
    received: steps.at(-1)!.held,
    seconds: fanout.seconds,
    server_cpu_us_per_command: fanout.cpu,
    how: 'test',
  },
  ...(limit ? { http_at_limit: limit } : {}),
  errors: [],
});

const enrollment = (cpuMs: number): EnrollmentFigures => ({
  enrollments: 9_500,
  concurrency: 64,
  enrollments_per_s: 500,
  cpu_ms_per_enrollment: cpuMs,
  cpu_share: 0.9,
  steps: [],
  errors: 0,
});

const throughput = (cpuPerGib: number): Throughput => ({
  requests: 6,
  concurrency: 2,
  seconds: 2,
  mib_per_s: 800,
  requests_per_s: 3,
  server_cpu_s_per_gib: cpuPerGib,
});

const mode = (name: BrokerModeRun['mode'], extra: Partial<BrokerModeRun>): BrokerModeRun => ({
  mode: name,
  measured: name,
  rss_idle_mib: 200,
  peak_rss_mib: 600,
  serve_rss_mib: 150,
  enrollments_per_s: 8,
  step: step(1_000, 70, 320, 900),
  fanout: { agents: 1_000, received: 1_000, seconds: 3 },
  errors: [],
  ...extra,
});

function results(): Results {
  const serve = brokerRun(
    'serve',
    [step(10_000, 2_400, 7.5, 200), step(19_832, 2_000, 9, 220)],
    { seconds: 1.2, cpu: 60 },
    http(),
  );
  const mosquitto = brokerRun('mosquitto', [step(10_000, 2_500, 4, 180), step(19_832, 2_500, 4, 190)], { seconds: 1, cpu: 45 });
  return {
    started_at: '2026-11-27T02:00:00.000Z',
    finished_at: '2026-11-27T02:40:00.000Z',
    duration_s: 2_400,
    git: { commit: '0123456789abcdef', dirty: false },
    scale: 1,
    machine: {
      cpu_model: 'Test CPU',
      cores: 2,
      memory_gib: 8,
      node: 'v22',
      kernel: '6',
      os: 'Debian',
      open_files_hard_limit: 20_000,
      load_average_at_start: [0.5],
      versions: { nginx: '1', mosquitto: '2', chromium: '1' },
    },
    load_average_at_end: [0.7],
    enrollment: {
      serve: enrollment(0.57),
      ceiling: enrollment(0.3),
      ratio: 1.9,
      rounds: 3,
      target: 2,
      met: true,
    },
    broker: brokerResult(serve, mosquitto, { limit: 20_000, cap: 19_832 }),
    downloads: {
      whole: { serve: throughput(0.3), nginx: throughput(0.1), ratio: 1, cpu_ratio: 3 },
      ranges: { serve: throughput(0.7), nginx: throughput(0.39), ratio: 0.9, cpu_ratio: 1.79 },
      target: 2,
      met: false,
    },
    deployments: {
      devices: 1_000,
      package_mib: 50,
      seconds_to_all_done: 70,
      done: 1_000,
      failed: 0,
      server_cpu_s: 30,
      server_rss_peak_mib: 300,
      server_vmhwm_mib: 310,
      serve_mib_per_s: 714,
      nginx_seconds: 66,
      nginx_mib_per_s: 757,
      ratio: 0.94,
      resumed: { serve: 0, nginx: 0 },
      nginx_cpu_s: 8,
      server_cpu_s_per_gib: 0.6,
      nginx_cpu_s_per_gib: 0.16,
    },
    broker_modes: {
      agents: 1_000,
      open_files_limit: 20_000,
      runs: [
        mode('mosquitto', {
          enroll_concurrency: 4,
          enrollments_per_s_halves: [9, 7],
          dynsec: {
            enrollments: 1_000,
            enrollment_changes: 2_000,
            per_enrollment: 2,
            reads: 100,
            read_changes: 100,
            waiting_reads: 40,
            waiting_changes: 1,
          },
        }),
        mode('rabbitmq', { serve_kib_per_connection: 20, serve_cpu_us_per_connection: 700, broker_cpu_us_per_connection: 9_000 }),
      ],
    },
  };
}

const row = (rows: GoalRow[], start: string) => {
  const found = rows.find((r) => r.figure.startsWith(start));
  expect(found, `a row "${start}…"`).toBeDefined();
  return found!;
};

describe('bench report: issue 24 goals', () => {
  it('has one row per figure of the issue, with its reference, ratio, goal and verdict', () => {
    const rows = goalRows(results());
    expect(rows.map((r) => r.figure.slice(0, 30))).toHaveLength(18);

    const enroll = row(rows, 'server CPU per enrollment');
    expect([enroll.ours, enroll.ratio, enroll.goal, enroll.verdict]).toEqual(['0.57 ms', '1.90x', '≤ 2.0x', '✅ met']);
    expect(enroll.reference).toContain('0.3 ms');

    const held = row(rows, 'agents one process holds');
    expect(held.ours).toContain('19,832');
    expect(held.ours).toContain('admin call 12 ms, enrollment 95 ms');
    expect(held.reference).toBe('mosquitto 19,832');
    expect(held.verdict).toBe('✅ met');

    // Memory: 7.5 KiB at 10,000 meets ≤ 8 KiB, 9 KiB at the limit does not.
    expect(row(rows, 'memory per MQTT connection at 10,000').verdict).toBe('✅ met');
    const memory = row(rows, 'memory per MQTT connection at 19,832');
    expect([memory.ratio, memory.goal, memory.verdict]).toEqual(['2.25x', '≤ 8 KiB', '❌ missed']);

    // Rate: 2,400 / 2,500 = 0.96 met; 2,000 / 2,500 = 0.8 missed.
    expect(row(rows, 'connection rate up to 10,000').verdict).toBe('✅ met');
    expect(row(rows, 'connection rate up to 19,832').ratio).toBe('0.80x');
    expect(row(rows, 'connection rate up to 19,832').verdict).toBe('❌ missed');

    const fanout = row(rows, 'a command to every one of 19,832');
    expect([fanout.ratio, fanout.goal, fanout.verdict]).toEqual(['1.20x', '≤ 1.5x', '✅ met']);
    expect(row(rows, '… broker CPU per command').ratio).toBe('1.33x');

    const deploy = row(rows, 'a 50 MiB package deployed to 1,000');
    expect([deploy.ratio, deploy.goal, deploy.verdict]).toEqual(['0.94x', "≥ 0.9x nginx's throughput", '✅ met']);
    expect(row(rows, '… server CPU per GiB sent during').verdict).toBe('❌ missed'); // 0.6 > 2 × 0.16

    expect(row(rows, 'server CPU per GiB sent, whole').verdict).toBe('❌ missed');
    expect(row(rows, 'server CPU per GiB sent, 1 MiB ranges').verdict).toBe('✅ met');

    expect(row(rows, 'Mosquitto-mode enrollments').ours).toBe('8/s (first half 9/s, second 7/s)');
    const changes = row(rows, '… dynamic-security changes per enrollment');
    expect([changes.ours, changes.goal, changes.verdict]).toEqual(['2 (2,000 for 1,000)', '≤ 1', '❌ missed']);
    const later = row(rows, '… dynamic-security changes per later record read');
    expect([later.ours, later.goal, later.verdict]).toEqual(['1 (100)', '≤ 1', '✅ met']);
    const nothing = row(rows, '… dynamic-security changes on record reads that change nothing');
    expect([nothing.ours, nothing.goal, nothing.verdict]).toEqual(['1', 'none', '❌ missed']);

    const rabbit = row(rows, 'RabbitMQ mode');
    expect(rabbit.ours).toBe('313 MiB / 19.5 MiB'); // 320 KiB and 20 KiB per connection, × 1,000
    expect(row(rows, '… connections/s').ours).toBe('70/s; 700 µs / 9,000 µs');
  });

  it('misses "as many as mosquitto" when HTTP did not answer at the limit or fewer agents were held', () => {
    const r = results();
    const serve = r.broker!.serve;
    const mosquitto = r.broker!.mosquitto;
    expect(brokerResult({ ...serve, http_at_limit: http(false) }, mosquitto, { limit: 20_000, cap: 19_832 }).met.held).toBe(
      false,
    );
    const { http_at_limit: _none, ...untried } = serve;
    expect(brokerResult(untried, mosquitto, { limit: 20_000, cap: 19_832 }).met.held).toBe(false);
    const fewer = { ...serve, steps: [serve.steps[0]!, { ...serve.steps[1]!, held: 19_808, failed: 24 }] };
    const missed = brokerResult(fewer, mosquitto, { limit: 20_000, cap: 19_832 });
    expect(missed.met.held).toBe(false);
    const rows = goalRows({ ...r, broker: missed });
    expect(row(rows, 'agents one process holds').verdict).toBe('❌ missed');
  });

  it('renders the rows as one Markdown table and writes it between the markers, keeping the rest', () => {
    const r = results();
    const table = resultsTable(r);
    const lines = table.split('\n');
    const header = lines.indexOf('| Figure | MDM Console | Reference (same run) | Ratio | Goal | |');
    expect(header).toBeGreaterThan(0);
    const goalLines = lines.slice(header + 2, lines.indexOf('', header));
    expect(goalLines).toHaveLength(goalRows(r).length);
    for (const line of goalLines) expect(line.split(/(?<!\\) \| /)).toHaveLength(6);
    expect(table).not.toContain('≤ 2.5x');
    expect(table).not.toContain('300 MB');

    const dir = mkdtempSync(join(tmpdir(), 'bench-report-'));
    dirs.push(dir);
    const file = join(dir, 'benchmarks.md');
    writeFileSync(file, `# Benchmarks\n\nbefore\n\n${BEGIN}\nold table\n${END}\n\nafter\n`);
    writeReport(file, r);
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith('# Benchmarks\n\nbefore\n\n')).toBe(true);
    expect(text.endsWith(`${END}\n\nafter\n`)).toBe(true);
    expect(text).not.toContain('old table');
    expect(text).toContain(table);
  });

  it('leaves out the table of every figure when the run measured none of its scenarios', () => {
    const { enrollment: _e, broker: _b, downloads: _d, deployments: _p, ...modesOnly } = results();
    const table = resultsTable(modesOnly);
    expect(table).toContain('| Figure | MDM Console | Reference (same run) | Ratio | Goal | |');
    expect(table).not.toContain('| Scenario | Figure |');
    // Every goal row is still there (Mosquitto 4, RabbitMQ 2), and the raw figures' line follows the last.
    const rows = goalRows(modesOnly);
    expect(rows).toHaveLength(6);
    const lines = table.split('\n');
    for (const goal of rows) expect(table).toContain(goal.figure);
    const last = lines.findIndex((line) => line.includes(rows.at(-1)!.figure));
    expect(lines.slice(last + 1, last + 3)).toEqual(['', 'Raw figures: `bench/results/latest.json`.']);
    expect(resultsTable(results())).toContain('| Scenario | Figure |');
  });
});

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
