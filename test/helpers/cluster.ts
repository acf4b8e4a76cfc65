// A real cluster for one test file, started by the project's own script (scripts/cluster.ts): N
// `serve` nodes as child processes on one PostgreSQL database (a database of the run's shared test
// PostgreSQL, test/helpers/postgres.ts), Mosquitto with dynamic security, and haproxy in front, all
// on loopback ports chosen by the OS. One cluster per file, shared by its tests: starting one costs
// seconds and three Node processes. A watchdog stops it and removes its files if the test process
// dies without doing so.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
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
