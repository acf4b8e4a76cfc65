import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { StartOptions } from '../../src-main/backend/server.ts';
import type { ServerInfo } from '../../src-main/backend/server-info.ts';
import { testClusterKey } from './backend.ts';

export interface ChildBackend {
  info: ServerInfo;
  child: ChildProcess;
  /** Resident memory of the server process, in bytes (Linux /proc). */
  rss(): number;
  stop(): Promise<void>;
}

/**
 * A real backend in a child process (`prefix` wraps the command, e.g. a shell that lowers
 * `ulimit -n` first). Every port is chosen by the OS.
 */
export async function startChildBackend(options: Partial<StartOptions> = {}, shellPrefix = ''): Promise<ChildBackend> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'mdm-child-'));
  const json = JSON.stringify({
    dataDir,
    port: 0,
    adminPort: 0,
    mqttPort: 0,
    mqttTlsPort: 0,
    host: '127.0.0.1',
    publicHost: '127.0.0.1',
    ...(options.databaseUrl ? testClusterKey(options.databaseUrl, dataDir, options) : {}),
    ...options,
  });
  const main = new URL('./child-backend-main.ts', import.meta.url).pathname;
  const quoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
  const child = spawn('sh', ['-c', `${shellPrefix} exec ${quoted(process.execPath)} ${quoted(main)} ${quoted(json)}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const info = await new Promise<ServerInfo>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => resolve(JSON.parse(line) as ServerInfo));
    child.once('exit', (code) => reject(new Error(`backend exited with ${code}`)));
  });
  return {
    info,
    child,
    rss: () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024,
    stop: async () => {
      // (A process killed by a signal has no exit code: its signal code says it is gone.)
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
