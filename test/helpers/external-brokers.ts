// External brokers for the tests and the bench: Debian's mosquitto and rabbitmq-server, started as
// our own processes with configurations of our own on loopback ports (never the system services).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** A port free right now (mosquitto and RabbitMQ cannot be told "any free port"). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on the port (asked every `intervalMs`). */
export async function waitForPort(port: number, timeoutMs = 60_000, intervalMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listening on port ${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export interface MosquittoProcess {
  port: number;
  /** mqtt://admin:PASSWORD@127.0.0.1:PORT: the dynsec admin account, the only one given to the backend. */
  adminUrl: string;
  /** The same without its password (mqtt://admin@127.0.0.1:PORT), which is then given apart. */
  adminUrlWithoutPassword: string;
  adminPassword: string;
  dir: string;
  /** Kills the process (SIGKILL when `crash`), keeping its files. */
  stop(options?: { crash?: boolean }): Promise<void>;
  /** Starts it again on the same port with the same configuration and data. */
  restart(): Promise<void>;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
  log(): string;
  /** The broker's process id (for memory figures). */
  pid(): number | undefined;
}

/**
 * Mosquitto 2 with the dynamic-security plugin: an admin made by `mosquitto_ctrl dynsec init`,
 * anonymous logins refused, retained messages persisted across restarts.
 */
export async function startMosquitto(
  options: { port?: number; notYet?: boolean; wrap?: (command: string[]) => string[] } = {},
): Promise<MosquittoProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'mdm-mosquitto-'));
  const port = options.port ?? (await freePort());
  const adminPassword = `admin-${Math.random().toString(36).slice(2)}`;
  const init = spawnSync('mosquitto_ctrl', ['dynsec', 'init', join(dir, 'dynsec.json'), 'admin', adminPassword], {
    encoding: 'utf8',
  });
  if (init.status !== 0) throw new Error(`mosquitto_ctrl dynsec init failed: ${init.stderr || init.stdout}`);
  writeFileSync(
    join(dir, 'mosquitto.conf'),
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous false',
      'plugin /usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so',
      `plugin_opt_config_file ${join(dir, 'dynsec.json')}`,
      'persistence true',
      `persistence_location ${dir}/`,
      'max_keepalive 120',
      // Started as root, mosquitto would become user "mosquitto" and lose access to this private dir.
      `user ${userInfo().username}`,
      `log_dest file ${join(dir, 'mosquitto.log')}`,
      'log_type error',
      'log_type warning',
      'log_type notice',
      '',
    ].join('\n'),
  );
  let child: ChildProcess | null = null;
  const launch = async () => {
    const [command, ...args] = (options.wrap ?? ((c: string[]) => c))(['mosquitto', '-c', join(dir, 'mosquitto.conf')]);
    child = spawn(command!, args, { stdio: 'ignore' });
    await waitForPort(port, 15_000);
  };
  // notYet: configured but not running (the backend starts first; restart() launches it).
  if (!options.notYet) await launch();
  const stop = async ({ crash = false } = {}) => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill(crash ? 'SIGKILL' : 'SIGTERM');
    });
  };
  return {
    port,
    adminUrl: `mqtt://admin:${adminPassword}@127.0.0.1:${port}`,
    adminUrlWithoutPassword: `mqtt://admin@127.0.0.1:${port}`,
    adminPassword,
    dir,
    stop,
    restart: launch,
    destroy: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    pid: () => (child as ChildProcess | null)?.pid,
    log: () => {
      try {
        return spawnSync('cat', [join(dir, 'mosquitto.log')], { encoding: 'utf8' }).stdout;
      } catch {
        return '';
      }
    },
  };
}

export const BROKER_MODES_UNDER_TEST = (process.env.MDM_TEST_BROKER_MODES ?? 'embedded,mosquitto,rabbitmq')
  .split(',')
  .map((mode) => mode.trim()) as ('embedded' | 'mosquitto' | 'rabbitmq')[];

/** Waits until the backend says it is connected to its broker (and has reconciled). */
export async function brokerReady(
  backend: { broker: { status(): { connected: boolean; problem: string | null } } },
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!backend.broker.status().connected) {
    if (Date.now() > deadline) throw new Error(`the backend did not reach its broker: ${backend.broker.status().problem}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
