// Scenario 3: a 256 MiB package downloaded whole and by 1 MiB ranges from `serve` (agent API,
// session of an enrolled simulated device), next to Debian's nginx serving the same file from a
// loopback port with its own minimal configuration, in the same run.
import { randomFillSync } from 'node:crypto';
import { closeSync, createReadStream, mkdirSync, openSync, writeSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { enrollSilently, startAgentSession } from '../../src-main/device/index.ts';
import { adminOf, inviteMany } from '../lib/admin.ts';
import { childFileLimit, cpuSeconds, freePort, startChild, waitForPort, withFileLimit, type Serve } from '../lib/process.ts';
import { MiB, round } from '../lib/stats.ts';

export const PACKAGE_SIZE = 256 * MiB;
const RANGE_SIZE = MiB;

/** A file of random bytes (incompressible, nothing to gain from any cache but the page cache). */
export function writeRandomFile(path: string, size: number): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.allocUnsafe(4 * MiB);
  for (let written = 0; written < size; written += chunk.length)
    writeSync(fd, randomFillSync(chunk), 0, Math.min(chunk.length, size - written));
  closeSync(fd);
}

/**
 * Uploads a file through the admin API (raw body, streamed). Random bytes are not an APK: the
 * package name is given, as the deployments scenario does (else a 422, the manifest unreadable).
 */
export function upload(serve: Serve, path: string, name: string): Promise<{ id: number }> {
  return adminOf(serve.info).packages.upload({
    body: Readable.toWeb(createReadStream(path)) as ReadableStream,
    query: { name, package_name: 'org.bench.download', version_code: 1, if_unreadable: 'keep' },
  });
}

export interface Target {
  url: string;
  headers: Record<string, string>;
}

/** One GET, body counted and discarded; checks status and length. */
function fetchBytes(
  agent: Agent,
  target: Target,
  range: string | null,
  expected: { status: number; length: number },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(target.url, { agent, headers: range ? { ...target.headers, range } : target.headers });
    req.once('response', (response) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.once('end', () => {
        if (response.statusCode !== expected.status || bytes !== expected.length) {
          reject(
            new Error(
              `${target.url} ${range ?? ''}: HTTP ${response.statusCode}, ${bytes} bytes (expected ${expected.status}, ${expected.length})`,
            ),
          );
        } else resolve(bytes);
      });
      response.once('error', reject);
    });
    req.once('error', reject);
    req.end();
  });
}

export interface Throughput {
  /** Throughput of every round, MiB/s (the figures below are those of the median round). */
  rounds_mib_per_s?: number[];
  requests: number;
  concurrency: number;
  seconds: number;
  mib_per_s: number;
  requests_per_s: number;
  /** Server CPU seconds per GiB sent. */
  server_cpu_s_per_gib: number;
}

export async function measure(
  pid: number,
  target: Target,
  kind: 'whole' | 'ranges',
  requests: number,
  concurrency: number,
): Promise<Throughput> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const ranges = Array.from({ length: requests }, (_, i) => {
    // Spread over the whole file, in a fixed pseudo-random order (the same for every server).
    const start = ((i * 7919) % (PACKAGE_SIZE / RANGE_SIZE)) * RANGE_SIZE;
    return `bytes=${start}-${start + RANGE_SIZE - 1}`;
  });
  const one = (i: number) =>
    kind === 'whole'
      ? fetchBytes(agent, target, null, { status: 200, length: PACKAGE_SIZE })
      : fetchBytes(agent, target, ranges[i]!, { status: 206, length: RANGE_SIZE });
  await Promise.all(Array.from({ length: concurrency }, (_, i) => one(i))); // warm: connections, caches, JIT
  let next = 0;
  let bytes = 0;
  const cpuBefore = cpuSeconds(pid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const received = await one(next++);
        bytes += received;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(pid) - cpuBefore;
  agent.destroy();
  return {
    requests,
    concurrency,
    seconds: round(seconds),
    mib_per_s: round(bytes / MiB / seconds),
    requests_per_s: round(requests / seconds),
    server_cpu_s_per_gib: round(cpu / (bytes / 1024 / MiB)),
  };
}

/** The round of median throughput, with every round's throughput. */
function medianRound(rounds: Throughput[]): Throughput {
  const sorted = [...rounds].sort((a, b) => a.mib_per_s - b.mib_per_s);
  return { ...sorted[Math.floor((sorted.length - 1) / 2)]!, rounds_mib_per_s: rounds.map((r) => r.mib_per_s) };
}

/**
 * nginx with a minimal configuration of its own: one worker, sendfile, loopback only, and as many
 * connections as the bench's open-files limit allows (1,000 devices downloading at once opened
 * more than nginx's default 1,024). `sendfile: false` (bench/compare.ts's second reference): nginx
 * reading into its buffers and writing them, as a server without zero-copy must.
 */
