// Scenario 6: a 50 MiB package deployed to a fleet of connected simulated devices (1,000 at full
// scale). Each device gets the retained deployApp policy, downloads the package by 8 MiB ranges,
// checks its size and SHA-256 and reports received, in progress and done over MQTT. Measured: the
// time from the admin's POST until every task is done, the server's CPU and peak RSS over that
// time, and the download throughput next to nginx serving the same bytes to the same devices
// (same ranges, same checks) in the same run.
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { DeployWorkerReply, DeployWorkerRequest } from '../load/deploy-worker.ts';
import { adminOf } from '../lib/admin.ts';
import { cpuSeconds, peakRssBytes, ROOT, rssBytes, startChild, startServe, withFileLimit, type Child } from '../lib/process.ts';
import { MiB, round } from '../lib/stats.ts';
import { startNginx, writeRandomFile } from './downloads.ts';

export const DEPLOY_PACKAGE_SIZE = 50 * MiB;
const CHUNK = 8 * MiB;
/**
 * A device whose request meets a network error or a 503 tries again (resuming at the byte it
 * reached), as download managers do, up to this many times per download; nginx's downloads alike.
 * On a saturated 2-core machine a late connect is the load generator's, not what is measured; the
 * number of such retries is reported with the figures.
 */
const RETRIES = 10;

export interface Worker {
  child: Child;
  request<T extends DeployWorkerReply['type']>(
    message: DeployWorkerRequest,
    reply: T,
  ): Promise<Extract<DeployWorkerReply, { type: T }>>;
}

export function startWorker(workDir: string, index: number): Worker {
  const child = startChild(withFileLimit([process.execPath, join(ROOT, 'bench', 'load', 'deploy-worker.ts'), String(index)]), {
    logFile: join(workDir, `deploy-worker-${index}.log`),
    ipc: true,
  });
  return {
    child,
    request: (message, reply) =>
      new Promise((resolve, reject) => {
        const onMessage = (answer: DeployWorkerReply) => {
          if (answer.type !== reply) return;
          child.process.off('message', onMessage);
          child.process.off('exit', onExit);
          resolve(answer as Extract<DeployWorkerReply, { type: typeof reply }>);
        };
        const onExit = () => reject(new Error(`deploy worker ${index} exited; see ${child.logFile}`));
        child.process.on('message', onMessage);
        child.process.once('exit', onExit);
        child.process.send(message);
      }),
  };
}

export interface DeploymentResult {
  devices: number;
  package_mib: number;
  /** From the POST of the deployment to the last device's done. */
  seconds_to_all_done: number;
  done: number;
  failed: number;
  server_cpu_s: number;
  /** Highest RSS sampled while the deployment ran, and the process's peak over its life (VmHWM). */
  server_rss_peak_mib: number;
  server_vmhwm_mib: number;
  serve_mib_per_s: number;
  nginx_seconds: number;
  nginx_mib_per_s: number;
  /** serve throughput (deployment end to end) / nginx throughput (the same downloads only). */
  ratio: number;
  /** Requests tried again (each resuming at the byte reached): serve's deployment, nginx's downloads. */
  resumed: { serve: number; nginx: number };
  /** nginx's CPU over the same downloads. */
  nginx_cpu_s: number;
  /** CPU per GiB sent: serve over the whole deployment (MQTT reports included), nginx over its downloads. */
  server_cpu_s_per_gib: number;
  nginx_cpu_s_per_gib: number;
}

/** Issue 24: a deployment's downloads at least 0.9x nginx's throughput. */
export const DEPLOYMENT_GOAL = 0.9;

const now = () => performance.timeOrigin + performance.now();

