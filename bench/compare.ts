// Before/after in one run: the same scenario against `serve` from a baseline tree (a checkout of
// an earlier commit, e.g. `git archive main | tar -x -C /tmp/base`, node_modules linked) and from
// this tree, each next to its own reference (nginx, bare Fastify) started in the same run, in
// alternating order. Not part of `npm run bench`; for measuring one change on a shared machine.
//
//   node bench/compare.ts --baseline /tmp/base --only downloads|enrollment|fanout [--scale 0.1] [--rounds 2] [--cpu-prof DIR]
//
// fanout: both serves up at once, each with its own 10,000 × scale enrolled agents held by two
// load processes; in turns, one bulk ping (POST /api/jobs, every device) to each; then mosquitto
// delivering the same message to the same agents (one publisher, 500 in flight).
import { mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { describeMachine } from './lib/machine.ts';
import { ROOT, startServe, workDir, type Serve } from './lib/process.ts';
import { enrollSilently, startAgentSession } from '../src-main/device/index.ts';
import { inviteMany } from './lib/admin.ts';
import {
  measure,
  PACKAGE_SIZE,
  startNginx,
  upload,
  writeRandomFile,
  type Target,
  type Throughput,
} from './scenarios/downloads.ts';
import { enrollmentScenario } from './scenarios/enrollment.ts';
import { adminOf } from './lib/admin.ts';
import { enrollLoad, type EnrolledAgent } from './load/enroll.ts';
import { cpuSeconds, sleep } from './lib/process.ts';
import { connectSteps, startWorker, type Worker } from './scenarios/broker.ts';
import { freshPings, mosquittoFanOut } from './scenarios/bulk-ping.ts';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    only: { type: 'string' },
    scale: { type: 'string' },
    rounds: { type: 'string' },
    /** Writes a CPU profile of each serve (node --cpu-prof) into this folder. */
    'cpu-prof': { type: 'string' },
  },
});
if (!values.baseline) throw new Error('--baseline DIR: a tree of the commit to compare with');
const scale = Number(values.scale ?? 0.1);
const rounds = Number(values.rounds ?? 2);
const only = values.only ?? 'downloads';
const trees = { before: values.baseline, after: ROOT };
const machine = describeMachine();
console.log(
  `${machine.cpu_model}, ${machine.cores} cores, Node ${machine.node}; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const dir = workDir('compare');
const results: Record<string, unknown[]> = { before: [], after: [] };
mkdirSync(dir, { recursive: true });

async function started(which: 'before' | 'after', name: string): Promise<Serve> {
  const dataDir = join(dir, `${which}-${name}`);
  mkdirSync(dataDir, { recursive: true });
  const profile = values['cpu-prof'];
  return startServe({
    dataDir,
    logFile: join(dir, `${which}-${name}.log`),
    entry: join(trees[which], 'src-main', 'cli', 'main.ts'),
    ...(profile ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', join(profile, which)] } : {}),
  });
}

if (only === 'downloads') await downloads();
else if (only === 'fanout') await fanout();
else await enrollment();

/**
 * Both serves and nginx up at once, the same file on each; many short rounds, each server's turn
 * in a rotating order, CPU and bytes summed per server: the machine's load weighs on all alike.
 */
async function downloads(): Promise<void> {
  const filesDir = join(dir, 'files');
  mkdirSync(filesDir, { recursive: true });
  const file = join(filesDir, 'bench-256MiB.apk');
  writeRandomFile(file, PACKAGE_SIZE);
  const serves = { before: await started('before', 'downloads'), after: await started('after', 'downloads') };
  const nginx = await startNginx(dir, filesDir);
  // A second reference: nginx without sendfile, copying through its buffers as Node must.
  const copying = await startNginx(dir, filesDir, { sendfile: false });
  try {
    const targets: Record<string, { pid: number; target: Target }> = {
      nginx: {
        pid: nginx.child.pid,
        target: { url: `http://127.0.0.1:${nginx.port}/bench-256MiB.apk`, headers: { accept: 'application/octet-stream' } },
      },
      'nginx-nosendfile': {
        pid: copying.child.pid,
        target: { url: `http://127.0.0.1:${copying.port}/bench-256MiB.apk`, headers: { accept: 'application/octet-stream' } },
      },
    };
    for (const which of ['before', 'after'] as const) {
      const serve = serves[which];
      const item = await upload(serve, file, 'bench-256MiB.apk');
      const [invite] = await inviteMany(serve.info, 1, 'download');
      const device = await enrollSilently({ deeplink: invite!.deeplink, email: invite!.email });
      const session = await startAgentSession(device.backendUrl, device.apiToken);
      targets[which] = {
        pid: serve.child.pid,
        target: {
          url: `${serve.info.api_url}/PluginMdmPackage/${item.id}?session_token=${session.sessionToken}`,
          headers: { accept: 'application/octet-stream' },
        },
      };
    }
    const names = Object.keys(targets);
    for (const kind of ['whole', 'ranges'] as const) {
      const sums = Object.fromEntries(names.map((name) => [name, { cpu: 0, gib: 0, seconds: 0 }]));
      const [requests, concurrency] =
        kind === 'whole' ? [Math.max(2, Math.round(4 * scale)), 2] : [Math.max(100, Math.round(400 * scale)), 8];
      for (let round = 0; round < rounds; round++) {
        for (let i = 0; i < names.length; i++) {
          const name = names[(round + i) % names.length]!;
          const { pid, target } = targets[name]!;
          const result: Throughput = await measure(pid, target, kind, requests, concurrency);
          const gib = (result.mib_per_s * result.seconds) / 1024;
          sums[name]!.cpu += result.server_cpu_s_per_gib * gib;
          sums[name]!.gib += gib;
          sums[name]!.seconds += result.seconds;
        }
      }
      const line = names
        .map((name) => {
          const sum = sums[name]!;
          return `${name} ${(sum.cpu / sum.gib).toFixed(3)} s/GiB (${(sum.cpu / sum.gib / (sums.nginx!.cpu / sums.nginx!.gib)).toFixed(2)}x nginx), ${((sum.gib * 1024) / sum.seconds).toFixed(0)} MiB/s`;
        })
        .join('; ');
      console.log(`${kind} (${rounds} rounds of ${requests}): ${line}`);
      results[kind] = [sums];
    }
  } finally {
    await nginx.child.stop();
    await copying.child.stop();
    await serves.before.stop();
    await serves.after.stop();
  }
}

