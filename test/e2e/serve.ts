// Starts `mdm-console serve` as a user would (a child process), on loopback with free ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ServerInfo } from '../../src-shared/contract/server-info.ts';

export type { ServerInfo };

export interface RunningServe {
  info: ServerInfo;
  process: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

export const ROOT = resolve(import.meta.dirname, '../..');
export const CLI = join(ROOT, 'src-main/cli/main.ts');

export async function startServe({
  dataDir = mkdtempSync(join(tmpdir(), 'mdm-e2e-')),
  keepData = false,
} = {}): Promise<RunningServe> {
  const child = spawn(
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
    ],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MDM_CONSOLE_RENDERER_DIR: join(ROOT, 'out/renderer') },
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const file = join(dataDir, 'server.json');
  const deadline = Date.now() + 30_000;
  while (!(existsSync(file) && output.includes('Console:'))) {
    if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) throw new Error(`serve did not start within 30 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const info = JSON.parse(readFileSync(file, 'utf8')) as ServerInfo;
  return {
    info,
    process: child,
    output: () => output,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
