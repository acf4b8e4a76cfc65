// Several `serve` nodes as one server, on this machine: a PostgreSQL of their own, an external MQTT
// broker (Mosquitto with dynamic security, or one RabbitMQ node), N nodes on that one database with
// a shared files dir and a data dir each, and Debian's haproxy in front (one frontend for the agent
// API, one for the admin API and console, health checks, long timeouts for the console's event
// stream). Every process is our own, on loopback ports, with its files under DIR: never a system
// service. The haproxy configuration is written to DIR/haproxy.cfg (docs/haproxy.cfg is the example
// it follows).
//
//   node scripts/cluster.ts start  [--nodes 3] [--dir .data/cluster] [--broker mosquitto|rabbitmq]
//                                  [--port 8080] [--admin-port 8081] [--mqtt-port 1883] [--base-port B]
//   node scripts/cluster.ts status [--dir .data/cluster]
//   node scripts/cluster.ts stop   [--dir .data/cluster]
//
// Each node's agent API listens on the same port as the balancer's agent frontend, on an address
// of its own (127.0.0.11, .12, …): the links and QR codes a node makes (`--public-host 127.0.0.1` and
// its own port) then name the balancer, as they do when every node is a machine of its own
// serving on the same port behind a balancer. `--base-port B` takes every port from B upward
// (agent B, admin B+1, MQTT B+2, PostgreSQL B+3, haproxy's stats B+4, the nodes' admin ports
// B+10…, RabbitMQ's B+30…); otherwise the balancer takes 8080, 8081 and the broker 1883, and the
// rest are free ports chosen at the first start and kept in DIR/cluster.json for the next.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startPostgres, stopPostgres } from './postgres.ts';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'src-main', 'cli', 'main.ts');
const RABBIT_BIN = '/usr/lib/rabbitmq/bin';

export type ClusterBroker = 'mosquitto' | 'rabbitmq';

export interface ClusterOptions {
  /** Where everything lives: postgres/, mosquitto/ (or rabbitmq/), files/, node-1/ …, haproxy.cfg, cluster.json. */
  dir: string;
  /** How many `serve` nodes (default 3). */
  nodes?: number;
  broker?: ClusterBroker;
  /** The balancer's agent API port (what devices reach); default 8080, or --base-port's. */
  port?: number;
  /** The balancer's admin API and console port; default 8081. */
  adminPort?: number;
  /** The broker's MQTT port (agents connect to it directly); default 1883. */
  mqttPort?: number;
  /** Every port from here upward (see the file's head); 0: every port a free one (the tests). */
  basePort?: number;
  /** An existing empty database (or one a cluster ran on): no PostgreSQL is started. */
  databaseUrl?: string;
  /** The processes outlive this one (the CLI); the tests keep them as children. */
  detached?: boolean;
  /** Node i's data dir (default DIR/node-i): e.g. an office's data dir after `migrate-db`. */
  dataDirs?: (string | undefined)[];
  /** Environment added to every node's (e.g. MDM_CONSOLE_SMTP_URL). */
  env?: Record<string, string>;
  /** More `serve` flags for every node. */
  serveArgs?: string[];
  /** PostgreSQL without fsync (tests, bench). */
  throwaway?: boolean;
  /**
   * A directory whose stored files and packages the shared files dir starts with, when it is still
   * empty: an office's DATA_DIR/files after `migrate-db` (with several nodes, files live in
   * `--files-dir`, not in one node's data dir).
   */
  seedFiles?: string;
}

export interface ClusterPorts {
  agent: number;
  admin: number;
  mqtt: number;
  postgres: number;
  stats: number;
  /** Each node's admin API port (its agent API is `agent`, on its own address). */
  nodeAdmin: number[];
  /** rabbitmq: the balancer's frontend for the nodes' auth endpoints, each node's auth port, RabbitMQ's AMQP, distribution and epmd ports. */
  auth: number;
  nodeAuth: number[];
  rabbit: { amqp: number; dist: number; epmd: number };
}

/** What DIR/cluster.json keeps: the next start reuses it, `status` and `stop` read it. */
export interface ClusterState {
  nodes: number;
  broker: ClusterBroker;
  ports: ClusterPorts;
  /** Null: the database was given (`databaseUrl`), not started here. */
  postgresDir: string | null;
  databaseUrl: string;
  dataDirs: string[];
  pids: { haproxy?: number; broker?: number; nodes: (number | undefined)[] };
}

export interface ClusterNode {
  name: string;
  index: number;
  dataDir: string;
  /** The node's own listeners, bypassing the balancer. */
  agentUrl: string;
  adminUrl: string;
  /** The node's process id while it runs. */
  pid(): number | undefined;
  running(): boolean;
  /** Sends the signal (SIGKILL: `kill -9`) and waits until the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again (same flags, data dir and ports) and waits until it serves. */
  start(): Promise<void>;
  /** What it printed (its serve.log). */
  log(): string;
}

