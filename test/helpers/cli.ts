// The CLI as a user runs it: a real `serve` spawned on port 0, and each command its own process.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const CLI = join(import.meta.dirname, '../../src-main/cli/main.ts');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** One CLI command against `dataDir`; the simulator (`agent`) knows only the wire and takes no data dir. */
export async function runCli(dataDir: string, args: string[], timeoutMs = 60_000): Promise<CliResult> {
  try {
    const full = args[0] === 'agent' ? args : [...args, '--data-dir', dataDir];
    const { stdout, stderr } = await run(process.execPath, [CLI, ...full], { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

export interface RunningServe {
  dataDir: string;
  process: ChildProcess;
  /** All it printed so far (stdout and stderr). */
  output(): string;
  waitFor(check: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Kills it if still running, and removes its data dir. */
  stop(signal: NodeJS.Signals): void;
}

/** `serve` on a fresh data dir, every port OS-chosen; resolves once server.json is written (and, with `untilBanner`, the banner printed). */
export async function startServe(
  dataDirPrefix: string,
  { timeoutMs = 20_000, untilBanner = false, extraArgs = [] as string[], env = undefined as NodeJS.ProcessEnv | undefined } = {},
): Promise<RunningServe> {
  const dataDir = mkdtempSync(join(tmpdir(), dataDirPrefix));
  const server = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--data-dir',
      dataDir,
      '--port',
      '0',
      '--admin-port',
      '0',
      '--mqtt-port',
      '0',
      '--mqtt-tls-port',
      '0',
      '--public-host',
      '127.0.0.1',
      '--host',
      '127.0.0.1',
      ...extraArgs,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env },
  );
  let output = '';
  server.stdout!.on('data', (chunk) => (output += chunk));
  server.stderr!.on('data', (chunk) => (output += chunk));
  const waitFor = async (check: () => boolean, what: string, waitMs = 20_000) => {
    const end = Date.now() + waitMs;
    while (!check()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; server said:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  await waitFor(
    () => existsSync(join(dataDir, 'server.json')) && (!untilBanner || output.includes('Press Ctrl+C')),
    'serve to start',
    timeoutMs,
  );
  return {
    dataDir,
    process: server,
    output: () => output,
    waitFor,
    stop: (signal) => {
      if (server.exitCode === null) server.kill(signal);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
