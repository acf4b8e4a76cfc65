// Scenario 8: a bulk ping (issue 25). N simulated agents connected to `serve`'s broker receive a
// ping from ONE admin request (POST /api/jobs {action: ping, selection: every device}): the time
// from that request until every agent has received its Command/Ping, and until every answer is
// recorded. Beside it, in the same run: the old way (one POST /api/agents/:id/commands per
// device, 32 at a time) on the same server and agents, and Debian's mosquitto delivering the same
// messages (one client publishing T/Command/Ping to each agent, 500 in flight, as the job's
// chunks of 500) to the same agents.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { inviteMany, adminOf } from '../lib/admin.ts';
import { enrollLoad, type EnrolledAgent } from '../load/enroll.ts';
import {
  childFileLimit,
  cpuSeconds,
  freePort,
  peakRssBytes,
  sleep,
  startChild,
  startServe,
  waitForPort,
  withFileLimit,
} from '../lib/process.ts';
import { MiB, round } from '../lib/stats.ts';
import { awaitPings, connectSteps, pool, startWorker, type Worker } from './broker.ts';

export interface FanOut {
  how: string;
  agents: number;
  received: number;
  /** From the first request (or publish) to the last agent's receipt. */
  seconds: number;
  /** The server's (or broker's) CPU over that time, per agent. */
  cpu_us_per_agent: number;
}

export interface BulkPingResult {
  agents: number;
  held: number;
  job: FanOut & {
    /** How long the one admin request took to be answered (the job's id). */
    request_ms: number;
    /** Until every device's result was written (the job done). */
    results_s: number;
    /** Until every ping's answer was recorded as answered. */
    answered_s: number | null;
    answered: number;
  };
  per_request: FanOut;
  mosquitto: FanOut;
  /** job seconds / mosquitto seconds (1 = as fast as mosquitto delivering the same messages). */
  ratio_to_mosquitto: number;
  serve_peak_rss_mib: number;
  errors: string[];
}

const now = () => performance.timeOrigin + performance.now();

/** Every agent's receipt of a new Ping: the workers forget the earlier ones first. */
export async function freshPings(workers: Worker[], timeoutMs: number) {
  await Promise.all(workers.map((worker) => worker.request({ type: 'forget', name: 'Ping' }, 'forgotten')));
  return () => awaitPings(workers, timeoutMs);
}