async function enrollment(): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (const which of round % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const)) {
      const serve = await started(which, `enrollment-${round}`);
      try {
        const count = Math.max(300, Math.round(10_000 * scale));
        const work = join(dir, `${which}-${round}`);
        mkdirSync(work, { recursive: true });
        const { result } = await enrollmentScenario(serve, work, {
          count,
          warm: Math.max(50, Math.round(500 * scale)),
          concurrency: 64,
          ceilingCount: Math.max(300, Math.round(6_000 * scale)),
          rounds: 3,
        });
        console.log(
          `${which}: ${result.serve.cpu_ms_per_enrollment} ms CPU/enrollment (bare Fastify ${result.ceiling.cpu_ms_per_enrollment} ms: ${result.ratio}x), ${result.serve.enrollments_per_s}/s`,
        );
        results[which]!.push(result);
      } finally {
        await serve.stop();
      }
    }
  }
}

/**
 * A command to every agent: one bulk ping per serve and round, in alternating order, on agents
 * held by each serve at once. Per ping: the serve's CPU until every agent has it (per agent), the
 * time until then, and the CPU and time until every answer is recorded (the job's results all
 * answered: the replies' events and writes included). Then mosquitto with the after tree's agents.
 */
async function fanout(): Promise<void> {
  const count = Math.max(500, Math.round(10_000 * scale));
  const serves = { before: await started('before', 'fanout'), after: await started('after', 'fanout') };
  const workers: Record<string, Worker[]> = { before: [], after: [] };
  const agents: Record<string, EnrolledAgent[]> = {};
  const now = () => performance.timeOrigin + performance.now();
  try {
    for (const which of ['before', 'after'] as const) {
      const serve = serves[which];
      const invites = await inviteMany(serve.info, count, `fanout-${which}`);
      const load = await enrollLoad(invites, 32, { serialPrefix: `FO${which === 'before' ? 'B' : 'A'}` });
      if (load.errors.length > 0) throw new Error(`enrollment failed: ${load.errors.find(Boolean)}`);
      agents[which] = load.enrolled;
      workers[which] = [0, 1].map((i) => startWorker(dir, (which === 'before' ? 40 : 50) + i));
      const connected = await connectSteps(
        which,
        serve.child.pid,
        serve.info.mqtt_port,
        load.enrolled,
        [count],
        workers[which],
        64,
      );
      if (connected.errors.length > 0) console.log(`  ${which}: ${connected.errors.length} connection errors`);
    }
    await sleep(2000);
    const sums = { before: { cpu: 0, cpuAll: 0, s: 0, sAll: 0, n: 0 }, after: { cpu: 0, cpuAll: 0, s: 0, sAll: 0, n: 0 } };
    for (let round = 0; round < rounds; round++) {
      for (const which of round % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const)) {
        const serve = serves[which];
        const admin = adminOf(serve.info);
        const awaitAll = await freshPings(workers[which]!, 120_000);
        const cpuBefore = cpuSeconds(serve.child.pid);
        const startedAt = now();
        const job = await admin.jobs.create({ body: { action: 'ping', selection: { filter: {} } } });
        const pings = await awaitAll();
        const cpu = cpuSeconds(serve.child.pid) - cpuBefore;
        let answeredAt = 0;
        for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(50)) {
          const { results: _none, ...current } = await admin.jobs.get({ params: { id: job.id }, query: { status: 'failed' } });
          if (current.state !== 'running' && current.counts.sent === 0) {
            answeredAt = now();
            break;
          }
        }
        const cpuAll = cpuSeconds(serve.child.pid) - cpuBefore;
        const n = agents[which]!.length;
        if (pings.received !== n || answeredAt === 0)
          console.log(
            `  ${which}: only ${pings.received} of ${n} received${answeredAt === 0 ? ', answers not all recorded' : ''}`,
          );
        const sum = sums[which];
        sum.cpu += cpu;
        sum.cpuAll += cpuAll;
        sum.s += (pings.lastAt - startedAt) / 1000;
        sum.sAll += (answeredAt - startedAt) / 1000;
        sum.n += n;
        console.log(
          `${which} round ${round}: all ${n} had the ping after ${((pings.lastAt - startedAt) / 1000).toFixed(2)} s, ${((cpu * 1e6) / n).toFixed(0)} µs CPU per agent; every answer recorded after ${((answeredAt - startedAt) / 1000).toFixed(2)} s, ${((cpuAll * 1e6) / n).toFixed(0)} µs per agent`,
        );
        await sleep(1000);
      }
    }
    results.fanout = [sums];
  } finally {
    for (const which of ['before', 'after'] as const) {
      await serves[which].stop();
      for (const worker of workers[which]!) worker.child.process.send({ type: 'exit' });
      await Promise.all(workers[which]!.map((worker) => worker.child.stop()));
    }
  }
  const mosquitto = await mosquittoFanOut(agents.after!, dir, 2);
  results.mosquitto = [mosquitto];
  const per = (which: 'before' | 'after') => {
    const sum = (results.fanout![0] as Record<string, { cpu: number; cpuAll: number; s: number; sAll: number; n: number }>)[
      which
    ]!;
    const r = sum.n / count;
    return `${which}: ${(sum.s / r).toFixed(2)} s until all received (${(sum.s / r / mosquitto.seconds).toFixed(2)}x mosquitto), ${((sum.cpu * 1e6) / sum.n).toFixed(0)} µs CPU per command (${((sum.cpu * 1e6) / sum.n / mosquitto.cpu_us_per_agent).toFixed(2)}x); answers recorded after ${(sum.sAll / r).toFixed(2)} s, ${((sum.cpuAll * 1e6) / sum.n).toFixed(0)} µs per command with them`;
  };
  console.log(
    `${count} agents, mean of ${rounds} pings each; mosquitto ${mosquitto.seconds} s, ${mosquitto.cpu_us_per_agent} µs CPU per command`,
  );
  console.log(per('before'));
  console.log(per('after'));
}

console.log(
  `load average at the end ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(JSON.stringify({ machine, results }));
rmSync(dir, { recursive: true, force: true });
