// `npm run bench`: every scenario of docs/benchmarks.md, each next to its reference measured in
// this same run on this same machine. Writes bench/results/latest.json and the results table
// of docs/benchmarks.md. Loopback only; every process started here is stopped here.
//
//   npm run bench [-- --scale 0.1] [--only enrollment,console,broker,broker-modes,downloads,deployments,policies,cold-start,bulk,cluster] [--modes mosquitto,rabbitmq] [--keep]
//   npm run bench -- --only cluster [--cluster-enroll 300] [--cluster-seed 10000] [--cluster-setups sqlite,postgres,cluster-3]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { EnrolledAgent } from './load/enroll.ts';
import { enrollLoad } from './load/enroll.ts';
import { inviteMany } from './lib/admin.ts';
import { describeMachine } from './lib/machine.ts';
import { childFileLimit, ROOT, startServe, workDir, type Serve } from './lib/process.ts';
import { brokerResult, resultsTable, writeReport, type Results } from './lib/report.ts';
import { round } from './lib/stats.ts';
import { connectionCap, runMosquitto, runServeBroker } from './scenarios/broker.ts';
import { brokerModesScenario, type BrokerModeName } from './scenarios/broker-modes.ts';
import { coldStartScenario } from './scenarios/cold-start.ts';
import { consoleBuildNeeded, consoleScenario } from './scenarios/console.ts';
import { downloadScenario } from './scenarios/downloads.ts';
import { enrollmentScenario } from './scenarios/enrollment.ts';
import { deploymentScenario } from './scenarios/deployments.ts';
import { policyBaselineScenario } from './scenarios/policies.ts';
import { bulkPingScenario } from './scenarios/bulk-ping.ts';
import { clusterScenario, type ClusterSetupName } from './scenarios/cluster.ts';

const SCENARIOS = [
  'enrollment',
  'console',
  'broker',
  'broker-modes',
  'downloads',
  'deployments',
  'policies',
  'cold-start',
  'bulk',
  'cluster',
] as const;
type Scenario = (typeof SCENARIOS)[number];

const { values } = parseArgs({
  options: {
    scale: { type: 'string' },
    only: { type: 'string' },
    keep: { type: 'boolean' },
    build: { type: 'boolean' },
    out: { type: 'string' },
    /** broker-modes: some of embedded, mosquitto, rabbitmq (default all three). */
    modes: { type: 'string' },
    /** cluster: devices enrolled on each set-up (default 300; they are also the fan-out's agents). */
    'cluster-enroll': { type: 'string' },
    /** cluster: agents seeded for the devices page (default 10,000). */
    'cluster-seed': { type: 'string' },
    /** cluster: some of sqlite, postgres, cluster-3 (default all three). */
    'cluster-setups': { type: 'string' },
  },
});
const scale = Number(values.scale ?? 1);
if (!(scale > 0 && scale <= 1)) throw new Error('--scale is a number in (0, 1]');
const only = new Set<Scenario>((values.only?.split(',').map((s) => s.trim()) as Scenario[] | undefined) ?? SCENARIOS);
for (const name of only)
  if (!SCENARIOS.includes(name)) throw new Error(`unknown scenario ${name}; one of ${SCENARIOS.join(', ')}`);
const full =
  scale === 1 &&
  only.size === SCENARIOS.length &&
  !values.modes &&
  !values['cluster-enroll'] &&
  !values['cluster-seed'] &&
  !values['cluster-setups'];
const count = (n: number, min = 10) => Math.max(min, Math.round(n * scale));

const N = {
  /** Devices enrolled while measuring (warm-up included); also the devices page's size. */
  enrolled: count(10_000),
  warm: count(500, 50),
  ceiling: count(6_000, 300),
  /** Agents each broker mode holds (embedded, Mosquitto, 2-node RabbitMQ), enrolled afresh for each. */
  modeAgents: count(5_000, 100),
  /** Agents the broker holds at the last step (capped by the open-files limit). */
  agents: count(20_000),
  liveEnrollments: count(100),
  /** Connected agents a bulk ping (one POST /api/jobs) reaches. */
  bulkAgents: count(10_000),
};

const started = new Date();
const t0 = performance.now();
const phase = (name: string) => console.log(`\n[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${name}`);
const git = {
  commit: execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(),
  dirty: execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '',
};
const machine = describeMachine();
console.log(
  `MDM Console benchmarks — ${machine.cpu_model}, ${machine.cores} cores, ${machine.memory_gib} GiB, Node ${machine.node}${full ? '' : ` (partial run: scale ${scale}, ${[...only].join(', ')})`}`,
);

