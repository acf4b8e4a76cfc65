// Scenario 2: simulated agents held by the broker of `serve` (aedes, logins checked against the
// database, ACL, presence), next to Debian's mosquitto (anonymous) in the same run: connection
// rate, memory per connection, then a command to every agent.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { enrollLoad, type EnrolledAgent } from '../load/enroll.ts';
import type { WorkerReply, WorkerRequest } from '../load/mqtt-worker.ts';
import { adminOf, inviteMany } from '../lib/admin.ts';
import {
  childFileLimit,
  cpuSeconds,
  freePort,
  openFiles,
  peakRssBytes,
  ROOT,
  rssBytes,
  sleep,
  startChild,
  waitForPort,
  withFileLimit,
  type Child,
  type Serve,
} from '../lib/process.ts';
import { MiB, round } from '../lib/stats.ts';

export interface Worker {
  child: Child;
  request<T extends WorkerReply['type']>(message: WorkerRequest, reply: T): Promise<Extract<WorkerReply, { type: T }>>;
}

export function startWorker(workDir: string, index: number): Worker {
  const child = startChild(withFileLimit([process.execPath, join(ROOT, 'bench', 'load', 'mqtt-worker.ts'), String(index)]), {
    logFile: join(workDir, `mqtt-worker-${index}.log`),
    ipc: true,
  });
  return {
    child,
    request: (message, reply) =>
      new Promise((resolve, reject) => {
        const onMessage = (answer: WorkerReply) => {
          if (answer.type !== reply) return;
          child.process.off('message', onMessage);
          child.process.off('exit', onExit);
          resolve(answer as Extract<WorkerReply, { type: typeof reply }>);
        };
        const onExit = () => reject(new Error(`MQTT load worker ${index} exited; see ${child.logFile}`));
        child.process.on('message', onMessage);
        child.process.once('exit', onExit);
        child.process.send(message);
      }),
  };
}

export interface ConnectStep {
  /** Connections held once the step is over (all steps so far). */
  held: number;
  connected_in_step: number;
  failed: number;
  seconds: number;
  connections_per_s: number;
  /** Broker CPU time (user + system) during the step / connections made. */
  server_cpu_us_per_connection: number;
  rss_mib: number;
  /** (RSS now − RSS before the first connection) / connections held. */
  kib_per_connection: number;
  /** (RSS now − RSS after the previous step) / connections added in this step. */
  marginal_kib_per_connection: number;
}

export interface BrokerRun {
  name: string;
  rss_idle_mib: number;
  /** Highest RSS of the process over the whole run (VmHWM), fan-out included. */
  peak_rss_mib: number;
  steps: ConnectStep[];
  /** `server_cpu_us_per_command`: the broker process's CPU from the first command to the last receipt, per agent. */
  fanout: { agents: number; received: number; seconds: number; server_cpu_us_per_command: number; how: string };
  /** serve only: HTTP tried with every agent of the last step held (the descriptors at their limit). */
  http_at_limit?: HttpAtLimit;
  errors: string[];
}

