// PostgreSQL for the tests: one cluster per Vitest run (scripts/postgres.ts: Debian's server, our
// own initdb data dir and loopback port, never the system service), started by the first test file
// that asks for it and shared by the run's other files, each with a database of its own. A
// watchdog process stops the cluster and removes its files once the Vitest run has ended (even a
// killed one). MDM_TEST_POSTGRES_URL=postgres://USER:PASSWORD@HOST:PORT/DB uses a server of yours
// instead (its user must be allowed to CREATE DATABASE).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { quoteIdent, spawnWatchdog, startPostgres } from '../../scripts/postgres.ts';

export interface TestDatabase {
  /** postgres://…/mdm_test_…: an empty database of this test file's own. */
  url: string;
  name: string;
  /** Drops it (the connections still open to it are ended). */
  drop(): Promise<void>;
}

interface SharedCluster {
  /** A URL of the cluster's maintenance database (`postgres`), with the superuser's password. */
  adminUrl: string;
}

let shared: Promise<SharedCluster> | undefined;

/** The run's cluster: started here if this is the first file to ask, else the one another file started. */
function sharedCluster(): Promise<SharedCluster> {
  shared ??= (async () => {
    const given = process.env.MDM_TEST_POSTGRES_URL;
    if (given) return { adminUrl: given };
    // Vitest's forks are children of the Vitest process: its pid names the run.
    const run = process.env.MDM_TEST_POSTGRES_RUN ?? String(process.ppid);
    // The run's directory is the lock: the file that makes it starts the cluster in it.
    const runDir = join(tmpdir(), `mdm-test-postgres-${run}`);
    const ready = join(runDir, 'ready.json');
    let mine = false;
    try {
      // Traversable: the cluster inside belongs to the `postgres` user when we are root.
      mkdirSync(runDir, { mode: 0o755 });
      mine = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (mine) {
      spawnWatchdog(Number(run), runDir, join(runDir, 'cluster'));
      const cluster = await startPostgres({ dir: join(runDir, 'cluster'), throwaway: true });
      writeFileSync(`${ready}.tmp`, JSON.stringify({ adminUrl: cluster.url('postgres') }), { mode: 0o600 });
      renameSync(`${ready}.tmp`, ready);
    }
    const deadline = Date.now() + 90_000;
    while (!existsSync(ready)) {
      if (Date.now() > deadline) throw new Error(`the shared test PostgreSQL in ${runDir} did not start within 90 s`);
      await new Promise((done) => setTimeout(done, 100));
    }
    return JSON.parse(readFileSync(ready, 'utf8')) as SharedCluster;
  })();
  return shared;
}

/** A fresh, empty database for one test file (or one test). */
export async function createTestDatabase(label = 'test'): Promise<TestDatabase> {
  const { adminUrl } = await sharedCluster();
  const name = `mdm_${label
    .replace(/[^a-z0-9]/gi, '_')
    .toLowerCase()
    .slice(0, 30)}_${randomBytes(5).toString('hex')}`;
  const admin = async (text: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE template0`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), name, drop: () => admin(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`) };
}
