// The results table of docs/benchmarks.md, written between two markers so the text around it
// (method, what limits each figure, fixes) stays as written.
import { brokerModesTable, DYNSEC_GOAL, type BrokerModesResult } from '../scenarios/broker-modes.ts';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { BrokerRun } from '../scenarios/broker.ts';
import type { ColdStartResult } from '../scenarios/cold-start.ts';
import type { ConsoleResult } from '../scenarios/console.ts';
import { DEPLOYMENT_GOAL, type DeploymentResult } from '../scenarios/deployments.ts';
import type { PolicyBaselineResult } from '../scenarios/policies.ts';
import type { BulkPingResult } from '../scenarios/bulk-ping.ts';
import { clusterTable, type ClusterResult } from '../scenarios/cluster.ts';
import { DOWNLOAD_CPU_GOAL, type DownloadResult } from '../scenarios/downloads.ts';
import { ENROLLMENT_GOAL, type EnrollmentResult } from '../scenarios/enrollment.ts';
import type { Machine } from './machine.ts';
import { round } from './stats.ts';

/** Issue 24's goals, each against its reference measured in the same run. */
export const GOALS = {
  /** serve CPU per enrollment / bare Fastify's: at most. */
  enrollment: ENROLLMENT_GOAL,
  /** Memory per MQTT connection, KiB: at most. */
  kib_per_connection: 8,
  /** Connection rate / mosquitto's: at least. */
  connection_rate: 0.9,
  /** A command to every agent, time and broker CPU per command / mosquitto's: at most. */
  fanout: 1.5,
  /** A deployment's download throughput / nginx's: at least. */
  deployment: DEPLOYMENT_GOAL,
  /** Server CPU per GiB sent / nginx's: at most. */
  download_cpu: DOWNLOAD_CPU_GOAL,
  /** Mosquitto mode: dynamic-security changes per enrollment, at most (and none on a read that changes nothing). */
  dynsec_per_enrollment: DYNSEC_GOAL,
} as const;

export interface BrokerResult {
  serve: BrokerRun;
  mosquitto: BrokerRun;
  /** Per step, serve's connection rate / mosquitto's. */
  rate_ratios: number[];
  open_files_limit: number;
  /** Agents tried at the last step: what one process has left of the open-files limit. */
  connection_cap: number;
  met: { held: boolean; memory: boolean; rate: boolean; fanout_seconds: boolean; fanout_cpu: boolean };
}

