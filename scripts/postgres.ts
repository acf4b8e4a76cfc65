// A PostgreSQL of the project's own, for the tests, the bench and people trying `serve
// --database-url`: Debian's (or any) PostgreSQL server binaries, a data dir made here with
// `initdb`, started with `pg_ctl` on a loopback port with its unix socket in its own directory.
// Never the system service. PostgreSQL refuses to run as root: run as root (CI, this machine), the
// cluster's files belong to the `postgres` user and its commands run as that user (`runuser`).
//
//   node scripts/postgres.ts start [--dir .data/postgres] [--port 5433]   # prints the database URL
//   node scripts/postgres.ts url   [--dir .data/postgres]
//   node scripts/postgres.ts stop  [--dir .data/postgres]
//
// `start` makes the cluster on first use (a superuser `mdm` whose password is kept in DIR/password,
// owner-only, and a database `mdm`), and starts it again later with the same data.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export interface PostgresCluster {
  /** The cluster's own directory: data/, sockets/, postgres.log, password. */
  dir: string;
  port: number;
  /** The superuser (`mdm`) and its password. */
  user: string;
  password: string;
  /** postgres://mdm:PASSWORD@127.0.0.1:PORT/DATABASE */
  url(database: string): string;
  /** Creates an empty database (from template0: no leftovers of template1). */
  createDatabase(name: string): Promise<void>;
  dropDatabase(name: string): Promise<void>;
  /** Stops the server (fast: open connections are ended), keeping its files. */
  stop(): void;
  /** Stops it and removes its directory. */
  destroy(): void;
}

export interface StartOptions {
  /** The cluster's directory; made (and initdb'd) when it holds no cluster yet. */
  dir: string;
  /** A loopback port; a free one when not given (kept in DIR/port for the next start). */
  port?: number;
  /**
   * Faster, not crash-safe: fsync, synchronous_commit and full_page_writes off. For the tests and
   * the bench's throwaway clusters, never for data people keep.
   */
  throwaway?: boolean;
}

const USER = 'mdm';

/** The directory holding initdb, pg_ctl and postgres: $MDM_PG_BIN, else the newest of Debian's. */
export function postgresBinDir(): string {
  const fromEnv = process.env.MDM_PG_BIN;
  if (fromEnv) return fromEnv;
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((name) => /^\d+$/.test(name) && existsSync(join(debian, name, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return join(debian, versions[0], 'bin');
  const pgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const bin = pgConfig.status === 0 ? pgConfig.stdout.trim() : '';
  if (bin && existsSync(join(bin, 'initdb'))) return bin;
  throw new Error(
    'The PostgreSQL server is not installed (no initdb under /usr/lib/postgresql/*/bin): install it with ' +
      '`apt-get install postgresql` (Debian), or set MDM_PG_BIN to the directory holding initdb and pg_ctl.',
  );
}

/** As root, the `postgres` user's ids (PostgreSQL refuses to run as root); otherwise null. */
function serverUser(): { name: string; uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const name = process.env.MDM_PG_USER ?? 'postgres';
  const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
  try {
    return { name, uid: id('-u'), gid: id('-g') };
  } catch {
    throw new Error(
      `PostgreSQL refuses to run as root, and there is no user "${name}" to run it as: create one ` +
        "(Debian's postgresql package does), or name another with MDM_PG_USER.",
    );
  }
}

/** Runs one of PostgreSQL's programs, as the `postgres` user when we are root. */
function pgCommand(program: string, args: string[]): void {
  const user = serverUser();
  const binary = join(postgresBinDir(), program);
  const [command, ...rest] = user ? ['runuser', '-u', user.name, '--', binary, ...args] : [binary, ...args];
  const result = spawnSync(command!, rest, { encoding: 'utf8' });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() || result.error?.message || '';
    throw new Error(`${program} ${args.join(' ')} failed (exit ${result.status}): ${output}`);
  }
}

/** Makes a directory that the server's user owns (root runs the server as `postgres`). */
function ownedDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const user = serverUser();
  if (user) chownSync(path, user.uid, user.gid);
}

function writeOwned(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o600 });
  const user = serverUser();
  if (user) chownSync(path, user.uid, user.gid);
}

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

const dataDir = (dir: string) => join(dir, 'data');

function running(dir: string): boolean {
  return existsSync(join(dataDir(dir), 'postmaster.pid'));
}

