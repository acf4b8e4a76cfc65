// Scenario `cluster` (issue 23 item 5): the same three measures on three set-ups, side by side in
// one run — SQLite on one node (embedded broker); PostgreSQL on one node (embedded broker, the
// database started by scripts/postgres.ts); three nodes on one PostgreSQL behind haproxy with
// Mosquitto (all started by scripts/cluster.ts). For each:
//   1. enrollments: N simulated devices through the real agent API (the balancer's, for the
//      cluster): wall time, rate, CPU of the serve process(es), of every PostgreSQL process of the
//      private server, and of the broker and haproxy, per enrollment, from /proc/PID/stat;
//   2. a command fan-out: the enrolled agents connect to the broker, one POST /api/jobs pings every
//      device; until every agent has its ping, and until every answer is recorded;
//   3. the devices page: 10,000 more agents seeded (test/helpers/seed-devices.ts), then
//      GET /api/agents (the whole list, as the console's first page loads it) and a filtered list.
import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminClient, type AdminClient } from '../../src-shared/contract/admin-client.ts';
import { PostgresSql } from '../../src-main/backend/db/postgres-sql.ts';
import { seedDevices } from '../../test/helpers/seed-devices.ts';
import { startCluster, type Cluster } from '../../scripts/cluster.ts';
import { startPostgres, type PostgresCluster } from '../../scripts/postgres.ts';
import { inviteMany } from '../lib/admin.ts';
import { cpuSeconds, sleep, startServe, type Serve } from '../lib/process.ts';
import { median, round } from '../lib/stats.ts';
import { enrollLoad } from '../load/enroll.ts';
import { awaitPings, connectSteps, startWorker, type Worker } from './broker.ts';

export type ClusterSetupName = 'sqlite' | 'postgres' | 'cluster-3';

export interface ClusterSetupResult {
  setup: ClusterSetupName;
  description: string;
  nodes: number;
  enroll: {
    devices: number;
    errors: number;
    seconds: number;
    per_s: number;
    /** CPU ms per enrollment: the serve processes (summed), the database's processes, the broker, haproxy. */
    node_cpu_ms: number;
    db_cpu_ms: number | null;
    broker_cpu_ms: number | null;
    haproxy_cpu_ms: number | null;
    /** The same less what each part spends idle over as long (measured just before, for 5 s). */
    node_cpu_ms_net: number;
    db_cpu_ms_net: number | null;
    broker_cpu_ms_net: number | null;
  };
  /** CPU ms per second each part spends idle (no request): heartbeats, leases, the event feed, PostgreSQL's own work. */
  idle_cpu_ms_per_s: { node: number; db: number | null; broker: number | null };
  fanout: {
    agents: number;
    held: number;
    received: number;
    request_ms: number;
    /** Until the last agent had its ping. */
    delivered_s: number;
    /** Until every answer was recorded (the job no longer has a device in `sent`). */
    answered_s: number | null;
    answered: number;
    node_cpu_us_per_agent: number;
    db_cpu_us_per_agent: number | null;
    broker_cpu_us_per_agent: number | null;
  };
  devices_page: {
    devices: number;
    seed_s: number;
    /** GET /api/agents, median of `runs`. */
    list_ms: number;
    list_rows: number;
    /** GET /api/agents?where=type=apple online=yes, median of `runs`. */
    filtered_ms: number;
    filtered_rows: number;
    filter: string;
  };
}

export interface ClusterResult {
  enrollments: number;
  seeded: number;
  setups: ClusterSetupResult[];
}

const CLK_TCK = 100;

/**
 * CPU seconds of a PostgreSQL server: the postmaster's own and its reaped children's
 * (cutime + cstime: backends that have exited), plus every live child's (its backends, walwriter…).
 */
