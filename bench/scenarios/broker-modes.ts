// Scenario: the three broker modes side by side in one run — the embedded aedes broker of `serve`,
// an external Mosquitto 2 with dynamic security, a 2-node RabbitMQ cluster with the HTTP auth
// backend. For each: agents held, RSS per connection of the broker process(es), connect rate, and
// the time for a ping sent through the admin API to reach every agent.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMosquitto } from '../../test/helpers/external-brokers.ts';
import { startRabbitCluster } from '../../test/helpers/rabbitmq.ts';
import { enrollDevice, startAgentSession } from '../../src-main/device/index.ts';
import { enrollLoad, type EnrolledAgent } from '../load/enroll.ts';
import { adminOf, inviteMany } from '../lib/admin.ts';
import {
  childFileLimit,
  cpuSeconds,
  peakRssBytes,
  rssBytes,
  sleep,
  startServe,
  withFileLimit,
  type Serve,
} from '../lib/process.ts';
import { MiB, round } from '../lib/stats.ts';
import { awaitPings, connectSteps, pool, startWorker, type ConnectStep } from './broker.ts';

export type BrokerModeName = 'embedded' | 'mosquitto' | 'rabbitmq';

export interface BrokerModeRun {
  mode: BrokerModeName;
  /** Which processes the memory figures are of. */
  measured: string;
  rss_idle_mib: number;
  peak_rss_mib: number;
  /** The backend (serve) itself, at the end: in the external modes it holds no connection. */
  serve_rss_mib: number;
  /** Enrollments per second (for Mosquitto each one also creates the agent's client and role). */
  enrollments_per_s: number;
  /** The same for the first and the second half of the enrollments (does the rate fall as agents accumulate?). */
  enrollments_per_s_halves?: [number, number];
  /** Devices enrolling at once. */
  enroll_concurrency?: number;
  /** CPU per connection while the agents connected: the backend's (ours: in the external modes, the auth round trips) and the broker's. */
  serve_cpu_us_per_connection?: number;
  broker_cpu_us_per_connection?: number;
  /** The backend's RSS growth while the agents connected, per connection. */
  serve_kib_per_connection?: number;
  /** Mosquitto: its dynamic-security file rewrites (one per change), counted by strace. */
  dynsec?: DynsecChanges;
  step: ConnectStep;
  fanout: { agents: number; received: number; seconds: number };
  errors: string[];
}

export interface DynsecChanges {
  enrollments: number;
  /** Rewrites while the devices enrolled (their records read for the first time included). */
  enrollment_changes: number;
  per_enrollment: number;
  /** Enrolled devices reading their record again (each read draws a new MQTT password the broker must learn) … */
  reads: number;
  /** … and the rewrites meanwhile (one each expected). */
  read_changes: number;
  /** Record reads that change nothing the broker must know: devices waiting for approval (they hold no account), two reads each … */
  waiting_reads: number;
  /** … and the rewrites meanwhile (none expected). */
  waiting_changes: number;
}

/** Issue 24: at most one dynamic-security change per enrollment (and none on a read that changes nothing). */
export const DYNSEC_GOAL = 1;

/** Devices re-reading their record in the Mosquitto run; devices enrolling by a code that needs approval. */
const REREADS = 100;
const WAITING = 20;

const hasStrace = () => spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;

/** Mosquitto under `strace -e trace=openat` (seccomp: only those calls stop it); the trace counts its dynsec saves. */
function straced(traceFile: string) {
  return (command: string[]) =>
    withFileLimit(['strace', '-f', '-qq', '--seccomp-bpf', '-e', 'trace=openat', '-o', traceFile, ...command], childFileLimit());
}

