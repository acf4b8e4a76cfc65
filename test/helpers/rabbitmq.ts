// A RabbitMQ cluster of our own for the tests and the bench: Debian's rabbitmq-server, several nodes
// on this machine under different node names (own ports, data, logs, config, an own epmd port and a
// shared Erlang cookie via HOME), clustered with `rabbitmqctl join_cluster`. MQTT plugin on, every
// login and right asked of the backend's HTTP auth endpoints. Never the system service.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitForPort } from './external-brokers.ts';
import { rabbitmqConf } from '../../scripts/cluster.ts';

const BIN = '/usr/lib/rabbitmq/bin';

export interface RabbitNode {
  name: string;
  mqttPort: number;
  /** Stops the node (its Erlang VM) and waits for it to be gone. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** The node's Erlang VM (beam.smp) process id, from its pid file. */
  pid(): number | undefined;
}

export interface RabbitCluster {
  nodes: RabbitNode[];
  /** mqtt://USER:PASSWORD@127.0.0.1:P1,127.0.0.1:P2 — the backend's account (checked by the backend itself). */
  backendUrl: string;
  /** Where the nodes ask for logins and rights: the backend's --mqtt-auth-port. */
  authPort: number;
  /** What the nodes present to the auth endpoints (HTTP basic credentials in their auth_http URLs): the backend's mqttAuthSecret. */
  authSecret: string;
  dir: string;
  destroy(): Promise<void>;
}

export async function startRabbitCluster(
  options: { nodes?: number; authPort?: number; authSecret?: string; wrap?: (command: string[]) => string[] } = {},
): Promise<RabbitCluster> {
  const count = options.nodes ?? 2;
  const dir = mkdtempSync(join(tmpdir(), 'mdm-rabbit-'));
  const home = join(dir, 'home');
  mkdirSync(home, { recursive: true });
  // One cookie for every node and rabbitmqctl: they find it in $HOME.
  writeFileSync(join(home, '.erlang.cookie'), `MDMCOOKIE${Math.random().toString(36).slice(2).toUpperCase()}`);
  chmodSync(join(home, '.erlang.cookie'), 0o400);
  const authPort = options.authPort ?? (await freePort());
  const authSecret = options.authSecret ?? randomBytes(24).toString('base64url');
  // As the README's rabbitmq.conf: the secret as the password of the URLs' user info.
  const authBase = `http://rabbitmq:${authSecret}@127.0.0.1:${authPort}/auth`;
  const epmdPort = await freePort();
  const suffix = Math.random().toString(36).slice(2, 8);
  const nodes: RabbitNode[] = [];
  const children: ChildProcess[] = [];

  for (let i = 0; i < count; i += 1) {
    const name = `mdm${suffix}${i}@localhost`;
    const base = join(dir, `node${i}`);
    mkdirSync(base, { recursive: true });
    const [amqpPort, mqttPort] = [await freePort(), await freePort()];
    const distPort = await freePort();
    writeFileSync(join(base, 'rabbitmq.conf'), rabbitmqConf(amqpPort, mqttPort, authBase));
    writeFileSync(join(base, 'enabled_plugins'), '[rabbitmq_mqtt,rabbitmq_auth_backend_http].\n');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: home,
      ERL_EPMD_PORT: String(epmdPort),
      RABBITMQ_NODENAME: name,
      RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
      RABBITMQ_NODE_PORT: String(amqpPort),
      RABBITMQ_DIST_PORT: String(distPort),
      RABBITMQ_MNESIA_BASE: join(base, 'mnesia'),
      RABBITMQ_LOG_BASE: join(base, 'log'),
      RABBITMQ_CONFIG_FILE: join(base, 'rabbitmq.conf'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(base, 'enabled_plugins'),
      RABBITMQ_PID_FILE: join(base, 'pid'),
      RABBITMQ_CONF_ENV_FILE: join(base, 'rabbitmq-env.conf'),
      RABBITMQ_ADVANCED_CONFIG_FILE: join(base, 'advanced.config'),
    };
    writeFileSync(join(base, 'rabbitmq-env.conf'), '');
    let child: ChildProcess | null = null;
    const ctl = (...args: string[]) =>
      spawnSync(`${BIN}/rabbitmqctl`, ['-n', name, ...args], { env, encoding: 'utf8', timeout: 120_000 });
    const node: RabbitNode & { ctl: typeof ctl } = {
      name,
      mqttPort,
      ctl,
      start: async () => {
        const [command, ...args] = (options.wrap ?? ((c: string[]) => c))([`${BIN}/rabbitmq-server`]);
        child = spawn(command!, args, { env, stdio: 'ignore' });
        children.push(child);
        const waited = spawnSync(`${BIN}/rabbitmqctl`, ['-n', name, 'wait', join(base, 'pid'), '--timeout', '180'], {
          env,
          encoding: 'utf8',
          timeout: 200_000,
        });
        if (waited.status !== 0) throw new Error(`RabbitMQ node ${name} did not start: ${waited.stderr || waited.stdout}`);
        await waitForPort(mqttPort, 120_000);
      },
      pid: () => {
        try {
          return Number(readFileSync(join(base, 'pid'), 'utf8').trim()) || undefined;
        } catch {
          return undefined;
        }
      },
      stop: async () => {
        const running = child;
        child = null;
        if (!running || running.exitCode !== null) return;
        ctl('stop');
        await new Promise<void>((resolve) => {
          if (running.exitCode !== null) return resolve();
          const timer = setTimeout(() => running.kill('SIGKILL'), 30_000);
          running.once('exit', () => (clearTimeout(timer), resolve()));
        });
      },
    };
    nodes.push(node);
  }
  const destroy = async () => {
    for (const node of nodes) await node.stop().catch(() => {});
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    // The epmd of our own port, started by the first node.
    spawnSync('epmd', ['-port', String(epmdPort), '-kill'], { env: { ...process.env, ERL_EPMD_PORT: String(epmdPort) } });
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(nodes.map((node) => node.start()));
    const [first, ...others] = nodes as (RabbitNode & { ctl: (...args: string[]) => ReturnType<typeof spawnSync> })[];
    for (const node of others) {
      for (const step of [['stop_app'], ['join_cluster', first!.name], ['start_app']]) {
        const result = node.ctl(...step);
        if (result.status !== 0)
          throw new Error(`rabbitmqctl ${step.join(' ')} on ${node.name}: ${String(result.stderr || result.stdout)}`);
      }
      await waitForPort(node.mqttPort, 120_000);
    }
  } catch (error) {
    await destroy();
    throw error;
  }
  const password = `backend-${Math.random().toString(36).slice(2)}`;
  return {
    nodes,
    backendUrl: `mqtt://mdm-console-backend:${password}@${nodes.map((node) => `127.0.0.1:${node.mqttPort}`).join(',')}`,
    authPort,
    authSecret,
    dir,
    destroy,
  };
}

/** What a node logged (for failure messages). */
export function rabbitLog(cluster: RabbitCluster, index: number): string {
  const logDir = join(cluster.dir, `node${index}`, 'log');
  if (!existsSync(logDir)) return '';
  return spawnSync('sh', ['-c', `cat ${logDir}/*.log | tail -50`], { encoding: 'utf8' }).stdout;
}
