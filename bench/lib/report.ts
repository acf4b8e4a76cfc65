// The results table of docs/benchmarks.md, written between two markers so the text around it
// (method, what limits each figure, fixes) stays as written.
import { brokerModesTable, type BrokerModesResult } from '../scenarios/broker-modes.ts';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { BrokerRun } from '../scenarios/broker.ts';
import type { ColdStartResult } from '../scenarios/cold-start.ts';
import type { ConsoleResult } from '../scenarios/console.ts';
import type { DeploymentResult } from '../scenarios/deployments.ts';
import type { PolicyBaselineResult } from '../scenarios/policies.ts';
import type { BulkPingResult } from '../scenarios/bulk-ping.ts';
import { clusterTable, type ClusterResult } from '../scenarios/cluster.ts';
import type { DownloadResult } from '../scenarios/downloads.ts';
import type { EnrollmentResult } from '../scenarios/enrollment.ts';
import type { Machine } from './machine.ts';

export interface BrokerResult {
  serve: BrokerRun;
  mosquitto: BrokerRun;
  /** Per step, serve's connection rate / mosquitto's. */
  rate_ratios: number[];
  held_target: number;
  connection_cap: number;
  rss_target_mib: number;
  rate_target: number;
  met: { held: boolean; rss: boolean; rate: boolean };
}

export interface Results {
  started_at: string;
  finished_at: string;
  duration_s: number;
  git: { commit: string; dirty: boolean };
  scale: number;
  machine: Machine;
  load_average_at_end: number[];
  build?: { ran: boolean; seconds: number };
  enrollment?: EnrollmentResult;
  console?: ConsoleResult;
  broker?: BrokerResult;
  broker_modes?: BrokerModesResult;
  downloads?: DownloadResult;
  deployments?: DeploymentResult;
  policies?: PolicyBaselineResult;
  cold_start?: ColdStartResult;
  bulk?: BulkPingResult;
  cluster?: ClusterResult;
}

export const BEGIN = '<!-- bench:results:begin (written by npm run bench) -->';
export const END = '<!-- bench:results:end -->';

const n = (value: number | undefined, digits = 0) =>
  value === undefined || !Number.isFinite(value)
    ? '—'
    : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
const x = (ratio: number | undefined) => (ratio === undefined || !Number.isFinite(ratio) ? '—' : `${ratio.toFixed(2)}x`);
const ok = (met: boolean | undefined) => (met === undefined ? '' : met ? '✅ met' : '❌ missed');

