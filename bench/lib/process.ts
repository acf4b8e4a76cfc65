// Child processes of the bench: `serve`, the reference servers, load-generator workers.
// Everything listens on loopback ports chosen by the OS; everything started here is stopped here.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitForPort as waitForTcpPort } from '../../test/helpers/external-brokers.ts';
import type { ServerInfo } from '../../src-shared/contract/server-info.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SERVE_ENTRY = join(ROOT, 'src-main', 'cli', 'main.ts');

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux everywhere we run). */
const CLK_TCK = 100;

/** The hard limit on open files of this process: no child can go above it. */
export function hardFileLimit(): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const hard = line?.trim().split(/\s+/)[4];
  return hard === 'unlimited' || hard === undefined ? 1 << 20 : Number(hard);
}

/** The open-files limit a bench child gets: as many as wanted, capped by the hard limit. */
export function childFileLimit(wanted = 65_536): number {
  return Math.min(wanted, hardFileLimit());
}

/** Wraps a command so it runs with a raised open-files limit (bash's ulimit, then exec). */
export function withFileLimit(command: string[], limit = childFileLimit()): string[] {
  const quoted = command.map((part) => `'${part.replace(/'/g, `'\\''`)}'`).join(' ');
  return ['bash', '-c', `ulimit -n ${limit} && exec ${quoted}`];
}

/** CPU time (user + system) of a process so far, in seconds, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After "pid (comm) ": state is field 3, utime field 14, stime field 15 (1-based, whole line).
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** Resident memory of a process, in bytes (VmRSS). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

/** Peak resident memory of a process so far, in bytes (VmHWM). */
export function peakRssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

export function openFiles(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export { freePort };

/** Waits until a TCP port on 127.0.0.1 accepts connections, asked every 20 ms (as the bench always did). */
export const waitForPort = (port: number, timeoutMs = 10_000): Promise<void> => waitForTcpPort(port, timeoutMs, 20);

export interface Child {
  process: ChildProcess;
  pid: number;
  logFile: string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
  exited: Promise<number | null>;
}

/** Spawns a child whose output goes to a log file (kept for the report on failure). */
export function startChild(
  command: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; logFile: string; ipc?: boolean },
): Child {
  const fd = openSync(options.logFile, 'a');
  const child = spawn(command[0]!, command.slice(1), {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? process.env,
    stdio: options.ipc ? ['ignore', fd, fd, 'ipc'] : ['ignore', fd, fd],
  });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`could not start ${command.join(' ')}`);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  live.add(child);
  void exited.then(() => live.delete(child));
  return {
    process: child,
    pid: child.pid,
    logFile: options.logFile,
    exited,
    stop: async (graceMs = 10_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Every child still running; killed if the bench itself is interrupted or fails. */
const live = new Set<ChildProcess>();
export function killAllChildren(): void {
  for (const child of live) child.kill('SIGKILL');
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllChildren();
    process.exit(130);
  });
}
process.once('exit', killAllChildren);

/** DATA_DIR/server.json, as the contract describes it. */
export type ServerJson = ServerInfo;

export interface Serve {
  child: Child;
  info: ServerJson;
  dataDir: string;
  /** ms from spawn to server.json written. */
  startMs: number;
  stop(): Promise<void>;
}

/** A work folder for one scenario, removed by `cleanup()`. */
export function workDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `mdm-bench-${name}-`));
}

/**
 * `serve` in a child process on loopback only (agent API included), every port chosen by the OS,
 * with a raised open-files limit. Resolves once server.json is written.
 */
export async function startServe(options: {
  dataDir: string;
  logFile: string;
  nodeArgs?: string[];
  fileLimit?: number;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** More serve flags (e.g. --mqtt-broker mosquitto --mqtt-broker-url …). */
  extraArgs?: string[];
  /** Another tree's CLI entry (bench/compare.ts: a baseline checkout); this tree's by default. */
  entry?: string;
}): Promise<Serve> {
  const infoFile = join(options.dataDir, 'server.json');
  rmSync(infoFile, { force: true });
  const command = withFileLimit(
    [
      process.execPath,
      ...(options.nodeArgs ?? []),
      options.entry ?? SERVE_ENTRY,
      'serve',
      '--data-dir',
      options.dataDir,
      '--host',
      '127.0.0.1',
      '--public-host',
      '127.0.0.1',
      '--port',
      '0',
      '--admin-port',
      '0',
      '--mqtt-port',
      '0',
      '--mqtt-tls-port',
      '0',
      ...(options.extraArgs ?? []),
    ],
    options.fileLimit ?? childFileLimit(),
  );
  const started = performance.now();
  // Thousands of simulated devices enroll from this one address: no per-address initSession limit.
  const env = { MDM_CONSOLE_SESSION_RATE_PER_ADDRESS: '0', ...(options.env ?? process.env) };
  const child = startChild(command, { logFile: options.logFile, env });
  const until = Date.now() + (options.timeoutMs ?? 30_000);
  let text = '';
  while (!text) {
    if (child.process.exitCode !== null) throw new Error(`serve exited with ${child.process.exitCode}; see ${options.logFile}`);
    if (Date.now() > until) {
      await child.stop();
      throw new Error(`serve did not write server.json in time; see ${options.logFile}`);
    }
    if (existsSync(infoFile)) {
      try {
        text = readFileSync(infoFile, 'utf8');
        JSON.parse(text);
      } catch {
        text = '';
      }
    }
    if (!text) await sleep(5);
  }
  const startMs = performance.now() - started;
  const info = JSON.parse(text) as ServerJson;
  return { child, info, dataDir: options.dataDir, startMs, stop: () => child.stop(30_000) };
}