export async function startNginx(workDir: string, root: string, options: { sendfile?: boolean } = {}) {
  const files = childFileLimit();
  const sendfile = options.sendfile ?? true;
  const prefix = join(workDir, sendfile ? 'nginx' : 'nginx-nosendfile');
  mkdirSync(join(prefix, 'tmp'), { recursive: true });
  const port = await freePort();
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
master_process off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
worker_rlimit_nofile ${files};
events { worker_connections ${files - 64}; }
http {
  access_log off;
  sendfile ${sendfile ? 'on' : 'off'};
  tcp_nopush on;
  keepalive_requests 100000;
  client_body_temp_path ${prefix}/tmp/client;
  proxy_temp_path ${prefix}/tmp/proxy;
  fastcgi_temp_path ${prefix}/tmp/fastcgi;
  uwsgi_temp_path ${prefix}/tmp/uwsgi;
  scgi_temp_path ${prefix}/tmp/scgi;
  types { application/octet-stream apk; }
  server {
    listen 127.0.0.1:${port};
    root ${root};
  }
}
`,
  );
  const child = startChild(withFileLimit(['nginx', '-p', prefix, '-e', join(prefix, 'error.log'), '-c', conf], files), {
    logFile: join(prefix, 'stdout.log'),
  });
  await waitForPort(port);
  return { child, port };
}

/** Issue 24: the server's CPU per byte sent at most twice nginx's, whole and by ranges. */
export const DOWNLOAD_CPU_GOAL = 2;

export interface DownloadKind {
  serve: Throughput;
  nginx: Throughput;
  /** Throughput, serve / nginx. */
  ratio: number;
  /** Server CPU per GiB sent, serve / nginx (goal ≤ DOWNLOAD_CPU_GOAL). */
  cpu_ratio: number;
}

export interface DownloadResult {
  whole: DownloadKind;
  ranges: DownloadKind;
  /** The goal on cpu_ratio. */
  target: number;
  met: boolean;
}

export async function downloadScenario(
  serve: Serve,
  workDir: string,
  options: { wholeRequests: number; wholeConcurrency: number; rangeRequests: number; rangeConcurrency: number; rounds: number },
): Promise<DownloadResult> {
  const filesDir = join(workDir, 'files');
  mkdirSync(filesDir, { recursive: true });
  const file = join(filesDir, 'bench-256MiB.apk');
  writeRandomFile(file, PACKAGE_SIZE);
  const item = await upload(serve, file, 'bench-256MiB.apk');

  // A device enrolled by the simulator; its api_token opens the download session, as agents do.
  const [invite] = await inviteMany(serve.info, 1, 'download');
  const device = await enrollSilently({ deeplink: invite!.deeplink, email: invite!.email });
  const session = await startAgentSession(device.backendUrl, device.apiToken);
  const serveTarget: Target = {
    url: `${serve.info.api_url}/PluginMdmPackage/${item.id}?session_token=${session.sessionToken}`,
    headers: { accept: 'application/octet-stream' },
  };

  const nginx = await startNginx(workDir, filesDir);
  try {
    const nginxTarget: Target = {
      url: `http://127.0.0.1:${nginx.port}/bench-256MiB.apk`,
      headers: { accept: 'application/octet-stream' },
    };
    // Rounds alternate which server goes first; each server's figure is the median of its rounds
    // (the machine's other work comes and goes during a run).
    const run = async (kind: 'whole' | 'ranges') => {
      const [requests, concurrency] =
        kind === 'whole' ? [options.wholeRequests, options.wholeConcurrency] : [options.rangeRequests, options.rangeConcurrency];
      const serveRounds: Throughput[] = [];
      const nginxRounds: Throughput[] = [];
      for (let round = 0; round < options.rounds; round++) {
        const order = round % 2 === 0 ? (['nginx', 'serve'] as const) : (['serve', 'nginx'] as const);
        for (const server of order) {
          if (server === 'nginx') nginxRounds.push(await measure(nginx.child.pid, nginxTarget, kind, requests, concurrency));
          else serveRounds.push(await measure(serve.child.pid, serveTarget, kind, requests, concurrency));
        }
      }
      const serveFigures = medianRound(serveRounds);
      const nginxFigures = medianRound(nginxRounds);
      console.log(
        `  ${kind}: serve ${serveFigures.mib_per_s} MiB/s, nginx ${nginxFigures.mib_per_s} MiB/s (median of ${options.rounds} rounds)`,
      );
      return {
        serve: serveFigures,
        nginx: nginxFigures,
        ratio: round(serveFigures.mib_per_s / nginxFigures.mib_per_s),
        cpu_ratio: round(serveFigures.server_cpu_s_per_gib / nginxFigures.server_cpu_s_per_gib),
      };
    };
    const whole = await run('whole');
    const ranges = await run('ranges');
    return {
      whole,
      ranges,
      target: DOWNLOAD_CPU_GOAL,
      met: whole.cpu_ratio <= DOWNLOAD_CPU_GOAL && ranges.cpu_ratio <= DOWNLOAD_CPU_GOAL,
    };
  } finally {
    await nginx.child.stop();
  }
}
