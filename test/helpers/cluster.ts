// A real cluster for one test file, started by the project's own script (scripts/cluster.ts): N
// `serve` nodes as child processes on one PostgreSQL database (a database of the run's shared test
// PostgreSQL, test/helpers/postgres.ts), Mosquitto with dynamic security, and haproxy in front, all
// on loopback ports chosen by the OS. One cluster per file, shared by its tests: starting one costs
// seconds and three Node processes. A watchdog stops it and removes its files if the test process
// dies without doing so.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { it } from 'vitest';
import { spawnClusterWatchdog, startCluster, type Cluster, type ClusterNode } from '../../scripts/cluster.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

export interface TestCluster extends Cluster {
  database: TestDatabase;
  /** An admin API call (`/api` + path) with the owner's token, through the balancer or straight to one node. */
  admin(method: string, path: string, body?: unknown, node?: ClusterNode): Promise<Answer>;
  /** A query on the cluster's database (what the nodes share), for integrity checks. */
  query<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  /** The logins Mosquitto's dynamic security holds (one per enrolled agent, and the backend's). */
  brokerClients(): string[];
  /** Stops every process, drops the database and removes the files. */
  destroy(): Promise<void>;
}

export interface TestClusterOptions {
  label: string;
  nodes?: number;
  /** Node i's data dir (e.g. an office's, after migrate-db); the others are made under the cluster's dir. */
  dataDirs?: (string | undefined)[];
  /** The balancer's agent API port (e.g. the port an office's devices know). */
  port?: number;
  /** An existing database (after migrate-db); default a new empty one. */
  database?: TestDatabase;
  env?: Record<string, string>;
  serveArgs?: string[];
  /** The files the shared files dir starts with (an office's DATA_DIR/files). */
  seedFiles?: string;
}

export async function startTestCluster(options: TestClusterOptions): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), `mdm-cluster-${options.label}-`));
  const database = options.database ?? (await createTestDatabase(`cluster_${options.label}`));
  let cluster: Cluster;
  try {
    cluster = await startCluster({
      dir,
      basePort: 0,
      nodes: options.nodes ?? 3,
      databaseUrl: database.url,
      ...(options.port ? { port: options.port } : {}),
      ...(options.dataDirs ? { dataDirs: options.dataDirs } : {}),
      ...(options.env ? { env: options.env } : {}),
      ...(options.serveArgs ? { serveArgs: options.serveArgs } : {}),
      ...(options.seedFiles ? { seedFiles: options.seedFiles } : {}),
    });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    await database.drop().catch(() => {});
    throw error;
  }
  spawnClusterWatchdog(process.pid, dir);
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const admin = async (method: string, path: string, body?: unknown, node?: ClusterNode): Promise<Answer> => {
    const response = await fetch(`${node ? node.adminUrl : cluster.adminUrl}/api${path}`, {
      method,
      headers: {
        authorization: `Bearer ${cluster.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: kept as text
    }
    return { status: response.status, body: parsed, headers: response.headers };
  };
  return {
    ...cluster,
    database,
    admin,
    query: async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<T>(text, values)).rows,
    brokerClients: () => {
      const listed = spawnSync(
        'mosquitto_ctrl',
        [
          '-h',
          '127.0.0.1',
          '-p',
          String(cluster.broker.port),
          '-u',
          'admin',
          '-P',
          cluster.broker.adminPassword!,
          'dynsec',
          'listClients',
        ],
        { encoding: 'utf8' },
      );
      if (listed.status !== 0) throw new Error(`mosquitto_ctrl dynsec listClients: ${listed.stderr || listed.stdout}`);
      return listed.stdout
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean);
    },
    destroy: async () => {
      await pool.end().catch(() => {});
      await cluster.stop();
      await database.drop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What every node logged, for a failure's message. */
export function clusterLogs(cluster: Pick<Cluster, 'nodes'>, lines = 20): string {
  return cluster.nodes
    .map((node) => `── ${node.name} ──\n${node.log().trimEnd().split('\n').slice(-lines).join('\n')}`)
    .join('\n');
}

const ROOT = join(import.meta.dirname, '..', '..');
const source = (path: string) => {
  try {
    return readFileSync(join(ROOT, path), 'utf8');
  } catch {
    return '';
  }
};

/**
 * The pieces of issue 23's several nodes, each as it shows in the tree once it has landed (the
 * work is landing piece by piece while these tests are written). A test needing one that has not
 * landed runs as `it.fails`, its name saying so: it runs, and it must fail (else the suite goes red,
 * telling us to take the marker off).
 */
export const LANDED = {
  /** `serve --node-name`: each node's name (leases, claims, the node registry). */
  nodeNames: source('src-main/cli/usage.ts').includes('--node-name'),
  /** `serve --files-dir`: stored files and packages shared by every node. */
  filesDir: source('src-main/cli/usage.ts').includes('--files-dir'),
  /** Duties (sweepers, alerts, republishing) run under leases by one node at a time. */
  duties: /cluster\/duties\.ts/.test(source('src-main/backend/server.ts')),
  /** Mail queue rows claimed by one node at a time. */
  mailClaims: existsSync(join(ROOT, 'src-main/backend/mail/queue-repository.ts')),
  /** Every node's events on every node's admin stream (LISTEN/NOTIFY). */
  live: existsSync(join(ROOT, 'src-main/backend/cluster/feed.ts')),
  /** Rate limits, sign-in throttles and sign-in tickets in the database. */
  limits: existsSync(join(ROOT, 'src-main/backend/sessions/rate-limit-repository.ts')),
  /** Mosquitto's accounts (the backend's own, the agents') kept right by every node, not one node's cache. */
  brokerAccounts: existsSync(join(ROOT, 'src-main/backend/broker/mosquitto-accounts.ts')),
};
export type Feature = keyof typeof LANDED;

/** `it` once every one of `features` has landed; until then `it.fails`, named after what it waits for. */
export function whenLanded(features: Feature[]) {
  const missing = features.filter((feature) => !LANDED[feature]);
  if (missing.length === 0) return it;
  return (name: string, test: () => Promise<void>, timeout?: number) =>
    it.fails(`${name} [fails until ${missing.join(', ')} land${missing.length === 1 ? 's' : ''}]`, test, timeout);
}
