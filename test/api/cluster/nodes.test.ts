// Several nodes on one database (issue 23, item 2): the node registry and its heartbeat, /api/status
// listing the nodes, the refusals (a running node's name; the embedded broker beside other nodes; a
// data dir moved to PostgreSQL started without its URL), the admin token every node shares, the CLI
// pointed at either node's data dir, and files uploaded through one node downloaded through another
// from a shared files dir. Real PostgreSQL, real mosquitto, real backends (the second node in a
// process of its own, as in a cluster), real CLI processes.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import packageJson from '../../../package.json' with { type: 'json' };
import { startBackend, type StartOptions } from '../../../src-main/backend/server.ts';
import { StartupError } from '../../../src-main/backend/startup-error.ts';
import { PostgresSql } from '../../../src-main/backend/db/postgres-sql.ts';
import { adminClient } from '../../../src-shared/contract/admin-client.ts';
import type { ClusterNode } from '../../../src-shared/contract/index.ts';
import { agentCall, enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';
import { runCli } from '../../helpers/cli.ts';
import { startMosquitto, type MosquittoProcess } from '../../helpers/external-brokers.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const LOOPBACK = { port: 0, adminPort: 0, mqttPort: 0, mqttTlsPort: 0, host: '127.0.0.1', publicHost: '127.0.0.1' } as const;
const FAST = { heartbeatMs: 200, liveMs: 3_000 };

const statusOf = async (adminUrl: string, token: string) => {
  const response = await fetch(`${adminUrl}/api/status`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as { node_name: string; files_dir: string; nodes: ClusterNode[] };
};

/** startBackend's refusal, as `serve` would print it. */
async function refusal(options: StartOptions): Promise<StartupError> {
  const started = await startBackend({ ...LOOPBACK, ...options }).then(
    async (backend) => {
      await backend.close();
      return null;
    },
    (error: unknown) => error,
  );
  expect(started, 'the node started: it should have been refused').toBeInstanceOf(StartupError);
  const error = started as StartupError;
  expect(error.message).not.toContain('\n');
  return error;
}

describe('nodes on one PostgreSQL database, with mosquitto and a shared files dir', () => {
  let database: TestDatabase;
  let mosquitto: MosquittoProcess;
  let filesDir: string;
  let a: TestBackend;
  let b: ChildBackend;
  let dataDirB: string;
  let sql: PostgresSql;
  const node = (name: string, extra: Partial<StartOptions> = {}): Partial<StartOptions> => ({
    databaseUrl: database.url,
    nodeName: name,
    filesDir,
    mqttBroker: 'mosquitto',
    mqttBrokerUrl: mosquitto.adminUrl,
    nodeTiming: FAST,
    ...extra,
  });

  beforeAll(async () => {
    [database, mosquitto] = await Promise.all([createTestDatabase('nodes'), startMosquitto()]);
    filesDir = mkdtempSync(join(tmpdir(), 'mdm-shared-files-'));
    a = await startTestBackend(node('node-a'));
    dataDirB = mkdtempSync(join(tmpdir(), 'mdm-node-b-'));
    // Its own process, as a node of a cluster is (and its own client id on the broker).
    b = await startChildBackend({ ...node('node-b'), dataDir: dataDirB });
    sql = new PostgresSql(database.url, { poolSize: 2 });
  }, 120_000);

  afterAll(async () => {
    await sql?.close();
    await b?.stop();
    await a?.stop();
    await mosquitto?.destroy();
    await database?.drop();
    for (const dir of [filesDir, dataDirB]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('each node registers itself and heartbeats; /api/status on either lists both', async () => {
    for (const [server, self] of [
      [a.backend.info, 'node-a'],
      [b.info, 'node-b'],
    ] as const) {
      const status = await statusOf(server.admin_url, server.admin_token);
      expect(status.node_name).toBe(self);
      expect(status.files_dir).toBe(filesDir);
      expect(status.nodes.map((n) => [n.name, n.live, n.this_node])).toEqual([
        ['node-a', true, self === 'node-a'],
        ['node-b', true, self === 'node-b'],
      ]);
      for (const n of status.nodes) {
        expect(n).toMatchObject({ version: packageJson.version, mqtt_broker: 'mosquitto', stopped_at: null });
      }
      expect(status.nodes.find((n) => n.name === 'node-a')!.admin_url).toBe(a.backend.info.admin_url);
      expect(status.nodes.find((n) => n.name === 'node-b')!.agent_url).toBe(b.info.api_url);
    }
    // The heartbeat moves on (every 200 ms here).
    const first = await sql.value<string>(`SELECT last_heartbeat FROM nodes WHERE name = 'node-b'`);
    await eventually(async () => (await sql.value<string>(`SELECT last_heartbeat FROM nodes WHERE name = 'node-b'`)) !== first);
  });

  it('the admin token is the same on every node, in each data dir, and works on each', async () => {
    expect(b.info.admin_token).toBe(a.backend.info.admin_token);
    const tokenOf = (dir: string) => readFileSync(join(dir, 'admin-token'), 'utf8').trim();
    expect(tokenOf(a.dataDir)).toBe(a.backend.info.admin_token);
    expect(tokenOf(dataDirB)).toBe(a.backend.info.admin_token);
    for (const url of [a.backend.info.admin_url, b.info.admin_url]) {
      const response = await fetch(`${url}/api/status`, { headers: { authorization: `Bearer ${a.backend.info.admin_token}` } });
      expect(response.status).toBe(200);
    }
  });

  it('the CLI pointed at either data dir sees what was made through the other node', async () => {
    const madeOnA = await a.admin('POST', '/invitations', { email: 'made-on-a@example.com', send_email: false });
    expect(madeOnA.status).toBe(201);
    const adminB = adminClient({ baseUrl: b.info.admin_url, token: b.info.admin_token });
    await adminB.invitations.create({ body: { email: 'made-on-b@example.com', send_email: false } });
    const [onB, onA, status] = await Promise.all([
      runCli(dataDirB, ['invitations']),
      runCli(a.dataDir, ['invitations']),
      runCli(dataDirB, ['status']),
    ]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('Nodes:                 2 of 2 live (this one: node-b)');
    expect(status.stdout).toMatch(/^ {4}node-a +live +http:\/\/127\.0\.0\.1:\d+ /m);
    expect(onB.code, onB.stderr).toBe(0);
    expect(onA.code, onA.stderr).toBe(0);
    for (const out of [onA.stdout, onB.stdout]) {
      expect(out).toContain('made-on-a@example.com');
      expect(out).toContain('made-on-b@example.com');
    }
  });

  it('a file uploaded through node A downloads through node B, whole and by ranges, from the shared files dir', async () => {
    const content = randomBytes(100_000);
    const adminA = adminClient({ baseUrl: a.backend.info.admin_url, token: a.backend.info.admin_token });
    const stored = await adminA.files.upload({ body: content, query: { name: 'shared.bin' } });
    expect(readdirSync(join(filesDir, 'file'))).toContain(
      (await a.sql.value<string>('SELECT storage_name FROM files WHERE id = ?', [stored.id]))!,
    );
    expect(existsSync(join(a.dataDir, 'files'))).toBe(false);
    // A device enrolled through node A, its session used on node B.
    const invitation = await adminA.invitations.create({ body: { email: 'downloader@example.com', send_email: false } });
    const { session } = await enrollByHand(a.backend.info.api_url, invitation);
    const get = (headers: Record<string, string>) =>
      fetch(`${b.info.api_url}/PluginMdmFile/${stored.id}?session_token=${session}`, {
        headers: { accept: 'application/octet-stream', ...headers },
      });
    const whole = await get({});
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer()).equals(content)).toBe(true);
    const part = await get({ range: 'bytes=1000-1999' });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${content.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(content.subarray(1000, 2000))).toBe(true);
    const meta = await agentCall(b.info.api_url, 'GET', `PluginMdmFile/${stored.id}?session_token=${session}`);
    expect(meta.body).toMatchObject({ id: stored.id, name: 'shared.bin', filesize: content.length });
  });

  it('uploads through both nodes at once into the shared files dir: each stored whole, none lost, no temp file left', async () => {
    const clients = [a.backend.info, b.info].map((info) => adminClient({ baseUrl: info.admin_url, token: info.admin_token }));
    const contents = Array.from({ length: 12 }, (_, i) => randomBytes(50_000 + i));
    const stored = await Promise.all(
      contents.map((body, i) => clients[i % 2]!.files.upload({ body, query: { name: `both-${i}.bin` } })),
    );
    const rows = await sql.all<{ id: number; storage_name: string; size: number }>(
      `SELECT id, storage_name, size FROM files WHERE name LIKE 'both-%' ORDER BY id`,
    );
    expect(rows).toHaveLength(12);
    for (const [i, item] of stored.entries()) {
      const row = rows.find((r) => r.id === item.id)!;
      expect(readFileSync(join(filesDir, 'file', row.storage_name)).equals(contents[i]!)).toBe(true);
    }
    expect(readdirSync(join(filesDir, 'tmp'))).toEqual([]);
    // Each node lists all of them.
    for (const client of clients) {
      const names = (await client.files.list()).map((item) => item.name);
      for (let i = 0; i < 12; i++) expect(names).toContain(`both-${i}.bin`);
    }
  });

  it("backup on a node's data dir takes the files from its --files-dir; restore --files-dir puts them in another", async () => {
    const adminB = adminClient({ baseUrl: b.info.admin_url, token: b.info.admin_token });
    const content = randomBytes(5_000);
    const stored = await adminB.files.upload({ body: content, query: { name: 'backed-up.bin' } });
    const storage = (await sql.value<string>('SELECT storage_name FROM files WHERE id = ?', [stored.id]))!;
    const backupDir = join(mkdtempSync(join(tmpdir(), 'mdm-node-backup-')), 'backup');
    const target = await createTestDatabase('nodes_restore');
    const restoredDataDir = mkdtempSync(join(tmpdir(), 'mdm-node-restored-'));
    const restoredFiles = mkdtempSync(join(tmpdir(), 'mdm-node-restored-files-'));
    try {
      // No --files-dir: node B's server.json says where its files are.
      const backup = await runCli(dataDirB, ['backup', backupDir, '--database-url', database.url]);
      expect(backup.code, backup.stderr).toBe(0);
      expect(readFileSync(join(backupDir, 'files', 'file', storage)).equals(content)).toBe(true);
      const restore = await runCli(restoredDataDir, [
        'restore',
        backupDir,
        '--database-url',
        target.url,
        '--files-dir',
        restoredFiles,
      ]);
      expect(restore.code, restore.stderr).toBe(0);
      expect(restore.stdout).toContain(`--files-dir ${restoredFiles}`);
      expect(readFileSync(join(restoredFiles, 'file', storage)).equals(content)).toBe(true);
      expect(existsSync(join(restoredDataDir, 'files'))).toBe(false);
    } finally {
      await target.drop();
      for (const dir of [dirname(backupDir), restoredDataDir, restoredFiles]) rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a second process under a running node's name is refused, and leaves that node's row as it was", async () => {
    const before = await sql.get<{ admin_url: string; started_at: string }>(
      `SELECT admin_url, started_at FROM nodes WHERE name = 'node-b'`,
    );
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-node-b2-'));
    try {
      const error = await refusal({ ...node('node-b'), dataDir });
      expect(error.code).toBe('ENODENAME');
      expect(error.message).toMatch(/^Another node named "node-b" is running on this database \(admin http:\/\/127\.0\.0\.1:\d+/);
      expect(error.message).toContain('--node-name NAME');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    expect(await sql.get(`SELECT admin_url, started_at FROM nodes WHERE name = 'node-b'`)).toEqual(before);
    const status = await statusOf(b.info.admin_url, b.info.admin_token);
    expect(status.nodes.find((n) => n.name === 'node-b')).toMatchObject({ live: true, admin_url: b.info.admin_url });
  });

  it('a node with the embedded broker is refused next to running nodes', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-node-e-'));
    try {
      const error = await refusal({ ...node('node-e'), mqttBroker: 'embedded', mqttBrokerUrl: undefined, dataDir });
      expect(error.code).toBe('ENODEBROKER');
      expect(error.message).toMatch(
        /^Nodes "node-a" \(admin [^)]+\), "node-b" \(admin [^)]+\) are running on this database: several nodes need an external MQTT broker/,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    // Refused at its first start: it left no row.
    expect((await statusOf(a.backend.info.admin_url, a.backend.info.admin_token)).nodes.map((n) => n.name)).toEqual([
      'node-a',
      'node-b',
    ]);
  });

  it('a node killed with kill -9 stops counting at once, and its name may start again at once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-node-c-'));
    try {
      const c = await startChildBackend({ ...node('node-c'), dataDir });
      const exited = new Promise((resolve) => c.child.once('exit', resolve));
      c.child.kill('SIGKILL');
      await exited;
      // Its heartbeat is still recent, but the database released its name with its session.
      await eventually(async () =>
        (await statusOf(a.backend.info.admin_url, a.backend.info.admin_token)).nodes.some((n) => n.name === 'node-c' && !n.live),
      );
      const again = await startChildBackend({ ...node('node-c'), dataDir, nodeTiming: { heartbeatMs: 200, liveMs: 60_000 } });
      const status = await statusOf(a.backend.info.admin_url, a.backend.info.admin_token);
      expect(status.nodes.find((n) => n.name === 'node-c')).toMatchObject({ live: true, admin_url: again.info.admin_url });
      await again.stop();
      // Stopped cleanly: marked so.
      const row = await sql.get<{ stopped_at: string | null }>(`SELECT stopped_at FROM nodes WHERE name = 'node-c'`);
      expect(row?.stopped_at).not.toBeNull();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the embedded broker on PostgreSQL: one node only', () => {
  let database: TestDatabase;
  let mosquitto: MosquittoProcess;

  beforeAll(async () => {
    [database, mosquitto] = await Promise.all([createTestDatabase('embedded'), startMosquitto()]);
  }, 120_000);
  afterAll(async () => {
    await mosquitto?.destroy();
    await database?.drop();
  });

  it('a single node may run it; any node is refused beside it; once it stops, another starts', async () => {
    const x = await startTestBackend({ databaseUrl: database.url, nodeName: 'solo-x', nodeTiming: FAST });
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-node-y-'));
    try {
      const beside = await refusal({
        databaseUrl: database.url,
        dataDir,
        nodeName: 'node-y',
        mqttBroker: 'mosquitto',
        mqttBrokerUrl: mosquitto.adminUrl,
      });
      expect(beside.code).toBe('ENODEBROKER');
      expect(beside.message).toMatch(
        /^Node "solo-x" \(admin http:\/\/127\.0\.0\.1:\d+\) is running on this database with the embedded MQTT broker, which serves one node only: stop it, or restart it with --mqtt-broker mosquitto\|rabbitmq, before starting node "node-y"\.$/,
      );
      const second = await refusal({ databaseUrl: database.url, dataDir, nodeName: 'node-z' });
      expect(second.code).toBe('ENODEBROKER');
    } finally {
      await x.stop();
    }
    try {
      const y = await startTestBackend({ databaseUrl: database.url, dataDir, nodeName: 'node-y' });
      const status = await y.admin('GET', '/status');
      expect(status.body.nodes.map((n: ClusterNode) => [n.name, n.live])).toEqual([
        ['node-y', true],
        ['solo-x', false],
      ]);
      await y.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('one node on SQLite', () => {
  it('lists itself alone; its files go to --files-dir; it is marked stopped once closed', async () => {
    const filesDir = mkdtempSync(join(tmpdir(), 'mdm-files-'));
    const t = await startTestBackend({ nodeName: 'laptop', filesDir, databaseUrl: undefined });
    let stopped = false;
    try {
      expect(t.engine).toBe('sqlite');
      const status = await t.admin('GET', '/status');
      expect(status.body.node_name).toBe('laptop');
      expect(status.body.nodes).toEqual([
        expect.objectContaining({ name: 'laptop', live: true, this_node: true, mqtt_broker: 'embedded', stopped_at: null }),
      ]);
      const admin = adminClient({ baseUrl: t.backend.info.admin_url, token: t.backend.info.admin_token });
      const stored = await admin.files.upload({ body: Buffer.from('hello'), query: { name: 'hello.txt' } });
      const storage = t.db.prepare('SELECT storage_name FROM files WHERE id = ?').pluck().get(stored.id) as string;
      expect(readFileSync(join(filesDir, 'file', storage), 'utf8')).toBe('hello');
      expect(existsSync(join(t.dataDir, 'files', 'file', storage))).toBe(false);
      // The token is the database's too: the same as the data dir's file.
      expect(t.db.prepare(`SELECT value FROM cluster_secrets WHERE name = 'admin_token'`).pluck().get()).toBe(
        t.backend.info.admin_token,
      );
      const dataDir = t.dataDir;
      await t.backend.close();
      stopped = true;
      const db = new Database(join(dataDir, 'mdm-console.sqlite'), { readonly: true });
      try {
        expect(db.prepare(`SELECT stopped_at FROM nodes WHERE name = 'laptop'`).pluck().get()).not.toBeNull();
      } finally {
        db.close();
      }
    } finally {
      if (!stopped) await t.stop();
      rmSync(filesDir, { recursive: true, force: true });
    }
  });

  it("the admin token: a replaced file becomes the database's; a stale copy takes the database's", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-token-'));
    const file = join(dataDir, 'admin-token');
    try {
      const first = await startBackend({ ...LOOPBACK, dataDir, databaseUrl: undefined });
      const original = first.info.admin_token;
      await first.close();
      // The owner replaces the file (documented: replace it and restart).
      const replaced = randomBytes(32).toString('hex');
      writeFileSync(file, `${replaced}\n`);
      const second = await startBackend({ ...LOOPBACK, dataDir, databaseUrl: undefined });
      expect(second.info.admin_token).toBe(replaced);
      await second.close();
      // A copy older than the database's token (a node's leftover): the database's wins and is written back.
      writeFileSync(file, `${original}\n`);
      utimesSync(file, new Date('2020-01-01T00:00:00Z'), new Date('2020-01-01T00:00:00Z'));
      const third = await startBackend({ ...LOOPBACK, dataDir, databaseUrl: undefined });
      expect(third.info.admin_token).toBe(replaced);
      expect(readFileSync(file, 'utf8').trim()).toBe(replaced);
      await third.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a data dir moved to PostgreSQL is refused without the database URL, by serve too, in one line', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-moved-'));
    try {
      writeFileSync(
        join(dataDir, 'moved-to-postgres.json'),
        JSON.stringify({ moved_at: '2026-11-26T20:00:00.000Z', database: 'postgres://mdm@db.example:5432/office' }),
      );
      const error = await refusal({ dataDir, databaseUrl: undefined });
      expect(error.code).toBe('EMOVEDTOPOSTGRES');
      expect(error.message).toContain('was moved to PostgreSQL (postgres://mdm@db.example:5432/office) by migrate-db');
      expect(error.message).toContain('start with --database-url postgres://');
      // Nothing made in it: no SQLite file.
      expect(existsSync(join(dataDir, 'mdm-console.sqlite'))).toBe(false);
      const serve = await runCli(dataDir, [
        'serve',
        '--port',
        '0',
        '--admin-port',
        '0',
        '--mqtt-port',
        '0',
        '--mqtt-tls-port',
        '0',
      ]);
      expect(serve.code).toBe(1);
      expect(serve.stderr.trim()).toMatch(
        /^mdm-console: cannot start: The data of .* was moved to PostgreSQL .* --database-url /,
      );
      expect(serve.stderr.trim()).not.toContain('\n');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