/** Mosquitto's dynamic-security saves so far: each opens its JSON file for writing. */
function dynsecSaves(traceFile: string): number {
  let text: string;
  try {
    text = readFileSync(traceFile, 'utf8');
  } catch {
    return 0;
  }
  return text.split('\n').filter((line) => /dynsec\.json", O_WRONLY/.test(line)).length;
}

/** The process strace started (strace's only child). */
async function tracee(stracePid: number): Promise<number> {
  for (let i = 0; i < 100; i++) {
    try {
      const child = Number(readFileSync(`/proc/${stracePid}/task/${stracePid}/children`, 'utf8').trim().split(' ')[0]);
      if (child > 0) return child;
    } catch {
      // not yet
    }
    await sleep(50);
  }
  throw new Error('mosquitto did not start under strace');
}

export interface BrokerModesResult {
  agents: number;
  open_files_limit: number;
  runs: BrokerModeRun[];
}

const sum = (values: (number | undefined)[]) => values.reduce<number>((total, value) => total + (value ?? 0), 0);

async function oneMode(mode: BrokerModeName, dir: string, count: number): Promise<BrokerModeRun> {
  const wrap = (command: string[]) => withFileLimit(command, childFileLimit());
  const dataDir = join(dir, `modes-${mode}`);
  let stopBroker = async () => {};
  let extraArgs: string[] = [];
  let rss: () => number;
  let peak: () => number;
  let ports: number[] = [];
  let rabbitPids: number[] = [];
  let measured: string;
  let mosquittoPid: number | undefined;
  let serve: Serve | null = null;
  const traceFile = join(dir, 'mosquitto-openat.trace');
  const tracing = mode === 'mosquitto' && hasStrace();
  if (mode === 'mosquitto') {
    const mosquitto = await startMosquitto({ wrap: tracing ? straced(traceFile) : wrap });
    // Under strace, pid() is strace's: the broker is its child (it outlives a signal to strace).
    mosquittoPid = tracing ? await tracee(mosquitto.pid()!) : mosquitto.pid();
    const brokerPid = mosquittoPid!;
    stopBroker = async () => {
      if (tracing) {
        try {
          process.kill(brokerPid, 'SIGTERM');
        } catch {
          // gone already
        }
      }
      await mosquitto.destroy();
    };
    // The admin's password from a file, as the README says (never on a command line).
    writeFileSync(join(dir, 'mosquitto-admin-password'), mosquitto.adminPassword, { mode: 0o600 });
    extraArgs = [
      '--mqtt-broker',
      'mosquitto',
      '--mqtt-broker-url',
      mosquitto.adminUrlWithoutPassword,
      '--mqtt-broker-password-file',
      join(dir, 'mosquitto-admin-password'),
    ];
    // The wrapper's bash execs mosquitto (or strace): mosquittoPid is the broker's.
    rss = () => rssBytes(brokerPid);
    peak = () => peakRssBytes(brokerPid);
    ports = [mosquitto.port];
    measured = 'mosquitto';
  } else if (mode === 'rabbitmq') {
    const cluster = await startRabbitCluster({ wrap });
    stopBroker = () => cluster.destroy();
    extraArgs = [
      '--mqtt-broker',
      'rabbitmq',
      '--mqtt-broker-url',
      cluster.backendUrl,
      '--mqtt-auth-port',
      String(cluster.authPort),
      '--mqtt-auth-secret-file',
      join(dir, 'rabbitmq-auth-secret'),
    ];
    writeFileSync(join(dir, 'rabbitmq-auth-secret'), cluster.authSecret, { mode: 0o600 });
    rabbitPids = cluster.nodes.map((node) => node.pid()!);
    rss = () => sum(cluster.nodes.map((node) => rssBytes(node.pid()!)));
    peak = () => sum(cluster.nodes.map((node) => peakRssBytes(node.pid()!)));
    // Agents spread over both nodes, as a load balancer in front of the cluster would.
    ports = cluster.nodes.map((node) => node.mqttPort);
    measured = 'both RabbitMQ nodes (beam.smp), summed';
  } else {
    measured = 'serve (the backend with its embedded broker)';
    rss = () => rssBytes(serve!.child.pid);
    peak = () => peakRssBytes(serve!.child.pid);
  }
  const workers = [startWorker(dir, 20), startWorker(dir, 21)];
  try {
    serve = await startServe({ dataDir, logFile: join(dir, `serve-modes-${mode}.log`), extraArgs, timeoutMs: 60_000 });
    if (mode === 'embedded') ports = [serve.info.mqtt_port];
    // Wait until the backend reached its broker (and, for Mosquitto, made its own account).
    for (let i = 0; i < 600; i++) {
      const status = await adminOf(serve.info).status();
      if (status.mqtt?.connected) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const invites = await inviteMany(serve.info, count, `modes-${mode}`);
    // Mosquitto: each record read waits for the broker's dynamic security, which takes one change
    // at a time (each a rewrite of its file); 32 devices waiting in that queue only wait longer
    // (past the simulator's 30 s on a busy machine), the rate is the same with 4.
    const concurrency = mode === 'mosquitto' ? 4 : 32;
    const savesBefore = dynsecSaves(traceFile);
    const agents: EnrolledAgent[] = [];
    const halves: number[] = [];
    let enrollSeconds = 0;
    // In two halves: a rate that falls as agents accumulate shows as a slower second half.
    for (const half of [invites.slice(0, Math.floor(count / 2)), invites.slice(Math.floor(count / 2))]) {
      const started = performance.now();
      const load = await enrollLoad(half, concurrency, { serialPrefix: `M${mode.slice(0, 2).toUpperCase()}${halves.length}` });
      if (load.errors.length > 0) throw new Error(`enrollment failed: ${load.errors.find(Boolean)}`);
      const seconds = (performance.now() - started) / 1000;
      agents.push(...load.enrolled);
      halves.push(round(load.enrolled.length / seconds));
      enrollSeconds += seconds;
    }
    let dynsec: DynsecChanges | undefined;
    if (tracing) {
      await sleep(500); // the last changes' saves
      const enrolled = dynsecSaves(traceFile) - savesBefore;
      // Devices reading their record again: nothing changed that the broker must know.
      const readers = agents.slice(0, Math.min(REREADS, agents.length));
      const readsBefore = dynsecSaves(traceFile);
      await pool(readers, 4, async (agent) => {
        const client = await startAgentSession(agent.backendUrl, agent.apiToken);
        // The read drew a new password: the agent logs in with it, as a device would.
        agent.password = (await client.getAgent(agent.agentId)).mqttpasswd;
      });
      await sleep(500);
      const readChanges = dynsecSaves(traceFile) - readsBefore;
      // Devices waiting for approval hold no broker account: their record reads change nothing.
      const code = await adminOf(serve.info).codes.create({ body: { name: 'Bench waiting for approval', approval: 'manual' } });
      const waitingBefore = dynsecSaves(traceFile);
      await pool(
        Array.from({ length: WAITING }, (_, i) => i),
        4,
        async (i) => {
          const device = await enrollDevice({ deeplink: code.deeplink, email: `waiting-${i}@bench.example` });
          const client = await startAgentSession(device.backendUrl, device.apiToken);
          await client.getAgent(device.agentId);
        },
      );
      await sleep(500);
      dynsec = {
        enrollments: agents.length,
        enrollment_changes: enrolled,
        per_enrollment: round(enrolled / agents.length),
        reads: readers.length,
        read_changes: readChanges,
        waiting_reads: 2 * WAITING,
        waiting_changes: dynsecSaves(traceFile) - waitingBefore,
      };
      console.log(
        `  mosquitto: ${dynsec.enrollment_changes} dynamic-security changes for ${dynsec.enrollments} enrollments, ${dynsec.read_changes} for ${dynsec.reads} later record reads, ${dynsec.waiting_changes} for ${dynsec.waiting_reads} reads of devices waiting for approval`,
      );
    }
    // One process: by pid (CPU per connection measured too); a cluster: its RSS summed.
    const measuredPid = mode === 'embedded' ? serve.child.pid : mode === 'mosquitto' ? mosquittoPid : undefined;
    const brokerPids = mode === 'rabbitmq' ? rabbitPids : [measuredPid!];
    const servePid = serve.child.pid;
    const serveRssBefore = rssBytes(servePid);
    const serveCpuBefore = cpuSeconds(servePid);
    const brokerCpuBefore = sum(brokerPids.map(cpuSeconds));
    const { rssIdle, results, errors } = await connectSteps(
      mode,
      measuredPid ?? rss,
      ports,
      agents,
      [agents.length],
      workers,
      32,
    );
    const connected = Math.max(results[0]!.connected_in_step, 1);
    const serveCpu = cpuSeconds(servePid) - serveCpuBefore;
    const brokerCpu = sum(brokerPids.map(cpuSeconds)) - brokerCpuBefore;
    const serveKib = (rssBytes(servePid) - serveRssBefore) / 1024 / connected;
    const started = performance.timeOrigin + performance.now();
    const refused: string[] = [];
    await pool(agents, 32, async (agent) => {
      try {
        await adminOf(serve!.info).agents.command({ params: { id: agent.agentId }, body: { command: 'ping' } });
      } catch (error) {
        // An agent that is not connected (counted as not held above) is refused its ping: noted, not fatal.
        refused.push(error instanceof Error ? error.message : String(error));
      }
    });
    const pings = await awaitPings(workers, 120_000);
    const run: BrokerModeRun = {
      mode,
      measured,
      rss_idle_mib: round(rssIdle / MiB),
      peak_rss_mib: round(peak() / MiB),
      serve_rss_mib: round(rssBytes(serve.child.pid) / MiB),
      enrollments_per_s: round(agents.length / enrollSeconds),
      enrollments_per_s_halves: [halves[0]!, halves[1]!],
      enroll_concurrency: concurrency,
      serve_cpu_us_per_connection: round((serveCpu * 1e6) / connected),
      broker_cpu_us_per_connection: round((brokerCpu * 1e6) / connected),
      serve_kib_per_connection: round(serveKib),
      ...(dynsec ? { dynsec } : {}),
      step: results[0]!,
      fanout: { agents: agents.length, received: pings.received, seconds: round((pings.lastAt - started) / 1000) },
      errors: [...errors, ...refused].slice(0, 5),
    };
    console.log(
      `  ${mode}: ${run.step.held} held, ${run.step.kib_per_connection} KiB/connection, ${run.step.connections_per_s} connections/s, ping to all in ${run.fanout.seconds} s (${run.fanout.received}/${run.fanout.agents})`,
    );
    return run;
  } finally {
    await serve?.stop();
    for (const worker of workers) worker.child.process.send({ type: 'exit' });
    await Promise.all(workers.map((worker) => worker.child.stop()));
    await stopBroker();
  }
}

export async function brokerModesScenario(
  dir: string,
  options: { agents: number; modes?: BrokerModeName[] },
): Promise<BrokerModesResult> {
  const runs: BrokerModeRun[] = [];
  for (const mode of options.modes ?? (['embedded', 'mosquitto', 'rabbitmq'] as const))
    runs.push(await oneMode(mode, dir, options.agents));
  return { agents: options.agents, open_files_limit: childFileLimit(), runs };
}

/** The scenario's rows of the results table. */
export function brokerModesTable(result: BrokerModesResult): string[] {
  const n = (value: number | undefined, digits = 0) =>
    value === undefined || !Number.isFinite(value) ? '—' : value.toLocaleString('en-US', { maximumFractionDigits: digits });
  // Mosquitto's RSS can fall while agents connect (it frees what the enrollments' dynamic-security
  // rewrites took): growth per connection then says nothing, and is not shown as a negative size.
  const kib = (value: number | undefined) => (value !== undefined && value < 0 ? '— (RSS fell)' : n(value, 1));
  const lines = [
    '',
    `Broker modes, ${n(result.agents)} agents each (open files limit ${n(result.open_files_limit)}):`,
    '',
    '| Mode | Agents held | KiB per connection: broker / backend | Broker RSS (peak) | Connections/s | CPU per connection: broker / backend | Ping reaches all | Enrollments/s (1st half, 2nd) | Dynamic-security changes: per enrollment / on later record reads / on reads that change nothing | Backend RSS | Measured |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const run of result.runs) {
    const halves = run.enrollments_per_s_halves;
    const dynsec = run.dynsec
      ? `${n(run.dynsec.per_enrollment, 2)} / ${n(run.dynsec.read_changes)} for ${n(run.dynsec.reads)} (a new password each) / ${n(run.dynsec.waiting_changes)} for ${n(run.dynsec.waiting_reads)} (waiting for approval)`
      : run.mode === 'mosquitto'
        ? 'not measured (no strace)'
        : '';
    lines.push(
      `| ${run.mode} | ${n(run.step.held)} | ${kib(run.step.kib_per_connection)} / ${kib(run.serve_kib_per_connection)} | ${n(run.step.rss_mib)} MiB (${n(run.peak_rss_mib)}) | ${n(run.step.connections_per_s, 1)} | ${n(run.broker_cpu_us_per_connection)} / ${n(run.serve_cpu_us_per_connection)} µs | ${n(run.fanout.seconds, 2)} s (${n(run.fanout.received)}/${n(run.fanout.agents)}) | ${n(run.enrollments_per_s, 1)}${halves ? ` (${n(halves[0], 1)}, ${n(halves[1], 1)})` : ''} | ${dynsec} | ${n(run.serve_rss_mib)} MiB | ${run.measured} |`,
    );
  }
  return lines;
}