export function postgresCpuSeconds(postgresDir: string): number {
  const postmaster = Number(readFileSync(join(postgresDir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const fieldsOf = (pid: number | string): string[] | null => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    } catch {
      return null; // gone meanwhile
    }
  };
  // After "pid (comm) ": [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime.
  const own = fieldsOf(postmaster);
  if (!own) throw new Error(`PostgreSQL (pid ${postmaster}) is not running`);
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = fieldsOf(entry);
    if (fields && Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / CLK_TCK;
}

/** What one set-up offers the measures: its URLs, token, and how to read each part's CPU. */
interface Setup {
  name: ClusterSetupName;
  description: string;
  nodes: number;
  adminUrl: string;
  adminToken: string;
  mqttPort: number;
  databaseUrl: string | null;
  nodeCpu(): number;
  nodeRss(): number;
  dbCpu: (() => number) | null;
  brokerCpu: (() => number) | null;
  haproxyCpu: (() => number) | null;
  stop(): Promise<void>;
}

const now = () => performance.timeOrigin + performance.now();
const perOp = (seconds: number, count: number, unit: number) => round((seconds * unit) / Math.max(1, count));

async function measure(
  setup: Setup,
  dir: string,
  options: { enrollments: number; seed: number; runs: number; workers: number },
): Promise<ClusterSetupResult> {
  const server = { admin_url: setup.adminUrl, admin_token: setup.adminToken };
  const admin: AdminClient = adminClient({ baseUrl: setup.adminUrl, token: setup.adminToken });
  const cpu = () => ({
    node: setup.nodeCpu(),
    db: setup.dbCpu?.() ?? null,
    broker: setup.brokerCpu?.() ?? null,
    haproxy: setup.haproxyCpu?.() ?? null,
  });
  const diff = (a: number | null, b: number | null) => (a === null || b === null ? null : b - a);

  // 1. Enrollments.
  const invites = await inviteMany(server, options.enrollments, `cl-${setup.name}`);
  await sleep(1000);
  const idleStart = cpu();
  const idleStarted = performance.now();
  await sleep(5000);
  const idleEnd = cpu();
  const idleS = (performance.now() - idleStarted) / 1000;
  const idleRate = (a: number | null, b: number | null) => (a === null || b === null ? null : (b - a) / idleS);
  const idle = {
    node: (idleEnd.node - idleStart.node) / idleS,
    db: idleRate(idleStart.db, idleEnd.db),
    broker: idleRate(idleStart.broker, idleEnd.broker),
  };
  const net = (used: number | null, rate: number | null, seconds: number, count: number, unit: number) =>
    used === null || rate === null ? null : perOp(used - rate * seconds, count, unit);
  const before = cpu();
  const load = await enrollLoad(invites, 32, { serialPrefix: `CL${setup.name.slice(0, 2).toUpperCase()}` });
  const after = cpu();
  const n = load.enrolled.length;
  if (load.errors.length > 0) console.log(`  ${load.errors.length} enrollments failed, first: ${load.errors.find(Boolean)}`);
  const enroll: ClusterSetupResult['enroll'] = {
    devices: n,
    errors: load.errors.length,
    seconds: round(load.elapsedMs / 1000),
    per_s: round(n / (load.elapsedMs / 1000)),
    node_cpu_ms: perOp(after.node - before.node, n, 1000),
    db_cpu_ms: after.db === null ? null : perOp(diff(before.db, after.db)!, n, 1000),
    broker_cpu_ms: after.broker === null ? null : perOp(diff(before.broker, after.broker)!, n, 1000),
    haproxy_cpu_ms: after.haproxy === null ? null : perOp(diff(before.haproxy, after.haproxy)!, n, 1000),
    node_cpu_ms_net: net(after.node - before.node, idle.node, load.elapsedMs / 1000, n, 1000)!,
    db_cpu_ms_net: net(diff(before.db, after.db), idle.db, load.elapsedMs / 1000, n, 1000),
    broker_cpu_ms_net: net(diff(before.broker, after.broker), idle.broker, load.elapsedMs / 1000, n, 1000),
  };
  console.log(
    `  ${setup.name}: ${n} enrollments in ${enroll.seconds} s (${enroll.per_s}/s); CPU per enrollment: nodes ${enroll.node_cpu_ms} ms, database ${enroll.db_cpu_ms ?? '—'} ms, broker ${enroll.broker_cpu_ms ?? '—'} ms; less idle: ${enroll.node_cpu_ms_net}, ${enroll.db_cpu_ms_net ?? '—'}, ${enroll.broker_cpu_ms_net ?? '—'} ms (idle ${round(idle.node * 1000)} / ${idle.db === null ? '—' : round(idle.db * 1000)} / ${idle.broker === null ? '—' : round(idle.broker * 1000)} ms/s)`,
  );

  // 2. Command fan-out to the enrolled agents, connected to the set-up's broker.
  let workers: Worker[] = [];
  let fanout!: ClusterSetupResult['fanout'];
  try {
    workers = Array.from({ length: options.workers }, (_, i) => startWorker(dir, 40 + i));
    const connected = await connectSteps(
      setup.name,
      () => setup.nodeRss(),
      setup.mqttPort,
      load.enrolled,
      [load.enrolled.length],
      workers,
      32,
    );
    const held = connected.results.at(-1)?.held ?? 0;
    await sleep(2000); // presence written, everything idle again
    await Promise.all(workers.map((worker) => worker.request({ type: 'forget', name: 'Ping' }, 'forgotten')));
    const cpuBefore = cpu();
    const started = now();
    const job = await admin.jobs.create({ body: { action: 'ping', selection: { filter: {} } } });
    const requestMs = now() - started;
    const pings = await awaitPings(workers, 120_000);
    let answeredAt: number | null = null;
    let answered = 0;
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const current = await admin.jobs.get({ params: { id: job.id }, query: { status: 'failed' } });
      answered = current.counts.answered;
      if (current.state !== 'running' && current.counts.sent === 0) {
        answeredAt = now();
        break;
      }
      await sleep(50);
    }
    const cpuAfter = cpu();
    fanout = {
      agents: load.enrolled.length,
      held,
      received: pings.received,
      request_ms: round(requestMs),
      delivered_s: round((pings.lastAt - started) / 1000),
      answered_s: answeredAt === null ? null : round((answeredAt - started) / 1000),
      answered,
      node_cpu_us_per_agent: perOp(cpuAfter.node - cpuBefore.node, held, 1e6),
      db_cpu_us_per_agent: cpuAfter.db === null ? null : perOp(diff(cpuBefore.db, cpuAfter.db)!, held, 1e6),
      broker_cpu_us_per_agent: cpuAfter.broker === null ? null : perOp(diff(cpuBefore.broker, cpuAfter.broker)!, held, 1e6),
    };
    console.log(
      `  ${setup.name}: ping job to ${held} connected agents: ${pings.received} delivered in ${fanout.delivered_s} s, ${answered} answers recorded after ${fanout.answered_s ?? 'timeout'} s`,
    );
  } finally {
    for (const worker of workers) worker.child.process.send({ type: 'exit' });
    await Promise.all(workers.map((worker) => worker.child.stop()));
  }

  // 3. The devices page with `seed` more agents.
  const seedStarted = performance.now();
  const target = setup.databaseUrl ? new PostgresSql(setup.databaseUrl, { serializeTransactions: false }) : null;
  try {
    await seedDevices(target ?? setupDataDir(setup), { count: options.seed, prefix: 'CLS' });
  } finally {
    await target?.close();
  }
  const seedS = round((performance.now() - seedStarted) / 1000);
  const filter = 'type=apple online=yes';
  const time = async (query: { where?: string }) => {
    const samples: number[] = [];
    let rows = 0;
    await admin.agents.list({ query }); // warm (first query plans, caches)
    for (let i = 0; i < options.runs; i++) {
      const started = performance.now();
      const list = await admin.agents.list({ query });
      samples.push(performance.now() - started);
      rows = list.items.length;
    }
    return { ms: round(median(samples)), rows };
  };
  const whole = await time({});
  const filtered = await time({ where: filter });
  const devicesPage = {
    devices: whole.rows,
    seed_s: seedS,
    list_ms: whole.ms,
    list_rows: whole.rows,
    filtered_ms: filtered.ms,
    filtered_rows: filtered.rows,
    filter,
  };
  console.log(
    `  ${setup.name}: ${options.seed} seeded in ${seedS} s; devices list of ${whole.rows} in ${whole.ms} ms, filtered (${filter}: ${filtered.rows}) in ${filtered.ms} ms`,
  );
  const ms = (rate: number | null) => (rate === null ? null : round(rate * 1000));
  return {
    setup: setup.name,
    description: setup.description,
    nodes: setup.nodes,
    enroll,
    idle_cpu_ms_per_s: { node: ms(idle.node)!, db: ms(idle.db), broker: ms(idle.broker) },
    fanout,
    devices_page: devicesPage,
  };
}

const dataDirs = new WeakMap<Setup, string>();
const setupDataDir = (setup: Setup) => dataDirs.get(setup)!;

const rssOf = (pid: number | undefined): number => {
  if (pid === undefined) return 0;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
};
const cpuOf = (pid: number | undefined): number => (pid === undefined ? 0 : cpuSeconds(pid));

async function sqliteSetup(dir: string): Promise<Setup> {
  const dataDir = join(dir, 'cluster-sqlite');
  const serve: Serve = await startServe({ dataDir, logFile: join(dir, 'serve-cluster-sqlite.log') });
  const setup: Setup = {
    name: 'sqlite',
    description: 'SQLite, one serve node, embedded broker',
    nodes: 1,
    adminUrl: serve.info.admin_url,
    adminToken: serve.info.admin_token,
    mqttPort: serve.info.mqtt_port,
    databaseUrl: null,
    nodeCpu: () => cpuSeconds(serve.child.pid),
    nodeRss: () => rssOf(serve.child.pid),
    dbCpu: null,
    brokerCpu: null,
    haproxyCpu: null,
    stop: () => serve.stop(),
  };
  dataDirs.set(setup, dataDir);
  return setup;
}

async function postgresSetup(dir: string): Promise<Setup> {
  // Run as root, PostgreSQL runs as `postgres`, which must pass through the work folder (as scripts/cluster.ts does).
  if (process.getuid?.() === 0) chmodSync(dir, 0o711);
  const pg: PostgresCluster = await startPostgres({ dir: join(dir, 'cluster-pg'), throwaway: true });
  let serve: Serve;
  try {
    await pg.createDatabase('mdm');
    serve = await startServe({
      dataDir: join(dir, 'cluster-pg-node'),
      logFile: join(dir, 'serve-cluster-pg.log'),
      extraArgs: ['--database-url', pg.url('mdm')],
    });
  } catch (error) {
    pg.destroy();
    throw error;
  }
  return {
    name: 'postgres',
    description: 'PostgreSQL (scripts/postgres.ts, throwaway: no fsync), one serve node, embedded broker',
    nodes: 1,
    adminUrl: serve.info.admin_url,
    adminToken: serve.info.admin_token,
    mqttPort: serve.info.mqtt_port,
    databaseUrl: pg.url('mdm'),
    nodeCpu: () => cpuSeconds(serve.child.pid),
    nodeRss: () => rssOf(serve.child.pid),
    dbCpu: () => postgresCpuSeconds(pg.dir),
    brokerCpu: null,
    haproxyCpu: null,
    stop: async () => {
      await serve.stop();
      pg.destroy();
    },
  };
}

async function clusterSetup(dir: string): Promise<Setup> {
  if (process.getuid?.() === 0) chmodSync(dir, 0o711);
  const cluster: Cluster = await startCluster({
    dir: join(dir, 'cluster-3'),
    nodes: 3,
    broker: 'mosquitto',
    basePort: 0,
    throwaway: true,
    // Every simulated device comes from 127.0.0.1 (through haproxy): no per-address initSession limit.
    env: { MDM_CONSOLE_SESSION_RATE_PER_ADDRESS: '0' },
  });
  const pids = () => cluster.nodes.map((node) => node.pid());
  return {
    name: 'cluster-3',
    description: 'PostgreSQL (throwaway), three serve nodes behind haproxy, Mosquitto (scripts/cluster.ts)',
    nodes: 3,
    adminUrl: cluster.adminUrl,
    adminToken: cluster.adminToken,
    mqttPort: cluster.broker.port,
    databaseUrl: cluster.databaseUrl,
    nodeCpu: () => pids().reduce<number>((sum, pid) => sum + cpuOf(pid), 0),
    nodeRss: () => pids().reduce<number>((sum, pid) => sum + rssOf(pid), 0),
    dbCpu: () => postgresCpuSeconds(cluster.state.postgresDir!),
    brokerCpu: () => cpuOf(cluster.state.pids.broker),
    haproxyCpu: () => cpuOf(cluster.state.pids.haproxy),
    stop: () => cluster.stop(), // nodes, haproxy, Mosquitto, then PostgreSQL
  };
}

export async function clusterScenario(
  dir: string,
  options: { enrollments: number; seed: number; runs: number; workers: number; setups: ClusterSetupName[] },
): Promise<ClusterResult> {
  const setups: ClusterSetupResult[] = [];
  const starters = { sqlite: sqliteSetup, postgres: postgresSetup, 'cluster-3': clusterSetup };
  for (const name of options.setups) {
    const started = performance.now();
    const setup = await starters[name](dir);
    console.log(`  ${name}: started in ${round((performance.now() - started) / 1000)} s (${setup.description})`);
    try {
      setups.push(await measure(setup, dir, options));
    } finally {
      await setup.stop();
    }
  }
  return { enrollments: options.enrollments, seeded: options.seed, setups };
}

/** The set-ups side by side: one column each. */
export function clusterTable(r: ClusterResult): string[] {
  const v = (value: number | null | undefined, unit = '') => (value === null || value === undefined ? '—' : `${value}${unit}`);
  const rows: [string, (s: ClusterSetupResult) => string][] = [
    ['enrollments (5 requests each, 32 at a time)', (s) => `${s.enroll.devices} in ${s.enroll.seconds} s: ${s.enroll.per_s}/s`],
    ['node CPU per enrollment (all nodes)', (s) => v(s.enroll.node_cpu_ms, ' ms')],
    ['database CPU per enrollment (every PostgreSQL process)', (s) => v(s.enroll.db_cpu_ms, ' ms')],
    ['broker CPU per enrollment (Mosquitto)', (s) => v(s.enroll.broker_cpu_ms, ' ms')],
    ['haproxy CPU per enrollment', (s) => v(s.enroll.haproxy_cpu_ms, ' ms')],
    [
      'idle CPU, ms a second: nodes / database / broker',
      (s) => `${s.idle_cpu_ms_per_s.node} / ${v(s.idle_cpu_ms_per_s.db)} / ${v(s.idle_cpu_ms_per_s.broker)}`,
    ],
    [
      'CPU per enrollment less idle: nodes / database / broker',
      (s) => `${s.enroll.node_cpu_ms_net} / ${v(s.enroll.db_cpu_ms_net)} / ${v(s.enroll.broker_cpu_ms_net)} ms`,
    ],
    [
      'ping job: agents connected → pings delivered',
      (s) => `${s.fanout.held} → ${s.fanout.received} in ${s.fanout.delivered_s} s (request ${s.fanout.request_ms} ms)`,
    ],
    ['ping job: every answer recorded', (s) => `${s.fanout.answered} after ${v(s.fanout.answered_s, ' s')}`],
    [
      'ping job CPU per agent: nodes / database / broker',
      (s) => `${s.fanout.node_cpu_us_per_agent} / ${v(s.fanout.db_cpu_us_per_agent)} / ${v(s.fanout.broker_cpu_us_per_agent)} µs`,
    ],
    ['devices list, whole (GET /api/agents)', (s) => `${s.devices_page.list_rows} rows: ${s.devices_page.list_ms} ms`],
    [
      'devices list, filtered',
      (s) => `\`${s.devices_page.filter}\`: ${s.devices_page.filtered_rows} rows, ${s.devices_page.filtered_ms} ms`,
    ],
  ];
  return [
    '',
    `Cluster (\`--only cluster\`): ${r.enrollments} enrollments, then ${r.seeded} agents seeded, on each set-up.`,
    '',
    `| | ${r.setups.map((s) => s.description).join(' | ')} |`,
    `| --- | ${r.setups.map(() => '---').join(' | ')} |`,
    ...rows.map(([label, cell]) => `| ${label} | ${r.setups.map(cell).join(' | ')} |`),
  ];
}