/** The broker scenario's figures against issue 24's goals. */
export function brokerResult(serve: BrokerRun, mosquitto: BrokerRun, limits: { limit: number; cap: number }): BrokerResult {
  const rateRatios = serve.steps.map((step, i) => round(step.connections_per_s / (mosquitto.steps[i]?.connections_per_s ?? NaN)));
  const http = serve.http_at_limit;
  return {
    serve,
    mosquitto,
    rate_ratios: rateRatios,
    open_files_limit: limits.limit,
    connection_cap: limits.cap,
    met: {
      held:
        (serve.steps.at(-1)?.held ?? 0) >= (mosquitto.steps.at(-1)?.held ?? Infinity) &&
        http !== undefined &&
        http.admin.ok &&
        http.enrollment.ok,
      memory: serve.steps.every((step) => step.kib_per_connection <= GOALS.kib_per_connection),
      rate: rateRatios.every((ratio) => ratio >= GOALS.connection_rate),
      fanout_seconds:
        serve.fanout.received === serve.fanout.agents && serve.fanout.seconds <= GOALS.fanout * mosquitto.fanout.seconds,
      fanout_cpu: serve.fanout.server_cpu_us_per_command <= GOALS.fanout * mosquitto.fanout.server_cpu_us_per_command,
    },
  };
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

/** One figure of issue 24's table: ours, its reference in the same run, their ratio, the goal, met or not. */
export interface GoalRow {
  figure: string;
  ours: string;
  reference: string;
  ratio: string;
  goal: string;
  /** ✅ met, ❌ missed, or – where the issue asks for the figure to be stated, not for a bound. */
  verdict: string;
}

const kib = (value: number | undefined) => `${n(value, 1)} KiB`;

/** Issue 24's table, one row per figure, from whatever scenarios this run measured. */
export function goalRows(r: Results): GoalRow[] {
  const rows: GoalRow[] = [];
  const add = (row: GoalRow) => rows.push(row);
  const e = r.enrollment;
  if (e)
    add({
      figure: `server CPU per enrollment (5 requests, ${e.serve.concurrency} devices at a time, ${n(e.serve.enrollments)} enrollments)`,
      ours: `${n(e.serve.cpu_ms_per_enrollment, 2)} ms`,
      reference: `${n(e.ceiling.cpu_ms_per_enrollment, 2)} ms, bare Fastify answering the same requests`,
      ratio: x(e.ratio),
      goal: `≤ ${GOALS.enrollment.toFixed(1)}x`,
      verdict: ok(e.ratio <= GOALS.enrollment),
    });
  const b = r.broker;
  if (b) {
    const last = b.serve.steps.at(-1);
    const lastM = b.mosquitto.steps.at(-1);
    const http = b.serve.http_at_limit;
    const httpText = http
      ? `; at ${n(http.held)} held: admin call ${http.admin.ok ? `${n(http.admin.ms)} ms` : 'failed'}, enrollment ${http.enrollment.ok ? `${n(http.enrollment.ms)} ms` : 'failed'}`
      : '; HTTP not tried';
    add({
      figure: `agents one process holds under a ${n(b.open_files_limit)}-descriptor limit (${n(b.connection_cap)} tried), HTTP still answering`,
      ours: `${n(last?.held)}${httpText}`,
      reference: `mosquitto ${n(lastM?.held)}`,
      ratio: x((last?.held ?? NaN) / (lastM?.held ?? NaN)),
      goal: 'as many as mosquitto, an admin call and an enrollment answered',
      verdict: ok(b.met.held),
    });
    b.serve.steps.forEach((step, i) => {
      const ref = b.mosquitto.steps[i];
      add({
        figure: `memory per MQTT connection at ${n(step.held)} agents (RSS growth / connections held)`,
        ours: `${kib(step.kib_per_connection)} (${n(step.rss_mib)} MiB RSS)`,
        reference: `mosquitto ${kib(ref?.kib_per_connection)} (${n(ref?.rss_mib, 1)} MiB)`,
        ratio: x(step.kib_per_connection / (ref?.kib_per_connection ?? NaN)),
        goal: `≤ ${GOALS.kib_per_connection} KiB`,
        verdict: ok(step.kib_per_connection <= GOALS.kib_per_connection),
      });
    });
    b.serve.steps.forEach((step, i) => {
      const ref = b.mosquitto.steps[i];
      add({
        figure: `connection rate up to ${n(step.held)} agents (connect + subscribe + online; broker CPU per connection)`,
        ours: `${n(step.connections_per_s)}/s (${n(step.server_cpu_us_per_connection)} µs)`,
        reference: `mosquitto ${n(ref?.connections_per_s)}/s (${n(ref?.server_cpu_us_per_connection)} µs)`,
        ratio: x(b.rate_ratios[i]),
        goal: `≥ ${GOALS.connection_rate}x`,
        verdict: ok((b.rate_ratios[i] ?? 0) >= GOALS.connection_rate),
      });
    });
    const f = b.serve.fanout;
    const fm = b.mosquitto.fanout;
    add({
      figure: `a command to every one of ${n(f.agents)} agents, until all received (one bulk job)`,
      ours: `${n(f.seconds, 2)} s${f.received === f.agents ? '' : ` (${n(f.received)} received)`}`,
      reference: `mosquitto ${n(fm.seconds, 2)} s`,
      ratio: x(f.seconds / fm.seconds),
      goal: `≤ ${GOALS.fanout}x`,
      verdict: ok(b.met.fanout_seconds),
    });
    add({
      figure: '… broker CPU per command in that fan-out',
      ours: `${n(f.server_cpu_us_per_command)} µs`,
      reference: `mosquitto ${n(fm.server_cpu_us_per_command)} µs`,
      ratio: x(f.server_cpu_us_per_command / fm.server_cpu_us_per_command),
      goal: `≤ ${GOALS.fanout}x`,
      verdict: ok(b.met.fanout_cpu),
    });
  }
  const p = r.deployments;
  if (p) {
    const complete = p.failed === 0 && p.done === p.devices;
    add({
      figure: `a ${n(p.package_mib)} MiB package deployed to ${n(p.devices)} devices (POST until every task done${complete ? '' : `: ${n(p.done)} done, ${n(p.failed)} failed`})`,
      ours: `${n(p.seconds_to_all_done, 1)} s, ${n(p.serve_mib_per_s)} MiB/s, ${n(p.server_cpu_s, 1)} s server CPU`,
      reference: `nginx serving the same downloads ${n(p.nginx_seconds, 1)} s, ${n(p.nginx_mib_per_s)} MiB/s`,
      ratio: x(p.ratio),
      goal: `≥ ${GOALS.deployment}x nginx's throughput`,
      verdict: ok(complete && p.ratio >= GOALS.deployment),
    });
    if (p.server_cpu_s_per_gib !== undefined)
      add({
        figure: '… server CPU per GiB sent during that deployment (its MQTT reports included)',
        ours: `${n(p.server_cpu_s_per_gib, 2)} s`,
        reference: `nginx ${n(p.nginx_cpu_s_per_gib, 2)} s`,
        ratio: x(p.server_cpu_s_per_gib / p.nginx_cpu_s_per_gib),
        goal: `≤ ${GOALS.download_cpu}x`,
        verdict: ok(p.server_cpu_s_per_gib <= GOALS.download_cpu * p.nginx_cpu_s_per_gib),
      });
  }
  const d = r.downloads;
  if (d)
    for (const [kind, figures] of [
      ['whole 256 MiB package', d.whole],
      ['1 MiB ranges', d.ranges],
    ] as const)
      add({
        figure: `server CPU per GiB sent, ${kind} (${figures.serve.concurrency} at a time)`,
        ours: `${n(figures.serve.server_cpu_s_per_gib, 2)} s`,
        reference: `nginx ${n(figures.nginx.server_cpu_s_per_gib, 2)} s`,
        ratio: x(figures.cpu_ratio),
        goal: `≤ ${GOALS.download_cpu}x`,
        verdict: ok(figures.cpu_ratio <= GOALS.download_cpu),
      });
  const modes = r.broker_modes;
  const mosquitto = modes?.runs.find((run) => run.mode === 'mosquitto');
  if (modes && mosquitto) {
    add({
      figure: `Mosquitto-mode enrollments, ${n(mosquitto.fanout.agents)} agents enrolled ${n(mosquitto.enroll_concurrency)} at a time`,
      ours: `${n(mosquitto.enrollments_per_s, 1)}/s${mosquitto.enrollments_per_s_halves ? ` (first half ${n(mosquitto.enrollments_per_s_halves[0], 1)}/s, second ${n(mosquitto.enrollments_per_s_halves[1], 1)}/s)` : ''}`,
      reference: '–',
      ratio: '',
      goal: 'stated',
      verdict: '–',
    });
    const dynsec = mosquitto.dynsec;
    add({
      figure: `… dynamic-security changes per enrollment (each rewrites the broker's whole JSON file; counted by strace)`,
      ours: dynsec
        ? `${n(dynsec.per_enrollment, 2)} (${n(dynsec.enrollment_changes)} for ${n(dynsec.enrollments)})`
        : 'not measured',
      reference: '–',
      ratio: '',
      goal: `≤ ${GOALS.dynsec_per_enrollment}`,
      verdict: dynsec ? ok(dynsec.per_enrollment <= GOALS.dynsec_per_enrollment) : '',
    });
    add({
      figure: `… dynamic-security changes per later record read of an enrolled device (each draws a new MQTT password the broker must learn)${dynsec ? `: ${n(dynsec.reads)} reads` : ''}`,
      ours: dynsec ? `${n(dynsec.read_changes / dynsec.reads, 2)} (${n(dynsec.read_changes)})` : 'not measured',
      reference: '–',
      ratio: '',
      goal: '≤ 1',
      verdict: dynsec ? ok(dynsec.read_changes <= dynsec.reads) : '',
    });
    add({
      figure: `… dynamic-security changes on record reads that change nothing the broker must know${dynsec ? ` (${n(dynsec.waiting_reads)} reads by devices waiting for approval)` : ''}`,
      ours: dynsec ? n(dynsec.waiting_changes) : 'not measured',
      reference: '–',
      ratio: '',
      goal: 'none',
      verdict: dynsec ? ok(dynsec.waiting_changes === 0) : '',
    });
  }
  const rabbit = modes?.runs.find((run) => run.mode === 'rabbitmq');
  if (modes && rabbit) {
    add({
      figure: `RabbitMQ mode (2 nodes), memory per 1,000 agents at ${n(rabbit.step.held)}: RabbitMQ's nodes / ours (the backend)`,
      ours: `${n((rabbit.step.kib_per_connection * 1000) / 1024)} MiB / ${n(((rabbit.serve_kib_per_connection ?? NaN) * 1000) / 1024, 1)} MiB`,
      reference: '–',
      ratio: '',
      goal: 'stated in docs/brokers.md',
      verdict: '–',
    });
    add({
      figure: "… connections/s; CPU per connection: ours (the auth round trips) / RabbitMQ's",
      ours: `${n(rabbit.step.connections_per_s, 1)}/s; ${n(rabbit.serve_cpu_us_per_connection)} µs / ${n(rabbit.broker_cpu_us_per_connection)} µs`,
      reference: '–',
      ratio: '',
      goal: 'stated in docs/brokers.md',
      verdict: '–',
    });
  }
  return rows;
}

/** The goal rows as a Markdown table. */
export function goalTable(r: Results): string[] {
  const rows = goalRows(r);
  if (rows.length === 0) return [];
  return [
    '',
    "Issue 24's figures, each beside its reference measured in this run:",
    '',
    '| Figure | MDM Console | Reference (same run) | Ratio | Goal | |',
    '| --- | ---: | ---: | ---: | --- | --- |',
    ...rows.map((row) => `| ${[row.figure, row.ours, row.reference, row.ratio, row.goal, row.verdict].map(cell).join(' | ')} |`),
  ];
}

/** A table cell: no line break, no unescaped pipe. */
const cell = (text: string) => text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');

export function resultsTable(r: Results): string {
  const lines: string[] = [];
  const m = r.machine;
  lines.push(
    `Run of ${r.started_at} (${n(r.duration_s)} s in all), commit \`${r.git.commit.slice(0, 10)}\`${r.git.dirty ? ' with local changes' : ''}${r.scale !== 1 ? `, **scale ${r.scale}** (not a full run)` : ''}.`,
    `Machine: ${m.cpu_model}, ${m.cores} cores, ${m.memory_gib} GiB, ${m.os}, Linux ${m.kernel}, Node ${m.node}; ` +
      `nginx ${m.versions.nginx}, mosquitto ${m.versions.mosquitto}, Chromium ${m.versions.chromium}; open files limit ${n(m.open_files_hard_limit)}; ` +
      `load average ${m.load_average_at_start.join(' ')} at start, ${r.load_average_at_end.join(' ')} at the end.`,
    ...goalTable(r),
  );
  const detailsHeader = lines.length;
  lines.push(
    '',
    'Every figure of the run (those with a goal above have it there):',
    '',
    '| Scenario | Figure | MDM Console | Reference (same run) | Ratio | Target | |',
    '| --- | --- | ---: | ---: | ---: | --- | --- |',
  );
  const detailsFrom = lines.length;
  const row = (...cells: string[]) => lines.push(`| ${cells.join(' | ')} |`);
  const e = r.enrollment;
  if (e) {
    row(
      'Enrollment',
      `server CPU per enrollment (5 requests, ${e.serve.concurrency} devices at a time)`,
      `${n(e.serve.cpu_ms_per_enrollment, 2)} ms`,
      `${n(e.ceiling.cpu_ms_per_enrollment, 2)} ms (bare Fastify, constant JSON)`,
      x(e.ratio),
      '',
      '',
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
    row(
      'Broker',
      `agents held (authenticated, own topic via the ACL) of ${n(b.connection_cap)} tried (open-files limit ${n(b.open_files_limit)})`,
      n(last?.held),
      n(lastM?.held),
      '',
      '',
      '',
    );
    b.serve.steps.forEach((step, i) => {
      const ref = b.mosquitto.steps[i];
      row(
        '',
        `connection rate, ${n(step.held)} held (connect + subscribe + online)`,
        `${n(step.connections_per_s)}/s`,
        `${n(ref?.connections_per_s)}/s (mosquitto)`,
        x(b.rate_ratios[i]),
        '',
        '',
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
      row('', `process RSS, ${n(step.held)} held`, `${n(step.rss_mib)} MiB`, `${n(ref?.rss_mib, 1)} MiB`, '', '', '');
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
      '',
      '',
    );
    row(
      '',
      `1 MiB ranges (${d.ranges.serve.concurrency} at a time)`,
      `${n(d.ranges.serve.mib_per_s)} MiB/s`,
      `${n(d.ranges.nginx.mib_per_s)} MiB/s (nginx)`,
      x(d.ranges.ratio),
      '',
      '',
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
  // A run of scenarios with no row here (broker-modes, cluster alone): no empty table.
  if (lines.length === detailsFrom) lines.splice(detailsHeader);
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