export async function bulkPingScenario(dir: string, options: { agents: number; workers: number }): Promise<BulkPingResult> {
  const errors: string[] = [];
  const serve = await startServe({ dataDir: join(dir, 'bulk-data'), logFile: join(dir, 'serve-bulk.log') });
  let workers: Worker[] = [];
  // Set in the try below, which throws otherwise.
  let agents!: EnrolledAgent[];
  let job!: BulkPingResult['job'];
  let perRequest!: FanOut;
  let held!: number;
  let servePeak!: number;
  try {
    const invites = await inviteMany(serve.info, options.agents, 'bulk');
    const load = await enrollLoad(invites, 32, { serialPrefix: 'BULK' });
    if (load.errors.length > 0) throw new Error(`enrollment failed: ${load.errors.find(Boolean)}`);
    agents = load.enrolled;
    console.log(`  ${agents.length} enrolled in ${round(load.elapsedMs / 1000)} s`);
    workers = Array.from({ length: options.workers }, (_, i) => startWorker(dir, 20 + i));
    const connected = await connectSteps('serve', serve.child.pid, serve.info.mqtt_port, agents, [agents.length], workers, 64);
    errors.push(...connected.errors);
    held = connected.results.at(-1)?.held ?? 0;
    await sleep(2000); // presence written, the broker idle again

    // One request.
    const admin = adminOf(serve.info);
    let awaitAll = await freshPings(workers, 120_000);
    const cpuBefore = cpuSeconds(serve.child.pid);
    const started = now();
    const created = await admin.jobs.create({ body: { action: 'ping', selection: { filter: {} } } });
    const requestMs = now() - started;
    const pings = await awaitAll();
    const cpu = cpuSeconds(serve.child.pid) - cpuBefore;
    let resultsAt = 0;
    let answeredAt: number | null = null;
    let answered = 0;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const { results: _failed, ...current } = await admin.jobs.get({ params: { id: created.id }, query: { status: 'failed' } });
      if (current.state !== 'running' && resultsAt === 0) resultsAt = now();
      answered = current.counts.answered;
      if (current.state !== 'running' && current.counts.sent === 0) {
        answeredAt = now();
        break;
      }
      if (Date.now() > deadline) break;
      await sleep(50);
    }
    job = {
      how: 'one POST /api/jobs {"action":"ping","selection":{"filter":{}}}',
      agents: agents.length,
      received: pings.received,
      seconds: round((pings.lastAt - started) / 1000),
      cpu_us_per_agent: round((cpu * 1e6) / agents.length),
      request_ms: round(requestMs),
      results_s: round((resultsAt - started) / 1000),
      answered_s: answeredAt === null ? null : round((answeredAt - started) / 1000),
      answered,
    };
    console.log(
      `  job: the request answered in ${job.request_ms} ms, every agent had its ping after ${job.seconds} s, every answer recorded after ${job.answered_s} s`,
    );
    await sleep(2000);

    // The old way: a request per device.
    awaitAll = await freshPings(workers, 120_000);
    const cpuBefore2 = cpuSeconds(serve.child.pid);
    const started2 = now();
    await pool(agents, 32, async (agent) => {
      try {
        await admin.agents.command({ params: { id: agent.agentId }, body: { command: 'ping' } });
      } catch (error) {
        // Past the socket plan's MQTT share (9,872 of 10,000 at a 20,000-descriptor limit) some
        // agents are not connected: a ping is refused for them, as the job records them offline.
        if ((error as { code?: string }).code !== 'ERROR_AGENT_OFFLINE') throw error;
      }
    });
    const pings2 = await awaitAll();
    perRequest = {
      how: 'POST /api/agents/:id/commands {"command":"ping"} for each agent, 32 at a time',
      agents: agents.length,
      received: pings2.received,
      seconds: round((pings2.lastAt - started2) / 1000),
      cpu_us_per_agent: round(((cpuSeconds(serve.child.pid) - cpuBefore2) * 1e6) / agents.length),
    };
    console.log(`  one request per device: every agent had its ping after ${perRequest.seconds} s`);
    servePeak = round(peakRssBytes(serve.child.pid) / MiB);
  } finally {
    // The server goes first (it closes every connection itself), then the agents.
    await serve.stop();
    for (const worker of workers) worker.child.process.send({ type: 'exit' });
    await Promise.all(workers.map((worker) => worker.child.stop()));
  }
  const mosquitto = await mosquittoFanOut(agents, dir, options.workers);
  console.log(`  mosquitto: every agent had its ping after ${mosquitto.seconds} s`);
  return {
    agents: agents.length,
    held,
    job,
    per_request: perRequest,
    mosquitto,
    ratio_to_mosquitto: round(job.seconds / mosquitto.seconds),
    serve_peak_rss_mib: servePeak,
    errors,
  };
}

/** Debian's mosquitto (anonymous, loopback): the same agents, the same message to each. */
export async function mosquittoFanOut(agents: readonly EnrolledAgent[], dir: string, count: number): Promise<FanOut> {
  const port = await freePort();
  const conf = join(dir, 'mosquitto-bulk.conf');
  writeFileSync(
    conf,
    [`listener ${port} 127.0.0.1`, 'allow_anonymous true', 'persistence false', 'max_connections -1', 'log_dest none', ''].join(
      '\n',
    ),
  );
  const broker = startChild(withFileLimit(['mosquitto', '-c', conf], childFileLimit()), {
    logFile: join(dir, 'mosquitto-bulk.log'),
  });
  const workers = Array.from({ length: count }, (_, i) => startWorker(dir, 30 + i));
  try {
    await waitForPort(port);
    await connectSteps('mosquitto', broker.pid, port, agents, [agents.length], workers, 64);
    await sleep(2000);
    const publisher = await mqtt.connectAsync({ host: '127.0.0.1', port, clientId: 'bench-bulk', reconnectPeriod: 0 });
    const awaitAll = await freshPings(workers, 120_000);
    const cpuBefore = cpuSeconds(broker.pid);
    const started = now();
    await pool(agents, 500, async (agent) => {
      await publisher.publishAsync(`${agent.topic}/Command/Ping`, JSON.stringify({ query: 'Ping' }), { qos: 1 });
    });
    const pings = await awaitAll();
    const cpu = cpuSeconds(broker.pid) - cpuBefore;
    await publisher.endAsync(true);
    return {
      how: 'one client publishes T/Command/Ping (QoS 1) to each agent, 500 in flight',
      agents: agents.length,
      received: pings.received,
      seconds: round((pings.lastAt - started) / 1000),
      cpu_us_per_agent: round((cpu * 1e6) / agents.length),
    };
  } finally {
    await broker.stop();
    for (const worker of workers) worker.child.process.send({ type: 'exit' });
    await Promise.all(workers.map((worker) => worker.child.stop()));
  }
}