/** Makes the cluster when DIR holds none yet, starts it unless it runs already, and returns it. */
export async function startPostgres(options: StartOptions): Promise<PostgresCluster> {
  const dir = resolve(options.dir);
  const data = dataDir(dir);
  const sockets = join(dir, 'sockets');
  if (!existsSync(join(data, 'PG_VERSION'))) {
    ownedDir(dir);
    ownedDir(sockets);
    const password = randomBytes(18).toString('base64url');
    const passwordFile = join(dir, 'password');
    writeOwned(passwordFile, password);
    // scram-sha-256 over TCP (what `serve --database-url` uses), trust on the private socket only.
    pgCommand('initdb', [
      '--pgdata',
      data,
      '--username',
      USER,
      `--pwfile=${passwordFile}`,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '--encoding=UTF8',
      // Byte order for text, as SQLite compares it: ORDER BY reads the same on both engines.
      '--locale=C',
      ...(options.throwaway ? ['--no-sync'] : []),
    ]);
    const settings = [
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${sockets}'`,
      'max_connections = 200',
      "log_min_messages = 'warning'",
      ...(options.throwaway ? ['fsync = off', 'synchronous_commit = off', 'full_page_writes = off'] : []),
    ];
    const conf = join(data, 'postgresql.conf');
    writeFileSync(conf, `${readFileSync(conf, 'utf8')}\n# MDM Console (scripts/postgres.ts)\n${settings.join('\n')}\n`);
  }
  const password = readFileSync(join(dir, 'password'), 'utf8').trim();
  const portFile = join(dir, 'port');
  const port = options.port ?? (existsSync(portFile) ? Number(readFileSync(portFile, 'utf8')) : await freePort());
  writeOwned(portFile, String(port));
  if (!running(dir)) {
    pgCommand('pg_ctl', [
      'start',
      '--pgdata',
      data,
      '--wait',
      '--timeout=60',
      '--silent',
      '--log',
      join(dir, 'postgres.log'),
      '-o',
      `-p ${port}`,
    ]);
  }
  const url = (database: string) => `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  const admin = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url('postgres') });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  const stop = () => {
    if (running(dir)) pgCommand('pg_ctl', ['stop', '--pgdata', data, '--mode=fast', '--wait', '--silent']);
  };
  const cluster: PostgresCluster = {
    dir,
    port,
    user: USER,
    password,
    url,
    createDatabase: (name) =>
      admin(async (client) => void (await client.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE template0`))),
    dropDatabase: (name) =>
      admin(async (client) => void (await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`))),
    stop,
    destroy: () => {
      try {
        stop();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  return cluster;
}

/** Stops the cluster in DIR if it runs (for `stop` and the watchdog, which hold no cluster object). */
export function stopPostgres(dir: string, mode: 'fast' | 'immediate' = 'fast'): void {
  if (running(resolve(dir)))
    pgCommand('pg_ctl', ['stop', '--pgdata', dataDir(resolve(dir)), `--mode=${mode}`, '--wait', '--silent']);
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Waits for process `pid` to end, then stops the cluster in CLUSTER and removes DIR (which holds it): the tests' shared
 * cluster lives as long as the Vitest run that started it, even one that is killed.
 */
async function watch(pid: number, dir: string, cluster: string): Promise<void> {
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  while (alive() && existsSync(dir)) await new Promise((done) => setTimeout(done, 500));
  try {
    stopPostgres(cluster, 'immediate');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts the watchdog of `watch` as a process of its own that outlives the caller. */
export function spawnWatchdog(pid: number, dir: string, cluster: string): void {
  const args = ['watch', '--pid', String(pid), '--dir', dir, '--cluster', cluster];
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), ...args], {
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
}

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
}

async function main(args: string[]): Promise<void> {
  const [command] = args;
  const dir = resolve(option(args, '--dir') ?? join(import.meta.dirname, '..', '.data', 'postgres'));
  const portText = option(args, '--port');
  const port = portText === undefined ? undefined : Number(portText);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
    throw new Error(`--port ${portText}: give a port number between 1 and 65535`);
  }
  switch (command) {
    case 'start': {
      const fresh = !existsSync(join(dataDir(dir), 'PG_VERSION'));
      const cluster = await startPostgres({ dir, ...(port === undefined ? {} : { port }) });
      if (fresh) await cluster.createDatabase('mdm');
      console.log(
        `PostgreSQL runs from ${dir} on 127.0.0.1:${cluster.port} (stop it with: node scripts/postgres.ts stop --dir ${dir})`,
      );
      console.log(`MDM_CONSOLE_DATABASE_URL=${cluster.url('mdm')}`);
      return;
    }
    case 'url': {
      const password = readFileSync(join(dir, 'password'), 'utf8').trim();
      const savedPort = readFileSync(join(dir, 'port'), 'utf8').trim();
      console.log(`postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${savedPort}/mdm`);
      return;
    }
    case 'stop':
      stopPostgres(dir);
      console.log(`PostgreSQL in ${dir} is stopped.`);
      return;
    case 'watch':
      return watch(Number(option(args, '--pid')), dir, resolve(option(args, '--cluster') ?? dir));
    case undefined:
    default:
      throw new Error('Usage: node scripts/postgres.ts start|url|stop [--dir DIR] [--port PORT]');
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