export async function deploymentScenario(
  workDir: string,
  options: { devices: number; workers: number },
): Promise<DeploymentResult> {
  const serve = await startServe({ dataDir: join(workDir, 'deploy-data'), logFile: join(workDir, 'serve-deployments.log') });
  const workers: Worker[] = [];
  let nginx: Awaited<ReturnType<typeof startNginx>> | null = null;
  try {
    const fleet = 'Bench deployment';
    await adminOf(serve.info).fleets.create({ body: { name: fleet } });
    const invitations = Array.from({ length: options.devices }, (_, i) => ({ email: `deploy-${i}@bench.example`, fleet }));
    const invites: { deeplink: string; email: string }[] = [];
    for (let start = 0; start < invitations.length; start += 5000) {
      const { items } = await adminOf(serve.info).invitations.createMany({
        body: {
          invitations: invitations.slice(start, start + 5000),
          send_email: false,
        },
      });
      invites.push(...items);
    }

    const filesDir = join(workDir, 'deploy-files');
    mkdirSync(filesDir, { recursive: true });
    const file = join(filesDir, 'bench-50MiB.apk');
    writeRandomFile(file, DEPLOY_PACKAGE_SIZE);
    const sha256 = await new Promise<string>((resolve, reject) => {
      const hash = createHash('sha256');
      createReadStream(file)
        .on('data', (chunk) => hash.update(chunk))
        .once('end', () => resolve(hash.digest('hex')))
        .once('error', reject);
    });
    // Streamed, as the console and the CLI upload (not an APK: its package name is given).
    const uploaded = await adminOf(serve.info).packages.upload({
      body: Readable.toWeb(createReadStream(file)) as ReadableStream,
      query: { name: 'bench-50MiB.apk', package_name: 'org.bench.deploy', version_code: 1, if_unreadable: 'keep' },
      headers: {
        'content-length': String(statSync(file).size),
      },
    });

    for (let i = 0; i < options.workers; i++) workers.push(startWorker(workDir, i));
    const share = Math.ceil(invites.length / options.workers);
    const started = await Promise.all(
      workers.map((worker, i) =>
        worker.request(
          {
            type: 'start',
            invites: invites.slice(i * share, (i + 1) * share),
            concurrency: 16,
            chunkSize: CHUNK,
            retries: RETRIES,
          },
          'started',
        ),
      ),
    );
    const ready = started.reduce((sum, s) => sum + s.ok, 0);
    if (ready !== options.devices)
      throw new Error(`only ${ready} of ${options.devices} devices started: ${started.flatMap((s) => s.errors).join('; ')}`);

    // The deployment, measured from the admin's request to the last device's done.
    const pid = serve.child.pid;
    let peak = rssBytes(pid);
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 250);
    const cpuBefore = cpuSeconds(pid);
    const t0 = now();
    const deployment = await adminOf(serve.info).deployments.create({
      body: {
        kind: 'package',
        item_id: uploaded.id,
        fleet: 'Bench deployment',
      },
    });
    const finished = await Promise.all(
      workers.map((worker) => worker.request({ type: 'await-done', taskId: deployment.id, timeoutMs: 30 * 60_000 }, 'done')),
    );
    // Done is when the server has every report (the devices' last MQTT messages may still be on their way).
    let counts = { done: 0, failed: 0 };
    for (const until = Date.now() + 60_000; counts.done + counts.failed < options.devices && Date.now() < until;) {
      const { items } = await adminOf(serve.info).deployments.list({
        query: { fleet_id: deployment.fleet_id!, state: 'active' },
      });
      counts = items.find((item) => item.id === deployment.id) ?? counts;
      if (counts.done + counts.failed < options.devices) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const endAt = Math.max(now(), ...finished.map((f) => f.lastAt));
    const cpu = cpuSeconds(pid) - cpuBefore;
    clearInterval(sampler);
    const seconds = (endAt - t0) / 1000;
    const { done, failed } = counts;
    if (failed > 0) console.log(`  failed tasks: ${finished.flatMap((f) => f.reasons).join('; ')}`);

    // The same devices, the same ranges and checks, from nginx.
    nginx = await startNginx(workDir, filesDir);
    const nginxCpuBefore = cpuSeconds(nginx.child.pid);
    const r0 = now();
    const reference = await Promise.all(
      workers.map((worker) =>
        worker.request(
          {
            type: 'reference',
            url: `http://127.0.0.1:${nginx!.port}/bench-50MiB.apk`,
            size: DEPLOY_PACKAGE_SIZE,
            sha256,
            chunkSize: CHUNK,
            timeoutMs: 30 * 60_000,
            retries: RETRIES,
          },
          'reference-done',
        ),
      ),
    );
    const nginxSeconds = (Math.max(...reference.map((r) => r.lastAt)) - r0) / 1000;
    const nginxCpu = cpuSeconds(nginx.child.pid) - nginxCpuBefore;
    const nginxOk = reference.reduce((sum, r) => sum + r.ok, 0);
    if (nginxOk !== options.devices)
      throw new Error(
        `nginx reference: ${nginxOk} of ${options.devices} downloads ok: ${reference.flatMap((r) => r.errors).join('; ')}`,
      );

    const totalMiB = (options.devices * DEPLOY_PACKAGE_SIZE) / MiB;
    const serveRate = totalMiB / seconds;
    const nginxRate = totalMiB / nginxSeconds;
    const resumed = {
      serve: finished.reduce((sum, f) => sum + f.resumed, 0),
      nginx: reference.reduce((sum, r) => sum + r.resumed, 0),
    };
    console.log(
      `  ${done} of ${options.devices} done in ${round(seconds)} s (${round(serveRate)} MiB/s, CPU ${round(cpu)} s, peak RSS ${round(peak / MiB)} MiB, ${resumed.serve} requests retried); nginx ${round(nginxSeconds)} s (${round(nginxRate)} MiB/s, ${resumed.nginx} retried)`,
    );
    return {
      devices: options.devices,
      package_mib: DEPLOY_PACKAGE_SIZE / MiB,
      seconds_to_all_done: round(seconds),
      done,
      failed,
      server_cpu_s: round(cpu),
      server_rss_peak_mib: round(peak / MiB),
      server_vmhwm_mib: round(peakRssBytes(pid) / MiB),
      serve_mib_per_s: round(serveRate),
      nginx_seconds: round(nginxSeconds),
      nginx_mib_per_s: round(nginxRate),
      ratio: round(serveRate / nginxRate),
      resumed,
      nginx_cpu_s: round(nginxCpu),
      server_cpu_s_per_gib: round(cpu / (totalMiB / 1024)),
      nginx_cpu_s_per_gib: round(nginxCpu / (totalMiB / 1024)),
    };
  } finally {
    for (const worker of workers) {
      if (worker.child.process.connected) worker.child.process.send({ type: 'exit' });
      await worker.child.stop(5_000);
    }
    await nginx?.child.stop();
    await serve.stop();
  }
}