const dir = workDir('run');
const dataDir = join(dir, 'data');
const results: Results = {
  started_at: started.toISOString(),
  finished_at: '',
  duration_s: 0,
  git,
  scale,
  machine,
  load_average_at_end: [],
};

let serve: Serve | null = null;
const startServeHere = (name: string) => startServe({ dataDir, logFile: join(dir, `serve-${name}.log`) });

try {
  if (only.has('console') && (values.build || consoleBuildNeeded())) {
    phase('building the console (npm run build)');
    const buildStarted = performance.now();
    const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    writeFileSync(join(dir, 'build.log'), `${build.stdout}\n${build.stderr}`);
    if (build.status !== 0) throw new Error(`npm run build failed; see ${join(dir, 'build.log')}`);
    results.build = { ran: true, seconds: round((performance.now() - buildStarted) / 1000) };
  }

  // 1. Enrollment — also fills the data dir the console, broker and cold-start scenarios use.
  let agents: EnrolledAgent[] = [];
  const needsEnrolled = (['enrollment', 'console', 'broker', 'cold-start'] as const).some((name) => only.has(name));
  if (needsEnrolled) {
    phase(`enrollment: ${N.enrolled} devices, 64 at a time, then the bare Fastify ceiling`);
    serve = await startServeHere('enrollment');
    const { result, enrolled } = await enrollmentScenario(serve, dir, {
      count: N.enrolled - N.warm,
      warm: N.warm,
      concurrency: 64,
      ceilingCount: N.ceiling,
      rounds: 3,
    });
    agents = enrolled;
    if (only.has('enrollment')) results.enrollment = result;
    console.log(
      `  serve ${result.serve.cpu_ms_per_enrollment} ms CPU/enrollment, ceiling ${result.ceiling.cpu_ms_per_enrollment} ms: ${result.ratio}x`,
    );
  }

  // 4. Console — on the data dir with exactly N.enrolled agents.
  if (only.has('console')) {
    phase(`console: devices page with ${agents.length} agents, then ${N.liveEnrollments} live enrollments`);
    results.console = await consoleScenario(serve!, { agents: agents.length, enrollments: N.liveEnrollments, pageRuns: 3 });
    console.log(
      `  devices page ${results.console.devices_page.median_ms} ms; live row p50 ${results.console.live_row.p50_ms} ms, p95 ${results.console.live_row.p95_ms} ms`,
    );
  }

  // More devices for the broker (not measured).
  if (only.has('broker') && agents.length < N.agents) {
    phase(`enrolling ${N.agents - agents.length} more devices for the broker`);
    const invites = await inviteMany(serve!.info, N.agents - agents.length, 'broker');
    const load = await enrollLoad(invites, 64, { serialPrefix: 'R58M' });
    if (load.errors.length > 0) throw new Error(`enrollment failed: ${load.errors.find(Boolean)}`);
    agents = [...agents, ...load.enrolled];
  }
  await serve?.stop();
  serve = null;

  // 2. Broker: a fresh serve process on that data dir, then mosquitto.
  if (only.has('broker')) {
    serve = await startServeHere('broker');
    // What one process has left in open files here (the machine's limit less what serve has open
    // and some spare): the last step tries that many agents on serve, then on mosquitto. Whether
    // serve's socket plan gives its broker as many is what the step shows.
    const cap = connectionCap(serve.child.pid);
    const last = Math.min(N.agents, cap, agents.length);
    const steps = [Math.min(count(10_000), last), last].filter((step, i, all) => all.indexOf(step) === i);
    phase(`broker: ${steps.join(' then ')} agents on serve, then on mosquitto (open files limit ${childFileLimit()})`);
    const options = { steps, workers: 2, concurrency: 64 };
    const served = await runServeBroker(serve, agents, dir, options);
    serve = null; // stopped by the scenario (before its agents)
    const mosquitto = await runMosquitto(agents, dir, options);
    results.broker = brokerResult(served, mosquitto, { limit: childFileLimit(), cap });
  }

  // 2b. Broker modes: the same agents on embedded aedes, Mosquitto (dynamic security), RabbitMQ (2 nodes).
  if (only.has('broker-modes')) {
    const modes = values.modes?.split(',').map((m) => m.trim()) as BrokerModeName[] | undefined;
    phase(
      `broker modes: ${N.modeAgents} agents on each of ${(modes ?? ['embedded', 'mosquitto', 'rabbitmq (2 nodes)']).join(', ')}`,
    );
    results.broker_modes = await brokerModesScenario(dir, { agents: N.modeAgents, ...(modes ? { modes } : {}) });
  }

  // 3. Downloads.
  if (only.has('downloads')) {
    phase('downloads: 256 MiB package, whole and 1 MiB ranges, serve and nginx');
    serve = await startServeHere('downloads');
    results.downloads = await downloadScenario(serve, dir, {
      wholeRequests: count(6, 4),
      wholeConcurrency: 2,
      rangeRequests: count(1000, 200),
      rangeConcurrency: 8,
      rounds: 3,
    });
    await serve.stop();
    serve = null;
  }

  // 6. Deployments: its own serve and data dir, devices enrolled by its load workers.
  if (only.has('deployments')) {
    const devices = count(1000);
    phase(`deployments: a 50 MiB package to ${devices} connected devices, then the same downloads from nginx`);
    results.deployments = await deploymentScenario(dir, { devices, workers: 2 });
  }

  // 7. Policies: the recommended baseline to connected devices; its own serve and data dir.
  if (only.has('policies')) {
    const devices = count(1000);
    phase(`policies: the recommended baseline to ${devices} connected devices`);
    results.policies = await policyBaselineScenario(dir, { devices, workers: 2 });
  }

  // 8. Bulk ping: one request to every connected agent; its own serve and data dir.
  if (only.has('bulk')) {
    phase(`bulk: one ping job to ${N.bulkAgents} connected agents, then a request per agent, then mosquitto`);
    results.bulk = await bulkPingScenario(dir, { agents: N.bulkAgents, workers: 2 });
  }

  // 9. Cluster: SQLite, PostgreSQL on one node, three nodes behind haproxy; its own processes.
  if (only.has('cluster')) {
    const enrollments = Number(values['cluster-enroll'] ?? count(300, 50));
    const seed = Number(values['cluster-seed'] ?? 10_000);
    const setups = (values['cluster-setups']?.split(',').map((s) => s.trim()) ?? [
      'sqlite',
      'postgres',
      'cluster-3',
    ]) as ClusterSetupName[];
    for (const setup of setups)
      if (!['sqlite', 'postgres', 'cluster-3'].includes(setup))
        throw new Error(`unknown set-up ${setup}; one of sqlite, postgres, cluster-3`);
    if (!(Number.isInteger(enrollments) && enrollments > 0 && Number.isInteger(seed) && seed >= 0))
      throw new Error('--cluster-enroll and --cluster-seed are whole numbers');
    phase(
      `cluster: ${enrollments} enrollments, a ping job to them, ${seed} more agents for the devices page, on ${setups.join(', ')}`,
    );
    results.cluster = await clusterScenario(dir, { enrollments, seed, runs: 5, workers: 2, setups });
  }

  // 5. Cold start: fresh data dirs, and the data dir of this run with its agents.
  if (only.has('cold-start')) {
    phase('cold start');
    results.cold_start = await coldStartScenario(
      join(dir, 'cold'),
      dataDir,
      agents.length + (results.console ? N.liveEnrollments : 0),
      3,
    );
    console.log(`  fresh ${results.cold_start.median_fresh_ms} ms, existing ${results.cold_start.median_existing_ms} ms`);
  }
} finally {
  await serve?.stop();
}

results.finished_at = new Date().toISOString();
results.duration_s = round((performance.now() - t0) / 1000);
results.load_average_at_end = loadavg().map((l) => Math.round(l * 100) / 100);

const outDir = values.out ?? join(ROOT, 'bench', 'results');
mkdirSync(outDir, { recursive: true });
const json = `${JSON.stringify(results, null, 2)}\n`;
writeFileSync(join(outDir, full ? 'latest.json' : 'partial.json'), json);
if (full) writeReport(join(ROOT, 'docs', 'benchmarks.md'), results);
console.log(`\n${resultsTable(results)}`);
phase(
  `done in ${results.duration_s} s: ${full ? 'bench/results/latest.json and docs/benchmarks.md' : join(outDir, 'partial.json')} written`,
);
if (!values.keep) rmSync(dir, { recursive: true, force: true });
else console.log(`work folder kept: ${dir}`);