export function resultsTable(r: Results): string {
  const lines: string[] = [];
  const m = r.machine;
  lines.push(
    `Run of ${r.started_at} (${n(r.duration_s)} s in all), commit \`${r.git.commit.slice(0, 10)}\`${r.git.dirty ? ' with local changes' : ''}${r.scale !== 1 ? `, **scale ${r.scale}** (not a full run)` : ''}.`,
    `Machine: ${m.cpu_model}, ${m.cores} cores, ${m.memory_gib} GiB, ${m.os}, Linux ${m.kernel}, Node ${m.node}; ` +
      `nginx ${m.versions.nginx}, mosquitto ${m.versions.mosquitto}, Chromium ${m.versions.chromium}; open files limit ${n(m.open_files_hard_limit)}; ` +
      `load average ${m.load_average_at_start.join(' ')} at start, ${r.load_average_at_end.join(' ')} at the end.`,
    '',
    '| Scenario | Figure | MDM Console | Reference (same run) | Ratio | Target | |',
    '| --- | --- | ---: | ---: | ---: | --- | --- |',
  );
  const row = (...cells: string[]) => lines.push(`| ${cells.join(' | ')} |`);
  const e = r.enrollment;
  if (e) {
    row(
      'Enrollment',
      `server CPU per enrollment (5 requests, ${e.serve.concurrency} devices at a time)`,
      `${n(e.serve.cpu_ms_per_enrollment, 2)} ms`,
      `${n(e.ceiling.cpu_ms_per_enrollment, 2)} ms (bare Fastify, constant JSON)`,
      x(e.ratio),
      '≤ 2.5x',
      ok(e.met),
    );
    row(
      '',
      `enrollments/s (${n(e.serve.enrollments)} devices)`,
      n(e.serve.enrollments_per_s),
      n(e.ceiling.enrollments_per_s),
      x(e.serve.enrollments_per_s / e.ceiling.enrollments_per_s),
      '',
      '',
    );
    for (let i = 0; i < e.serve.steps.length; i++) {
      const s = e.serve.steps[i]!;
      const c = e.ceiling.steps[i]!;
      row(
        '',
        `${s.name} p50 / p99`,
        `${n(s.p50_ms, 1)} / ${n(s.p99_ms, 1)} ms`,
        `${n(c.p50_ms, 1)} / ${n(c.p99_ms, 1)} ms`,
        '',
        '',
        '',
      );
    }
  }
  const b = r.broker;
  if (b) {
    const last = b.serve.steps.at(-1);
    const lastM = b.mosquitto.steps.at(-1);
    const capped = b.connection_cap < b.held_target ? ` (${n(b.connection_cap)} here: open-files limit)` : '';
    row(
      'Broker',
      'agents held (authenticated, own topic via the ACL)',
      n(last?.held),
      n(lastM?.held),
      '',
      `${n(b.held_target)}${capped}`,
      ok(b.met.held),
    );
    b.serve.steps.forEach((step, i) => {
      const ref = b.mosquitto.steps[i];
      row(
        '',
        `connection rate, ${n(step.held)} held (connect + subscribe + online)`,
        `${n(step.connections_per_s)}/s`,
        `${n(ref?.connections_per_s)}/s (mosquitto)`,
        x(b.rate_ratios[i]),
        '≥ 0.9x',
        ok(b.rate_ratios[i]! >= b.rate_target),
      );
    });
    b.serve.steps.forEach((step, i) => {
      const ref = b.mosquitto.steps[i];
      row(
        '',
        `broker CPU per connection, ${n(step.held)} held`,
        `${n(step.server_cpu_us_per_connection)} µs`,
        `${n(ref?.server_cpu_us_per_connection)} µs`,
        x(step.server_cpu_us_per_connection / (ref?.server_cpu_us_per_connection ?? NaN)),
        '',
        '',
      );
    });
    b.serve.steps.forEach((step, i) => {
      const ref = b.mosquitto.steps[i];
      row(
        '',
        `process RSS, ${n(step.held)} held`,
        `${n(step.rss_mib)} MiB`,
        `${n(ref?.rss_mib, 1)} MiB`,
        '',
        i === b.serve.steps.length - 1 ? `≤ ${b.rss_target_mib} MB` : '',
        i === b.serve.steps.length - 1 ? ok(b.met.rss) : '',
      );
    });
    row(
      '',
      'peak RSS over the whole run (fan-out included)',
      `${n(b.serve.peak_rss_mib)} MiB`,
      `${n(b.mosquitto.peak_rss_mib, 1)} MiB`,
      '',
      '',
      '',
    );
    row(
      '',
      'memory per connection (RSS growth / connections held)',
      `${n(last?.kib_per_connection, 1)} KiB`,
      `${n(lastM?.kib_per_connection, 1)} KiB`,
      x((last?.kib_per_connection ?? NaN) / (lastM?.kib_per_connection ?? NaN)),
      '',
      '',
    );
    if (b.serve.steps.length > 1) {
      row(
        '',
        'memory per connection, last step only (marginal)',
        `${n(last?.marginal_kib_per_connection, 1)} KiB`,
        `${n(lastM?.marginal_kib_per_connection, 1)} KiB`,
        x((last?.marginal_kib_per_connection ?? NaN) / (lastM?.marginal_kib_per_connection ?? NaN)),
        '',
        '',
      );
    }
    row(
      '',
      `command to every agent (${n(b.serve.fanout.agents)}), until all received`,
      `${n(b.serve.fanout.seconds, 2)} s`,
      `${n(b.mosquitto.fanout.seconds, 2)} s`,
      x(b.serve.fanout.seconds / b.mosquitto.fanout.seconds),
      '',
      b.serve.fanout.received === b.serve.fanout.agents ? '' : `${n(b.serve.fanout.received)} received`,
    );
    row(
      '',
      'broker CPU per command in that fan-out',
      `${n(b.serve.fanout.server_cpu_us_per_command)} µs`,
      `${n(b.mosquitto.fanout.server_cpu_us_per_command)} µs`,
      x(b.serve.fanout.server_cpu_us_per_command / b.mosquitto.fanout.server_cpu_us_per_command),
      '',
      '',
    );
  }
  const d = r.downloads;
  if (d) {
    row(
      'Downloads',
      `whole 256 MiB package (${d.whole.serve.concurrency} at a time)`,
      `${n(d.whole.serve.mib_per_s)} MiB/s`,
      `${n(d.whole.nginx.mib_per_s)} MiB/s (nginx)`,
      x(d.whole.ratio),
      '≥ 0.8x',
      ok(d.whole.ratio >= d.target),
    );
    row(
      '',
      `1 MiB ranges (${d.ranges.serve.concurrency} at a time)`,
      `${n(d.ranges.serve.mib_per_s)} MiB/s`,
      `${n(d.ranges.nginx.mib_per_s)} MiB/s (nginx)`,
      x(d.ranges.ratio),
      '≥ 0.8x',
      ok(d.ranges.ratio >= d.target),
    );
    row(
      '',
      'server CPU per GiB sent, whole / ranges',
      `${n(d.whole.serve.server_cpu_s_per_gib, 2)} / ${n(d.ranges.serve.server_cpu_s_per_gib, 2)} s`,
      `${n(d.whole.nginx.server_cpu_s_per_gib, 2)} / ${n(d.ranges.nginx.server_cpu_s_per_gib, 2)} s`,
      '',
      '',
      '',
    );
  }
  const p = r.deployments;
  if (p) {
    row(
      'Deployments',
      `${n(p.package_mib)} MiB package to ${n(p.devices)} connected devices: POST until every task done (${n(p.done)} done, ${n(p.failed)} failed)`,
      `${n(p.seconds_to_all_done, 1)} s`,
      `${n(p.nginx_seconds, 1)} s (nginx: the same downloads only)`,
      x(p.seconds_to_all_done / p.nginx_seconds),
      '',
      p.failed === 0 && p.done === p.devices ? '' : '❌ not all done',
    );
    row(
      '',
      'download throughput (8 MiB ranges, SHA-256 checked by each device)',
      `${n(p.serve_mib_per_s)} MiB/s`,
      `${n(p.nginx_mib_per_s)} MiB/s (nginx)`,
      x(p.ratio),
      '',
      '',
    );
    row(
      '',
      'server CPU / peak RSS while deploying',
      `${n(p.server_cpu_s, 1)} s / ${n(p.server_rss_peak_mib)} MiB`,
      '',
      '',
      '',
      '',
    );
    if (p.resumed)
      row(
        '',
        'requests retried after a network error or 503 (resumed at the byte reached)',
        n(p.resumed.serve),
        `${n(p.resumed.nginx)} (nginx)`,
        '',
        '',
        '',
      );
  }
  const pb = r.policies;
  if (pb) {
    row(
      'Policies',
      `recommended baseline (${n(pb.policies)} policies) to ${n(pb.devices)} connected devices: first POST until every task done (${n(pb.done)} done, ${n(pb.failed)} failed, ${n(pb.incompatible)} incompatible of ${n(pb.tasks)})`,
      `${n(pb.seconds_to_all_done, 1)} s`,
      '',
      '',
      '',
      pb.done + pb.failed + pb.incompatible === pb.tasks && pb.tasks === pb.devices * pb.policies ? '' : '❌ not all done',
    );
    row(
      '',
      'messages: retained policies published / delivered to and acted on by devices / status reports back',
      `${n(pb.published)} / ${n(pb.delivered)} / ${n(pb.reports)}`,
      '',
      '',
      '',
      '',
    );
    row(
      '',
      'server CPU / peak RSS while applying',
      `${n(pb.server_cpu_s, 1)} s / ${n(pb.server_rss_peak_mib)} MiB`,
      '',
      '',
      '',
      '',
    );
  }
  const c = r.console;
  if (c) {
    row(
      'Console',
      `devices page shown with ${n(c.devices_page.agents)} agents (median of ${c.devices_page.runs_ms.length})`,
      `${n(c.devices_page.median_ms)} ms`,
      `${n(c.devices_page.list_fetch_median_ms)} ms (the page fetching + parsing the list)`,
      x(c.devices_page.ratio),
      '< 1 s',
      ok(c.devices_page.met),
    );
    const b50 = c.live_row.breakdown_p50_ms;
    row(
      '',
      `enrollment → row "Enrolled", p50 / p95 (${c.live_row.shown} of ${c.live_row.enrollments}; p50 = ${n(b50.until_event)} until its event, ${n(b50.event_to_row)} batching + render; ${c.live_row.agent_fetches} detail fetches)`,
      `${n(c.live_row.p50_ms)} / ${n(c.live_row.p95_ms)} ms`,
      `${n(c.live_row.event_p50_ms)} / ${n(c.live_row.event_p95_ms)} ms (its event reaching the page)`,
      x(c.live_row.ratio_p50),
      'p95 < 250 ms',
      ok(c.live_row.met),
    );
  }
  const s = r.cold_start;
  if (s) {
    row(
      'Cold start',
      'serve → server.json, fresh data dir (median)',
      `${n(s.median_fresh_ms)} ms`,
      `${n(s.median_bare_ms)} ms (bare Fastify listening)`,
      x(s.median_fresh_ms / s.median_bare_ms),
      '< 1.5 s',
      ok(s.median_fresh_ms < s.target_ms),
    );
    row(
      '',
      `serve → server.json, data dir with ${n(s.existing_agents)} agents (median)`,
      `${n(s.median_existing_ms)} ms`,
      '',
      x(s.median_existing_ms / s.median_bare_ms),
      '< 1.5 s',
      ok(s.median_existing_ms < s.target_ms),
    );
  }
  const k = r.bulk;
  if (k) {
    row(
      'Bulk ping',
      `one POST /api/jobs → every one of ${n(k.agents)} connected agents has its ping (the request answered in ${n(k.job.request_ms)} ms; every answer recorded after ${n(k.job.answered_s ?? undefined, 2)} s)`,
      `${n(k.job.seconds, 2)} s`,
      `${n(k.mosquitto.seconds, 2)} s (mosquitto, the same messages); a request per agent: ${n(k.per_request.seconds, 2)} s`,
      x(k.ratio_to_mosquitto),
      '',
      '',
    );
  }
  lines.push('', `Raw figures: \`bench/results/${r.scale === 1 ? 'latest' : 'partial'}.json\`.`);
  if (r.broker_modes) lines.push(...brokerModesTable(r.broker_modes));
  if (r.cluster) lines.push(...clusterTable(r.cluster));
  return lines.join('\n');
}

/** Replaces the generated part of docs/benchmarks.md (or appends it). */
export function writeReport(file: string, results: Results): void {
  const table = `${BEGIN}\n${resultsTable(results)}\n${END}`;
  const text = existsSync(file) ? readFileSync(file, 'utf8') : `# Benchmarks\n\n${BEGIN}\n${END}\n`;
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  const next =
    start === -1 || end === -1
      ? `${text.trimEnd()}\n\n${table}\n`
      : `${text.slice(0, start)}${table}${text.slice(end + END.length)}`;
  writeFileSync(file, next);
}