export interface Cluster {
  dir: string;
  state: ClusterState;
  /** http://127.0.0.1:PORT — the balancer's agent frontend (devices). */
  agentUrl: string;
  /** http://127.0.0.1:PORT — the balancer's admin frontend (consoles, the CLI, the admin API). */
  adminUrl: string;
  /** The owner's admin token (every node's data dir holds the same one). */
  adminToken: string;
  databaseUrl: string;
  broker: { mode: ClusterBroker; port: number; adminPassword?: string };
  nodes: ClusterNode[];
  haproxyConfig: string;
  /** Stops every process (nodes first), keeping the files. */
  stop(): Promise<void>;
}

const option = (args: string[], name: string): string | undefined => {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
};

/** The flags `serve` takes in this checkout (`--node-name`, `--files-dir` arrive with the cluster work). */
function serveFlags(): Set<string> {
  const help = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8', cwd: ROOT });
  return new Set([...`${help.stdout}${help.stderr}`.matchAll(/--[a-z][a-z-]+/g)].map((match) => match[0]));
}

function isAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitForPort(port: number, host = '127.0.0.1', timeoutMs = 60_000, alive?: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((done) => {
      const socket = connect(port, host);
      socket.once('connect', () => (socket.destroy(), done(true)));
      socket.once('error', () => done(false));
    });
    if (open) return;
    if (alive && !alive()) throw new Error(`the process meant to listen on ${host}:${port} has exited`);
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs / 1000} s`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((done) => setTimeout(done, 50));
  }
  return true;
}

/** The address node i's agent API listens on: 127.0.0.11, .12, … (the balancer has 127.0.0.1). */
export const nodeHost = (index: number): string => `127.0.0.${11 + index}`;

async function choosePorts(options: ClusterOptions, nodes: number): Promise<ClusterPorts> {
  const base = options.basePort;
  const taken = new Set<number>();
  const free = async () => {
    for (;;) {
      const port = await freePort();
      if (!taken.has(port)) return (taken.add(port), port);
    }
  };
  const pick = async (given: number | undefined, offset: number, fallback?: number) => {
    if (given !== undefined && given !== 0) return (taken.add(given), given);
    if (base) return (taken.add(base + offset), base + offset);
    if (fallback !== undefined && base === undefined) return (taken.add(fallback), fallback);
    return free();
  };
  // Without --base-port: the ports of docs/haproxy.cfg (the balancer 8080 and 8081, the nodes'
  // admin listeners 8181…, haproxy's stats 8404, the broker 1883); PostgreSQL and RabbitMQ's own
  // ports are free ones (nothing else needs to know them).
  const agent = await pick(options.port, 0, 8080);
  const admin = await pick(options.adminPort, 1, 8081);
  const mqtt = await pick(options.mqttPort, 2, 1883);
  const postgres = await pick(undefined, 3);
  const stats = await pick(undefined, 4, 8404);
  const auth = await pick(undefined, 5, 8083);
  const nodeAdmin: number[] = [];
  const nodeAuth: number[] = [];
  for (let i = 0; i < nodes; i += 1) nodeAdmin.push(await pick(undefined, 10 + i, 8181 + i));
  for (let i = 0; i < nodes; i += 1) nodeAuth.push(await pick(undefined, 20 + i, 8281 + i));
  const rabbit = { amqp: await pick(undefined, 30), dist: await pick(undefined, 31), epmd: await pick(undefined, 32) };
  return { agent, admin, mqtt, postgres, stats, nodeAdmin, auth, nodeAuth, rabbit };
}

/** The haproxy configuration (docs/haproxy.cfg is this, written for the defaults). */
export function haproxyConfig(state: Pick<ClusterState, 'ports' | 'broker'>, nodes: number): string {
  const { ports } = state;
  const servers = (port: (i: number) => number, host: (i: number) => string, extra: string) =>
    Array.from({ length: nodes }, (_, i) => `  server node-${i + 1} ${host(i)}:${port(i)} ${extra}`).join('\n');
  const lines = [
    '# MDM Console: several `serve` nodes behind haproxy (written by scripts/cluster.ts; the',
    '# example in docs/haproxy.cfg). Every node answers every request: no stickiness is needed.',
    'global',
    '  maxconn 4096',
    '',
    'defaults',
    '  mode http',
    '  option forwardfor',
    '  # A node that died: the connection is refused, the request goes to another node (it was not',
    '  # sent). A request in flight on a node killed answers 502: the device retries it.',
    '  retries 2',
    '  option redispatch',
    '  retry-on conn-failure',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  timeout http-request 10s',
    '  timeout http-keep-alive 10s',
    '  timeout queue 30s',
    '  # Health checks: a node that stops answering leaves the rotation within 3 s, and is back',
    '  # 2 s after it answers again.',
    '  default-server inter 1s fall 3 rise 2 maxconn 200',
    '',
    '# Devices: the agent API, downloads, the deeplink page. Each node serves it on the port of this',
    '# frontend (the links and QR codes a node makes name --public-host and that port: the balancer),',
    "# here on an address of its own (127.0.0.11, .12…); on several machines, each machine's address.",
    'frontend agents',
    `  bind 127.0.0.1:${ports.agent}`,
    '  default_backend agent_nodes',
    '',
    'backend agent_nodes',
    '  balance roundrobin',
    '  option httpchk GET /deeplink/',
    '  http-check expect rstatus ^[234]',
    servers(() => ports.agent, nodeHost, 'check'),
    '',
    '# Consoles, the CLI, scripts: the admin API. The console keeps one event stream (SSE) open per',
    '# window: long client and server timeouts, so the balancer does not cut it (the server sends a',
    '# heartbeat; the console reconnects with Last-Event-ID when it is cut anyway).',
    'frontend admin',
    `  bind 127.0.0.1:${ports.admin}`,
    '  timeout client 1h',
    '  default_backend admin_nodes',
    '',
    'backend admin_nodes',
    '  balance leastconn',
    '  timeout server 1h',
    '  option httpchk GET /api/status',
    '  http-check expect rstatus ^[234]',
    servers(
      (i) => ports.nodeAdmin[i]!,
      () => '127.0.0.1',
      'check',
    ),
    '',
  ];
  if (state.broker === 'rabbitmq') {
    lines.push(
      "# RabbitMQ asks every login and right of the nodes' auth endpoints, through here.",
      'frontend mqtt_auth',
      `  bind 127.0.0.1:${ports.auth}`,
      '  default_backend auth_nodes',
      '',
      'backend auth_nodes',
      '  balance roundrobin',
      '  option httpchk',
      '  http-check expect rstatus ^[234]',
      servers(
        (i) => ports.nodeAuth[i]!,
        () => '127.0.0.1',
        'check',
      ),
      '',
    );
  }
  lines.push(
    "# haproxy's own page: each node up or down (add ;csv for a machine's reading).",
    'frontend stats',
    `  bind 127.0.0.1:${ports.stats}`,
    '  stats enable',
    '  stats uri /',
    '  stats refresh 5s',
    '',
  );
  return lines.join('\n');
}

/**
 * What `start` writes for three nodes and Mosquitto with its default ports: docs/haproxy.cfg, the
 * README's example (`node scripts/cluster.ts example-config > docs/haproxy.cfg`; a test keeps them equal).
 */
export function exampleConfig(): string {
  const ports: ClusterPorts = {
    agent: 8080,
    admin: 8081,
    mqtt: 1883,
    postgres: 0,
    stats: 8404,
    auth: 8083,
    nodeAdmin: [8181, 8182, 8183],
    nodeAuth: [8281, 8282, 8283],
    rabbit: { amqp: 0, dist: 0, epmd: 0 },
  };
  return haproxyConfig({ broker: 'mosquitto', ports }, 3);
}

function readState(dir: string): ClusterState | null {
  try {
    return JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as ClusterState;
  } catch {
    return null;
  }
}

function writeState(dir: string, state: ClusterState): void {
  writeFileSync(join(dir, 'cluster.json'), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

/** Starts a program with its output in LOG; detached programs outlive us. */
function launch(
  command: string,
  args: string[],
  logFile: string,
  options: { detached: boolean; env?: NodeJS.ProcessEnv; cwd?: string },
): ChildProcess {
  const out = openSync(logFile, 'a');
  const child = spawn(command, args, {
    detached: options.detached,
    stdio: ['ignore', out, out],
    env: options.env ?? process.env,
    cwd: options.cwd ?? ROOT,
  });
  if (options.detached) child.unref();
  return child;
}

/** Mosquitto 2 with dynamic security (as the README's set-up): its admin made once with `mosquitto_ctrl dynsec init`. */
function prepareMosquitto(dir: string, port: number): { conf: string; password: string; passwordFile: string } {
  const home = join(dir, 'mosquitto');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const passwordFile = join(home, 'admin-password');
  if (!existsSync(join(home, 'dynsec.json'))) {
    const password = randomBytes(18).toString('base64url');
    const init = spawnSync('mosquitto_ctrl', ['dynsec', 'init', join(home, 'dynsec.json'), 'admin', password], {
      encoding: 'utf8',
    });
    if (init.status !== 0)
      throw new Error(
        `mosquitto_ctrl dynsec init failed (is Debian's mosquitto installed? apt-get install mosquitto mosquitto-clients): ${init.stderr || init.stdout || init.error?.message}`,
      );
    writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  }
  const conf = join(home, 'mosquitto.conf');
  writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous false',
      'plugin /usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so',
      `plugin_opt_config_file ${join(home, 'dynsec.json')}`,
      'persistence true',
      `persistence_location ${home}/`,
      'max_keepalive 120',
      // Started as root, mosquitto would become user "mosquitto" and lose access to this private dir.
      `user ${userInfo().username}`,
      `log_dest file ${join(home, 'mosquitto.log')}`,
      'log_type error',
      'log_type warning',
      'log_type notice',
      '',
    ].join('\n'),
  );
  return { conf, password: readFileSync(passwordFile, 'utf8').trim(), passwordFile };
}