export interface HttpAtLimit {
  /** Agents held when HTTP was tried. */
  held: number;
  /** GET /api/status on the admin port. */
  admin: { ok: boolean; ms: number };
  /** A new device's five enrollment requests on the agent port (its invitation made first, not timed). */
  enrollment: { ok: boolean; ms: number };
  error?: string;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** One admin call and one whole enrollment, while the broker holds every agent it can. */
export async function tryHttpAtLimit(serve: Serve, held: number): Promise<HttpAtLimit> {
  const result: HttpAtLimit = { held, admin: { ok: false, ms: 0 }, enrollment: { ok: false, ms: 0 } };
  let started = performance.now();
  try {
    await adminOf(serve.info).status();
    result.admin.ok = true;
  } catch (error) {
    result.error = `admin call: ${message(error)}`;
  }
  result.admin.ms = round(performance.now() - started);
  try {
    const invites = await inviteMany(serve.info, 1, 'at-limit');
    started = performance.now();
    const load = await enrollLoad(invites, 1, { serialPrefix: 'R58L' });
    result.enrollment.ms = round(performance.now() - started);
    result.enrollment.ok = load.enrolled.length === 1;
    if (!result.enrollment.ok) result.error = `enrollment: ${load.errors.find(Boolean) ?? 'failed'}`;
  } catch (error) {
    result.error = `enrollment: ${message(error)}`;
  }
  console.log(
    `  HTTP at ${held} agents: admin call ${result.admin.ok ? `${result.admin.ms} ms` : 'FAILED'}, enrollment ${result.enrollment.ok ? `${result.enrollment.ms} ms` : 'FAILED'}${result.error ? ` (${result.error})` : ''}`,
  );
  return result;
}

/** Connects `agents` in `steps` (cumulative counts) through `workers`, measuring each step. */
export async function connectSteps(
  name: string,
  pid: number | (() => number),
  port: number | number[],
  agents: readonly EnrolledAgent[],
  steps: number[],
  workers: Worker[],
  concurrency: number,
) {
  // Several processes (a cluster's nodes) are measured as their sum, through a function.
  const rss = typeof pid === 'function' ? pid : () => rssBytes(pid);
  const cpuOf = typeof pid === 'function' ? () => 0 : () => cpuSeconds(pid);
  const ports = Array.isArray(port) ? port : [port];
  const rssIdle = rss();
  const results: ConnectStep[] = [];
  const errors: string[] = [];
  let done = 0;
  let rssBefore = rssIdle;
  for (const target of steps) {
    const slice = agents.slice(done, target);
    const shares = workers.map((_, w) => slice.filter((_, i) => i % workers.length === w));
    const cpuBefore = cpuOf();
    // RSS sampled through the step: it is read one second after the last agent got in, also when
    // refused agents keep the step going until their time-outs (the heap shrinks meanwhile).
    const samples: [at: number, bytes: number][] = [];
    const wallClock = () => performance.timeOrigin + performance.now();
    const sampler = setInterval(() => samples.push([wallClock(), rss()]), 250);
    let replies: Extract<WorkerReply, { type: 'connected' }>[];
    try {
      replies = await Promise.all(
        workers.map((worker, w) =>
          worker.request({ type: 'connect', agents: shares[w]!, port: ports[w % ports.length]!, concurrency }, 'connected'),
        ),
      );
    } catch (error) {
      clearInterval(sampler);
      throw error;
    }
    const cpu = cpuOf() - cpuBefore;
    const ok = replies.reduce((sum, r) => sum + r.ok, 0);
    const failed = replies.reduce((sum, r) => sum + r.failed, 0);
    errors.push(...replies.flatMap((r) => r.errors));
    // From the first attempt to the last agent that got in: refused agents' time-outs are not the rate.
    const seconds =
      (Math.max(...replies.map((r) => (ok > 0 ? r.lastOkAt : r.doneAt))) - Math.min(...replies.map((r) => r.startedAt))) / 1000;
    // Let the broker settle (presence writes, garbage) before reading its memory.
    const settledAt = Math.min(...replies.map((r) => r.startedAt)) + seconds * 1000 + 1000;
    if (wallClock() < settledAt) await sleep(settledAt - wallClock());
    clearInterval(sampler);
    const rssNow = samples.find(([at]) => at >= settledAt)?.[1] ?? rss();
    const held = replies.reduce((sum, r) => sum + r.held, 0);
    results.push({
      held,
      connected_in_step: ok,
      failed,
      seconds: round(seconds),
      connections_per_s: round(ok / seconds),
      server_cpu_us_per_connection: round((cpu * 1e6) / Math.max(ok, 1)),
      rss_mib: round(rssNow / MiB),
      kib_per_connection: round((rssNow - rssIdle) / 1024 / Math.max(held, 1)),
      marginal_kib_per_connection: round((rssNow - rssBefore) / 1024 / Math.max(ok, 1)),
    });
    rssBefore = rssNow;
    console.log(`  ${name}: ${held} held, ${round(ok / seconds)} connections/s, RSS ${round(rssNow / MiB)} MiB`);
    done = target;
  }
  return { rssIdle, results, errors };
}

export async function awaitPings(workers: Worker[], timeoutMs: number) {
  const replies = await Promise.all(
    workers.map((worker) => worker.request({ type: 'await-command', name: 'Ping', timeoutMs }, 'commands')),
  );
  return {
    received: replies.reduce((sum, r) => sum + r.received, 0),
    lastAt: Math.max(...replies.map((r) => r.lastAt)),
  };
}

/** Runs `work` over `items`, `concurrency` at a time. */
export async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

export interface BrokerOptions {
  steps: number[];
  workers: number;
  concurrency: number;
}

/**
 * `serve`'s broker: agents log in with their record's credentials. With the last step held, one
 * admin call and one enrollment are tried; then a ping to every held agent by one bulk job
 * (POST /api/jobs with their ids), timed until every agent has it.
 */
export async function runServeBroker(
  serve: Serve,
  agents: readonly EnrolledAgent[],
  workDir: string,
  options: BrokerOptions,
): Promise<BrokerRun> {
  const workers = Array.from({ length: options.workers }, (_, i) => startWorker(workDir, i));
  try {
    await sleep(500);
    const { rssIdle, results, errors } = await connectSteps(
      'serve',
      serve.child.pid,
      serve.info.mqtt_port,
      agents,
      options.steps,
      workers,
      options.concurrency,
    );
    const held = agents.slice(0, options.steps.at(-1));
    const httpAtLimit = await tryHttpAtLimit(serve, results.at(-1)?.held ?? 0);
    const started = performance.timeOrigin + performance.now();
    const cpuBefore = cpuSeconds(serve.child.pid);
    await adminOf(serve.info).jobs.create({
      body: { action: 'ping', selection: { ids: held.map((agent) => agent.agentId) } },
    });
    const pings = await awaitPings(workers, 60_000);
    const cpu = cpuSeconds(serve.child.pid) - cpuBefore;
    return {
      name: 'serve (aedes)',
      rss_idle_mib: round(rssIdle / MiB),
      peak_rss_mib: round(peakRssBytes(serve.child.pid) / MiB),
      steps: results,
      fanout: {
        // The agents that got in (a refused one is sent the command but cannot have it).
        agents: results.at(-1)?.held ?? held.length,
        received: pings.received,
        seconds: round((pings.lastAt - started) / 1000),
        server_cpu_us_per_command: round((cpu * 1e6) / Math.max(results.at(-1)?.held ?? held.length, 1)),
        how: 'one POST /api/jobs {"action":"ping","selection":{"ids":[every held agent]}}',
      },
      http_at_limit: httpAtLimit,
      errors,
    };
  } finally {
    // The server goes first (it closes every connection itself), then the agents.
    await serve.stop();
    for (const worker of workers) worker.child.process.send({ type: 'exit' });
    await Promise.all(workers.map((worker) => worker.child.stop()));
  }
}

/** Debian's mosquitto, anonymous, on a loopback port; same agents, same steps. */
export async function runMosquitto(
  agents: readonly EnrolledAgent[],
  workDir: string,
  options: BrokerOptions,
): Promise<BrokerRun> {
  const port = await freePort();
  const conf = join(workDir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [`listener ${port} 127.0.0.1`, 'allow_anonymous true', 'persistence false', 'max_connections -1', 'log_dest none', ''].join(
      '\n',
    ),
  );
  const broker = startChild(withFileLimit(['mosquitto', '-c', conf], childFileLimit()), {
    logFile: join(workDir, 'mosquitto.log'),
  });
  const workers = Array.from({ length: options.workers }, (_, i) => startWorker(workDir, 10 + i));
  try {
    await waitForPort(port);
    await sleep(500);
    const { rssIdle, results, errors } = await connectSteps(
      'mosquitto',
      broker.pid,
      port,
      agents,
      options.steps,
      workers,
      options.concurrency,
    );
    const held = agents.slice(0, options.steps.at(-1));
    // The same message each agent gets from serve, published by one client to every agent's topic.
    const publisher = await mqtt.connectAsync({ host: '127.0.0.1', port, clientId: 'bench-publisher', reconnectPeriod: 0 });
    const started = performance.timeOrigin + performance.now();
    const cpuBefore = cpuSeconds(broker.pid);
    // 500 in flight, as the bulk job publishes a chunk of 500 at a time.
    await pool(held, 500, async (agent) => {
      await publisher.publishAsync(`${agent.topic}/Command/Ping`, JSON.stringify({ query: 'Ping' }), { qos: 1 });
    });
    const pings = await awaitPings(workers, 60_000);
    const cpu = cpuSeconds(broker.pid) - cpuBefore;
    await publisher.endAsync(true);
    return {
      name: 'mosquitto',
      rss_idle_mib: round(rssIdle / MiB),
      peak_rss_mib: round(peakRssBytes(broker.pid) / MiB),
      steps: results,
      fanout: {
        // The agents that got in (a refused one is sent the command but cannot have it).
        agents: results.at(-1)?.held ?? held.length,
        received: pings.received,
        seconds: round((pings.lastAt - started) / 1000),
        server_cpu_us_per_command: round((cpu * 1e6) / Math.max(results.at(-1)?.held ?? held.length, 1)),
        how: 'one client publishes T/Command/Ping (QoS 1) to each agent, 500 in flight',
      },
      errors,
    };
  } finally {
    await broker.stop();
    for (const worker of workers) worker.child.process.send({ type: 'exit' });
    await Promise.all(workers.map((worker) => worker.child.stop()));
  }
}

/**
 * How many connections one server process can hold here: its open-files limit, less the files it
 * has open already, less room for the admin API connections of the fan-out (32) and some spare.
 */
export function connectionCap(serverPid: number): number {
  return childFileLimit() - openFiles(serverPid) - 128;
}
