// Scenario: the three broker modes side by side in one run — the embedded aedes broker of `serve`,
// an external Mosquitto 2 with dynamic security, a 2-node RabbitMQ cluster with the HTTP auth
// backend. For each: agents held, RSS per connection of the broker process(es), connect rate, and
// the time for a ping sent through the admin API to reach every agent.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMosquitto } from '../../test/helpers/external-brokers.ts';
import { startRabbitCluster } from '../../test/helpers/rabbitmq.ts';
import { enrollLoad, type EnrolledAgent } from '../load/enroll.ts';
import { adminOf, inviteMany } from '../lib/admin.ts';
import { childFileLimit, peakRssBytes, rssBytes, startServe, withFileLimit, type Serve } from '../lib/process.ts';
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
  step: ConnectStep;
  fanout: { agents: number; received: number; seconds: number };
  errors: string[];
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
  let measured: string;
  let mosquittoPid: number | undefined;
  let serve: Serve | null = null;
  if (mode === 'mosquitto') {
    const mosquitto = await startMosquitto({ wrap });
    stopBroker = () => mosquitto.destroy();
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
    // The wrapper's bash execs mosquitto: same pid.
    rss = () => rssBytes(mosquitto.pid()!);
    peak = () => peakRssBytes(mosquitto.pid()!);
    ports = [mosquitto.port];
    mosquittoPid = mosquitto.pid();
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
    const enrollStarted = performance.now();
    // Mosquitto: each record read waits for the broker's dynamic security, which takes one change
    // at a time (each a rewrite of its file); 32 devices waiting in that queue only wait longer
    // (past the simulator's 30 s on a busy machine), the rate is the same with 4.
    const load = await enrollLoad(invites, mode === 'mosquitto' ? 4 : 32, { serialPrefix: `M${mode.slice(0, 2).toUpperCase()}` });
    if (load.errors.length > 0) throw new Error(`enrollment failed: ${load.errors.find(Boolean)}`);
    const agents: EnrolledAgent[] = load.enrolled;
    const enrollSeconds = (performance.now() - enrollStarted) / 1000;
    // One process: by pid (CPU per connection measured too); a cluster: its RSS summed.
    const measuredPid = mode === 'embedded' ? serve.child.pid : mode === 'mosquitto' ? mosquittoPid : undefined;
    const { rssIdle, results, errors } = await connectSteps(
      mode,
      measuredPid ?? rss,
      ports,
      agents,
      [agents.length],
      workers,
      32,
    );
    const started = performance.timeOrigin + performance.now();
    await pool(agents, 32, async (agent) => {
      await adminOf(serve!.info).agents.command(agent.agentId, 'ping');
    });
    const pings = await awaitPings(workers, 120_000);
    const run: BrokerModeRun = {
      mode,
      measured,
      rss_idle_mib: round(rssIdle / MiB),
      peak_rss_mib: round(peak() / MiB),
      serve_rss_mib: round(rssBytes(serve.child.pid) / MiB),
      enrollments_per_s: round(agents.length / enrollSeconds),
      step: results[0]!,
      fanout: { agents: agents.length, received: pings.received, seconds: round((pings.lastAt - started) / 1000) },
      errors: errors.slice(0, 5),
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
  const lines = [
    '',
    `Broker modes, ${result.agents.toLocaleString('en-US')} agents each (open files limit ${result.open_files_limit.toLocaleString('en-US')}):`,
    '',
    '| Mode | Agents held | KiB per connection | Broker RSS (peak) | Connections/s | Ping reaches all | Enrollments/s | Backend RSS | Measured |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const run of result.runs) {
    lines.push(
      `| ${run.mode} | ${run.step.held.toLocaleString('en-US')} | ${run.step.kib_per_connection} | ${run.step.rss_mib} MiB (${run.peak_rss_mib}) | ${run.step.connections_per_s} | ${run.fanout.seconds} s (${run.fanout.received}/${run.fanout.agents}) | ${run.enrollments_per_s} | ${run.serve_rss_mib} MiB | ${run.measured} |`,
    );
  }
  return lines;
}
