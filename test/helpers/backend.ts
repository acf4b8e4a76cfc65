import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresSql } from '../../src-main/backend/db/postgres-sql.ts';
import type { Sql, SqlEngine } from '../../src-main/backend/db/sql.ts';
import { SqliteSql } from '../../src-main/backend/db/sqlite-sql.ts';
import { startBackend, type RunningBackend } from '../../src-main/backend/server.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';

/**
 * The engine the test backends run on: MDM_TEST_ENGINE=postgres puts each on a PostgreSQL database
 * of its own (test/helpers/postgres.ts); otherwise SQLite in its data dir, the default.
 */
export const TEST_ENGINE: SqlEngine = process.env.MDM_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';

export interface TestBackend {
  backend: RunningBackend;
  dataDir: string;
  /** The engine it runs on. */
  engine: SqlEngine;
  /**
   * The test's own connection to the backend's database, whichever engine, for what no API shows
   * (the backend hands out no database). Write SQL both engines accept.
   */
  readonly sql: Sql;
  /** SQLite only: the test's own better-sqlite3 connection to the backend's file (`sql` runs on it). */
  readonly db: Database.Database;
  apiUrl: string;
  /** Calls the admin API with the admin token; returns status and parsed JSON. */
  admin<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

/**
 * The cluster key of the test nodes on one PostgreSQL database (secrets/cluster-key.ts): the same for
 * every node on it, as an operator gives every node the same, unless the test names one (or none:
 * `secretKey: undefined`) or the data dir holds its own (a migrated one's).
 */
export function testClusterKey(databaseUrl: string, dataDir: string, given: object = {}): { secretKey?: string } {
  if ('secretKey' in given || 'secretKeyFile' in given || existsSync(join(dataDir, 'secret-key'))) return {};
  return { secretKey: createHash('sha256').update(`test cluster key ${databaseUrl}`).digest('base64') };
}

/** A real backend on loopback with every port chosen by the OS and a fresh SQLite file. */
export async function startTestBackend(extra: Parameters<typeof startBackend>[0] = {}): Promise<TestBackend> {
  const dataDir = extra.dataDir ?? mkdtempSync(join(tmpdir(), 'mdm-test-'));
  const database: TestDatabase | undefined =
    TEST_ENGINE === 'postgres' && extra.databaseUrl === undefined ? await createTestDatabase('backend') : undefined;
  const databaseUrl = extra.databaseUrl ?? database?.url;
  const backend = await startBackend({
    dataDir,
    ...(databaseUrl ? { databaseUrl, ...testClusterKey(databaseUrl, dataDir, extra) } : {}),
    port: 0,
    adminPort: 0,
    mqttPort: 0,
    mqttTlsPort: 0,
    host: '127.0.0.1',
    publicHost: '127.0.0.1',
    ...extra,
  });
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${backend.info.admin_url}/api${path}`, {
      method,
      headers: {
        authorization: `Bearer ${backend.info.admin_token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  let db: Database.Database | undefined;
  let sql: Sql | undefined;
  const openDb = () => {
    if (databaseUrl) throw new Error('t.db is the SQLite file of a SQLite backend: this one runs on PostgreSQL (use t.sql)');
    if (!db) {
      db = new Database(join(dataDir, 'mdm-console.sqlite'));
      db.pragma('busy_timeout = 5000');
      db.pragma('foreign_keys = ON');
    }
    return db;
  };
  return {
    backend,
    dataDir,
    engine: databaseUrl ? 'postgres' : 'sqlite',
    get sql() {
      if (!sql) {
        sql = databaseUrl ? new PostgresSql(databaseUrl, { poolSize: 2 }) : new SqliteSql(openDb());
      }
      return sql;
    },
    get db() {
      return openDb();
    },
    apiUrl: backend.info.api_url,
    admin,
    stop: async () => {
      await sql?.close();
      db?.close();
      await backend.close();
      if (!extra.dataDir) rmSync(dataDir, { recursive: true, force: true });
      await database?.drop();
    },
  };
}

/** A GET/POST against the agent API the way devices send it (Content-Type always set). */
export async function agentCall(
  apiUrl: string,
  method: string,
  path: string,
  options: { body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(`${apiUrl}/${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...options.headers },
    body: options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body, headers: response.headers };
}

/** Runs the spec's enrollment sequence by hand; returns what each step gave. */
export async function enrollByHand(
  apiUrl: string,
  invitation: { user_token: string; invitation_token: string; email: string },
  device: { serial?: string; uuid?: string; version?: string; type?: string; extra?: Record<string, unknown> } = {},
) {
  const init = await agentCall(apiUrl, 'GET', `initSession?user_token=${invitation.user_token}`);
  const session = init.body.session_token as string;
  const full = await agentCall(apiUrl, 'GET', `getFullSession?session_token=${session}`);
  if (full.body.coreactiveprofile.id !== full.body.plugin_mdm_guest_profiles_id) {
    await agentCall(
      apiUrl,
      'POST',
      `changeActiveProfile?session_token=${session}&profiles_id=${full.body.plugin_mdm_guest_profiles_id}`,
    );
  }
  const created = await agentCall(apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, {
    body: {
      input: {
        _email: invitation.email,
        _invitation_token: invitation.invitation_token,
        _serial: device.serial ?? `SN${Math.random().toString(36).slice(2, 10).toUpperCase()}`,
        _uuid: device.uuid ?? crypto.randomUUID(),
        csr: '',
        firstname: 'Test',
        lastname: 'Device',
        version: device.version ?? '1.2.3',
        type: device.type ?? 'android',
        ...device.extra,
      },
    },
  });
  return { session, full, created };
}