/** One RabbitMQ node (MQTT plugin, every login asked of the nodes' auth endpoints through the balancer). */
function rabbitEnv(dir: string, ports: ClusterPorts): { env: NodeJS.ProcessEnv; name: string; home: string } {
  const home = join(dir, 'rabbitmq');
  const name = `mdmcluster${ports.rabbit.amqp}@localhost`;
  return {
    home,
    name,
    env: {
      ...process.env,
      HOME: home,
      ERL_EPMD_PORT: String(ports.rabbit.epmd),
      RABBITMQ_NODENAME: name,
      RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
      RABBITMQ_NODE_PORT: String(ports.rabbit.amqp),
      RABBITMQ_DIST_PORT: String(ports.rabbit.dist),
      RABBITMQ_MNESIA_BASE: join(home, 'mnesia'),
      RABBITMQ_LOG_BASE: join(home, 'log'),
      RABBITMQ_CONFIG_FILE: join(home, 'rabbitmq.conf'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(home, 'enabled_plugins'),
      RABBITMQ_PID_FILE: join(home, 'pid'),
      RABBITMQ_CONF_ENV_FILE: join(home, 'rabbitmq-env.conf'),
      RABBITMQ_ADVANCED_CONFIG_FILE: join(home, 'advanced.config'),
    },
  };
}

/**
 * A RabbitMQ node's configuration: AMQP and MQTT on loopback, logins asked of the nodes' auth
 * endpoints at `authBase` (the secret as the URL's password), as the README's rabbitmq.conf.
 */
export function rabbitmqConf(amqpPort: number, mqttPort: number, authBase: string): string {
  return [
    `listeners.tcp.default = 127.0.0.1:${amqpPort}`,
    `mqtt.listeners.tcp.default = 127.0.0.1:${mqttPort}`,
    'mqtt.allow_anonymous = false',
    'mqtt.vhost = /',
    'mqtt.exchange = amq.topic',
    'auth_backends.1 = http',
    'auth_http.http_method = post',
    `auth_http.user_path = ${authBase}/user`,
    `auth_http.vhost_path = ${authBase}/vhost`,
    `auth_http.resource_path = ${authBase}/resource`,
    `auth_http.topic_path = ${authBase}/topic`,
    // A slow or absent backend is a refused login after this long, not a hang.
    'auth_http.connection_timeout = 3000',
    'auth_http.request_timeout = 5000',
    'loopback_users = none',
    'log.console = false',
    'log.file.level = warning',
    '',
  ].join('\n');
}

function prepareRabbit(dir: string, ports: ClusterPorts): { secretFile: string } {
  const { home } = rabbitEnv(dir, ports);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const secretFile = join(home, 'auth-secret');
  if (!existsSync(secretFile)) writeFileSync(secretFile, `${randomBytes(24).toString('base64url')}\n`, { mode: 0o600 });
  const cookie = join(home, '.erlang.cookie');
  if (!existsSync(cookie)) {
    writeFileSync(cookie, `MDM${randomBytes(12).toString('hex').toUpperCase()}`);
    chmodSync(cookie, 0o400);
  }
  const secret = readFileSync(secretFile, 'utf8').trim();
  const authBase = `http://rabbitmq:${secret}@127.0.0.1:${ports.auth}/auth`;
  writeFileSync(join(home, 'rabbitmq.conf'), rabbitmqConf(ports.rabbit.amqp, ports.mqtt, authBase));
  writeFileSync(join(home, 'enabled_plugins'), '[rabbitmq_mqtt,rabbitmq_auth_backend_http].\n');
  writeFileSync(join(home, 'rabbitmq-env.conf'), '');
  return { secretFile };
}

/**
 * Starts (or starts again, from DIR/cluster.json) the whole cluster and waits until every node
 * serves through the balancer. A failed start stops what it started.
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const dir = resolve(options.dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const previous = readState(dir);
  if (previous && [previous.pids.haproxy, previous.pids.broker, ...previous.pids.nodes].some(isAlive))
    throw new Error(`a cluster already runs from ${dir} (node scripts/cluster.ts stop --dir ${dir} first)`);
  const count = previous?.nodes ?? options.nodes ?? 3;
  if (!Number.isInteger(count) || count < 1 || count > 9) throw new Error(`--nodes ${count}: give 1 to 9 nodes`);
  const broker = previous?.broker ?? options.broker ?? 'mosquitto';
  const ports = previous?.ports ?? (await choosePorts(options, count));
  const detached = options.detached ?? false;
  const children: ChildProcess[] = [];
  const filesDir = join(dir, 'files');
  mkdirSync(filesDir, { recursive: true, mode: 0o700 });
  if (options.seedFiles && existsSync(options.seedFiles) && readdirSync(filesDir).length === 0)
    cpSync(options.seedFiles, filesDir, { recursive: true });
  const dataDirs = Array.from(
    { length: count },
    (_, i) => options.dataDirs?.[i] ?? previous?.dataDirs[i] ?? join(dir, `node-${i + 1}`),
  );
  const state: ClusterState = {
    nodes: count,
    broker,
    ports,
    postgresDir: previous?.postgresDir ?? (options.databaseUrl ? null : join(dir, 'postgres')),
    databaseUrl: options.databaseUrl ?? previous?.databaseUrl ?? '',
    dataDirs,
    pids: { nodes: [] },
  };
  const stopAll = () => stopProcesses(dir, state);

  try {
    // 1. PostgreSQL: its own initdb'd data dir under DIR, or the database given.
    if (state.postgresDir) {
      // Run as root, PostgreSQL runs as `postgres`, which must pass through DIR to its own directory.
      if (process.getuid?.() === 0) chmodSync(dir, 0o711);
      const fresh = !existsSync(join(state.postgresDir, 'data', 'PG_VERSION'));
      const cluster = await startPostgres({
        dir: state.postgresDir,
        port: ports.postgres,
        ...(options.throwaway ? { throwaway: true } : {}),
      });
      if (fresh) await cluster.createDatabase('mdm');
      state.databaseUrl = cluster.url('mdm');
    }
    writeState(dir, state);

    // 2. The broker agents connect to.
    const nodeEnv: NodeJS.ProcessEnv = {
      ...process.env,
      ...options.env,
      MDM_CONSOLE_DATABASE_URL: state.databaseUrl,
    };
    const brokerArgs: string[] = [];
    let adminPassword: string | undefined;
    if (broker === 'mosquitto') {
      const mosquitto = prepareMosquitto(dir, ports.mqtt);
      adminPassword = mosquitto.password;
      const child = launch('mosquitto', ['-c', mosquitto.conf], join(dir, 'mosquitto', 'stdout.log'), { detached });
      children.push(child);
      state.pids.broker = child.pid;
      writeState(dir, state);
      await waitForPort(ports.mqtt, '127.0.0.1', 15_000, () => child.exitCode === null);
      brokerArgs.push(
        '--mqtt-broker',
        'mosquitto',
        '--mqtt-broker-url',
        `mqtt://admin@127.0.0.1:${ports.mqtt}`,
        '--mqtt-broker-password-file',
        mosquitto.passwordFile,
      );
    } else {
      const { secretFile } = prepareRabbit(dir, ports);
      const { env, name, home } = rabbitEnv(dir, ports);
      const child = launch(`${RABBIT_BIN}/rabbitmq-server`, [], join(home, 'stdout.log'), { detached, env });
      children.push(child);
      state.pids.broker = child.pid;
      writeState(dir, state);
      const waited = spawnSync(`${RABBIT_BIN}/rabbitmqctl`, ['-n', name, 'wait', join(home, 'pid'), '--timeout', '180'], {
        env,
        encoding: 'utf8',
        timeout: 200_000,
      });
      if (waited.status !== 0) throw new Error(`RabbitMQ did not start: ${waited.stderr || waited.stdout}`);
      await waitForPort(ports.mqtt, '127.0.0.1', 120_000);
      brokerArgs.push(
        '--mqtt-broker',
        'rabbitmq',
        '--mqtt-broker-url',
        `mqtt://mdm-console-backend@127.0.0.1:${ports.mqtt}`,
        '--mqtt-auth-secret-file',
        secretFile,
        '--mqtt-auth-host',
        '127.0.0.1',
      );
    }

    // 3. The nodes: node 1 first (it makes the schema and the owner's admin token), the others
    // with a copy of that token in their data dirs, so one token signs in on every node.
    const flags = serveFlags();
    const nodeArgs = (i: number): string[] => [
      CLI,
      'serve',
      '--data-dir',
      dataDirs[i]!,
      '--host',
      nodeHost(i),
      '--port',
      String(ports.agent),
      '--admin-port',
      String(ports.nodeAdmin[i]),
      '--public-host',
      '127.0.0.1',
      // The balancer (on loopback) forwards each client's address in X-Forwarded-For.
      '--trust-proxy',
      '127.0.0.1',
      ...brokerArgs,
      ...(broker === 'rabbitmq' ? ['--mqtt-auth-port', String(ports.nodeAuth[i])] : []),
      ...(flags.has('--node-name') ? ['--node-name', `node-${i + 1}`] : []),
      ...(flags.has('--files-dir') ? ['--files-dir', filesDir] : []),
      ...(options.serveArgs ?? []),
    ];
    const nodes: ClusterNode[] = [];
    for (let i = 0; i < count; i += 1) {
      const dataDir = dataDirs[i]!;
      let child: ChildProcess | null = null;
      const node: ClusterNode = {
        name: `node-${i + 1}`,
        index: i,
        dataDir,
        agentUrl: `http://${nodeHost(i)}:${ports.agent}`,
        adminUrl: `http://127.0.0.1:${ports.nodeAdmin[i]}`,
        pid: () => state.pids.nodes[i],
        running: () => isAlive(state.pids.nodes[i]),
        kill: async (signal = 'SIGTERM') => {
          const pid = state.pids.nodes[i];
          if (!isAlive(pid)) return;
          process.kill(pid!, signal);
          await waitForExit(pid!, 30_000);
        },
        start: async () => {
          mkdirSync(dataDir, { recursive: true, mode: 0o700 });
          rmSync(join(dataDir, 'server.json'), { force: true });
          child = launch(process.execPath, nodeArgs(i), join(dataDir, 'serve.log'), { detached, env: nodeEnv });
          children.push(child);
          state.pids.nodes[i] = child.pid;
          writeState(dir, state);
          const started = child;
          const deadline = Date.now() + 90_000;
          // server.json is written once the node listens, with its pid.
          for (;;) {
            if (started.exitCode !== null || started.signalCode !== null)
              throw new Error(`${node.name} exited (${started.exitCode ?? started.signalCode}):\n${tail(node.log())}`);
            try {
              const record = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as { pid?: number };
              if (record.pid === started.pid) break;
            } catch {
              // not yet
            }
            if (Date.now() > deadline) throw new Error(`${node.name} did not start within 90 s:\n${tail(node.log())}`);
            await new Promise((done) => setTimeout(done, 100));
          }
        },
        log: () => {
          try {
            return readFileSync(join(dataDir, 'serve.log'), 'utf8');
          } catch {
            return '';
          }
        },
      };
      nodes.push(node);
    }
    await nodes[0]!.start();
    const adminToken = readFileSync(join(dataDirs[0]!, 'admin-token'), 'utf8').trim();
    for (const other of dataDirs.slice(1)) {
      mkdirSync(other, { recursive: true, mode: 0o700 });
      if (!existsSync(join(other, 'admin-token'))) {
        copyFileSync(join(dataDirs[0]!, 'admin-token'), join(other, 'admin-token'));
        chmodSync(join(other, 'admin-token'), 0o600);
      }
      // The cluster key the first node wrote (no MDM_CONSOLE_SECRET_KEY given): every node needs the
      // same one, or it is refused at start (docs/scaling.md, the secrets).
      if (existsSync(join(dataDirs[0]!, 'secret-key')) && !existsSync(join(other, 'secret-key'))) {
        copyFileSync(join(dataDirs[0]!, 'secret-key'), join(other, 'secret-key'));
        chmodSync(join(other, 'secret-key'), 0o600);
      }
    }
    await Promise.all(nodes.slice(1).map((node) => node.start()));

    // 4. The balancer, once every node answers (its health checks then find them up at once).
    const config = haproxyConfig(state, count);
    const haproxyCfg = join(dir, 'haproxy.cfg');
    writeFileSync(haproxyCfg, config);
    const check = spawnSync('haproxy', ['-c', '-q', '-f', haproxyCfg], { encoding: 'utf8' });
    if (check.status !== 0)
      throw new Error(`haproxy refuses ${haproxyCfg}: ${check.stderr || check.stdout || check.error?.message}`);
    const haproxy = launch('haproxy', ['-db', '-f', haproxyCfg], join(dir, 'haproxy.log'), { detached });
    children.push(haproxy);
    state.pids.haproxy = haproxy.pid;
    writeState(dir, state);
    await waitForPort(ports.agent, '127.0.0.1', 15_000, () => haproxy.exitCode === null);
    await waitForPort(ports.admin, '127.0.0.1', 15_000, () => haproxy.exitCode === null);
    await waitForHealthy(ports.stats, count, 30_000);

    return {
      dir,
      state,
      agentUrl: `http://127.0.0.1:${ports.agent}`,
      adminUrl: `http://127.0.0.1:${ports.admin}`,
      adminToken,
      databaseUrl: state.databaseUrl,
      broker: { mode: broker, port: ports.mqtt, ...(adminPassword ? { adminPassword } : {}) },
      nodes,
      haproxyConfig: haproxyCfg,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll().catch(() => {});
    throw error;
  }
}

function tail(text: string, lines = 30): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** haproxy's view of each server: `backend/server` → UP, DOWN, MAINT… (its stats page as CSV). */
export async function balancerView(statsPort: number): Promise<Map<string, string>> {
  const view = new Map<string, string>();
  const response = await fetch(`http://127.0.0.1:${statsPort}/;csv`);
  const text = await response.text();
  for (const line of text.split('\n')) {
    const [proxy, server, ...rest] = line.split(',');
    if (!proxy || !server || proxy.startsWith('#') || server === 'FRONTEND' || server === 'BACKEND') continue;
    view.set(`${proxy}/${server}`, rest[15] ?? '?');
  }
  return view;
}

/** Waits until haproxy's health checks find every node UP on the agent and admin backends. */
export async function waitForHealthy(statsPort: number, nodes: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const view = await balancerView(statsPort);
      const up = [...view].filter(([key, status]) => /^(agent|admin)_nodes\//.test(key) && status.startsWith('UP')).length;
      if (up === nodes * 2) return;
    } catch {
      // haproxy not answering yet
    }
    if (Date.now() > deadline) throw new Error(`haproxy did not see every node up within ${timeoutMs / 1000} s`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

async function status(dir: string): Promise<void> {
  const state = readState(dir);
  if (!state) throw new Error(`no cluster in ${dir} (start one with: node scripts/cluster.ts start --dir ${dir})`);
  const said = (pid: number | undefined) => (isAlive(pid) ? `running (pid ${pid})` : 'stopped');
  const safeUrl = state.databaseUrl.replace(/:[^:@/]*@/, ':…@');
  console.log(`Cluster in ${dir}: ${state.nodes} nodes, broker ${state.broker}`);
  console.log(`  agent API (devices)     http://127.0.0.1:${state.ports.agent}`);
  console.log(`  admin API and console   http://127.0.0.1:${state.ports.admin}   (balancer ${said(state.pids.haproxy)})`);
  console.log(`  haproxy stats           http://127.0.0.1:${state.ports.stats}/`);
  console.log(`  MQTT                    mqtt://127.0.0.1:${state.ports.mqtt}   (${state.broker} ${said(state.pids.broker)})`);
  console.log(
    `  PostgreSQL              ${safeUrl}   (${state.postgresDir ? (existsSync(join(state.postgresDir, 'data', 'postmaster.pid')) ? 'running' : 'stopped') : 'given'})`,
  );
  let view = new Map<string, string>();
  try {
    view = await balancerView(state.ports.stats);
  } catch {
    // balancer stopped
  }
  state.dataDirs.forEach((dataDir, i) => {
    const name = `node-${i + 1}`;
    const checks = ['agent_nodes', 'admin_nodes'].map((b) => view.get(`${b}/${name}`) ?? '-').join('/');
    console.log(
      `  ${name}  ${said(state.pids.nodes[i])}, agent ${nodeHost(i)}:${state.ports.agent}, admin 127.0.0.1:${state.ports.nodeAdmin[i]}, health ${checks}, data ${dataDir}`,
    );
  });
  const token = (() => {
    try {
      return readFileSync(join(state.dataDirs[0]!, 'admin-token'), 'utf8').trim();
    } catch {
      return null;
    }
  })();
  if (token && isAlive(state.pids.haproxy)) {
    try {
      const response = await fetch(`http://127.0.0.1:${state.ports.admin}/api/status`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const body = (await response.json()) as { nodes?: { name: string; address?: string; last_heartbeat?: string }[] };
      if (Array.isArray(body.nodes)) {
        console.log('  nodes in the database (GET /api/status):');
        for (const node of body.nodes) console.log(`    ${JSON.stringify(node)}`);
      }
    } catch (error) {
      console.log(`  GET /api/status through the balancer failed: ${(error as Error).message}`);
    }
  }
}

/** Stops every process of the cluster (nodes first, then the balancer, the broker, PostgreSQL), keeping the files. */
async function stopProcesses(dir: string, state: ClusterState): Promise<void> {
  const nodes = state.pids.nodes.filter((pid): pid is number => isAlive(pid));
  for (const pid of nodes) process.kill(pid, 'SIGTERM');
  for (const pid of nodes) if (!(await waitForExit(pid, 20_000))) process.kill(pid, 'SIGKILL');
  const { haproxy, broker } = state.pids;
  if (haproxy && isAlive(haproxy)) process.kill(haproxy, 'SIGTERM');
  if (state.broker === 'rabbitmq') {
    const { env, name } = rabbitEnv(dir, state.ports);
    spawnSync(`${RABBIT_BIN}/rabbitmqctl`, ['-n', name, 'stop'], { env, timeout: 60_000 });
    spawnSync('epmd', ['-port', String(state.ports.rabbit.epmd), '-kill'], { env });
  } else if (broker && isAlive(broker)) process.kill(broker, 'SIGTERM');
  for (const pid of [haproxy, broker]) if (pid) await waitForExit(pid, 20_000);
  if (state.postgresDir) stopPostgres(state.postgresDir);
  state.pids = { nodes: [] };
  writeState(dir, state);
}

async function stop(dir: string): Promise<void> {
  const state = readState(dir);
  if (!state) throw new Error(`no cluster in ${dir}`);
  await stopProcesses(dir, state);
  console.log(`The cluster in ${dir} is stopped (its data stays; start it again with: npm run cluster -- start --dir ${dir}).`);
}

/**
 * Waits for process PID to end, then stops the cluster in DIR and removes DIR: a test file's cluster
 * lives as long as the test process that started it, even one that is killed.
 */
async function watch(pid: number, dir: string): Promise<void> {
  while (isAlive(pid) && existsSync(join(dir, 'cluster.json'))) await new Promise((done) => setTimeout(done, 500));
  const state = readState(dir);
  try {
    if (state) await stopProcesses(dir, state);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts the watchdog of `watch` as a process of its own that outlives the caller. */
export function spawnClusterWatchdog(pid: number, dir: string): void {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), 'watch', '--pid', String(pid), '--dir', dir], {
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
}

async function main(args: string[]): Promise<void> {
  const [command] = args;
  const dir = resolve(option(args, '--dir') ?? join(ROOT, '.data', 'cluster'));
  const number = (name: string): number | undefined => {
    const text = option(args, name);
    if (text === undefined) return undefined;
    const value = Number(text);
    if (!Number.isInteger(value) || value < 0 || value > 65535) throw new Error(`${name} ${text}: give a whole number`);
    return value;
  };
  switch (command) {
    case 'start': {
      const brokerText = option(args, '--broker');
      if (brokerText !== undefined && brokerText !== 'mosquitto' && brokerText !== 'rabbitmq')
        throw new Error(`--broker must be mosquitto or rabbitmq, not "${brokerText}"`);
      const cluster = await startCluster({
        dir,
        detached: true,
        ...(number('--nodes') !== undefined ? { nodes: number('--nodes')! } : {}),
        ...(brokerText ? { broker: brokerText } : {}),
        ...(number('--port') !== undefined ? { port: number('--port')! } : {}),
        ...(number('--admin-port') !== undefined ? { adminPort: number('--admin-port')! } : {}),
        ...(number('--mqtt-port') !== undefined ? { mqttPort: number('--mqtt-port')! } : {}),
        ...(number('--base-port') !== undefined ? { basePort: number('--base-port')! } : {}),
      });
      console.log(`${cluster.nodes.length} nodes serve as one, behind haproxy (${cluster.haproxyConfig}):`);
      console.log(`  devices:  ${cluster.agentUrl}   (MQTT: mqtt://127.0.0.1:${cluster.broker.port}, ${cluster.broker.mode})`);
      console.log(`  console:  ${cluster.adminUrl}   (admin token: ${join(cluster.nodes[0]!.dataDir, 'admin-token')})`);
      console.log(`  CLI:      npm run cli -- invitations --data-dir ${cluster.nodes[0]!.dataDir}`);
      console.log(`  status:   npm run cluster -- status --dir ${dir}`);
      console.log(`  stop:     npm run cluster -- stop --dir ${dir}`);
      return;
    }
    case 'status':
      return status(dir);
    case 'stop':
      return stop(dir);
    case 'example-config':
      process.stdout.write(exampleConfig());
      return;
    case 'watch':
      return watch(Number(option(args, '--pid')), dir);
    case undefined:
    default:
      throw new Error(
        'Usage: npm run cluster -- start|status|stop [--nodes 3] [--dir DIR] [--broker mosquitto|rabbitmq] [--port P] [--admin-port A] [--mqtt-port M] [--base-port B]',
      );
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
