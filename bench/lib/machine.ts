import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { hardFileLimit } from './process.ts';

export interface Machine {
  cpu_model: string;
  cores: number;
  memory_gib: number;
  node: string;
  kernel: string;
  os: string;
  open_files_hard_limit: number;
  load_average_at_start: number[];
  versions: Record<string, string>;
}

function packageVersion(name: string): string {
  try {
    return (
      execFileSync('dpkg-query', ['-W', '-f=${Version}', name], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim() || 'not installed'
    );
  } catch {
    return 'not installed';
  }
}

function osName(): string {
  try {
    return /PRETTY_NAME="([^"]+)"/.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** What the figures were measured on; printed with every result. */
export function describeMachine(): Machine {
  const list = cpus();
  return {
    cpu_model: (list[0]?.model ?? 'unknown').trim(),
    cores: list.length,
    memory_gib: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    kernel: release(),
    os: osName(),
    open_files_hard_limit: hardFileLimit(),
    load_average_at_start: loadavg().map((l) => Math.round(l * 100) / 100),
    versions: {
      nginx: packageVersion('nginx'),
      mosquitto: packageVersion('mosquitto'),
      chromium: packageVersion('chromium'),
    },
  };
}
