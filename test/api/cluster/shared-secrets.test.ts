// The SMTP password on several nodes (issue 23, item 2): on PostgreSQL it lives in the database,
// sealed (AES-256-GCM) by the cluster key every node is given, so that it is set once, in the console
// of any node, and used by every node. Before, each node kept it in its own data dir (secrets.json):
// set on node A, node B sent without it. Two real backends on one real PostgreSQL database, a real
// SMTP server that requires authentication.
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupPostgres } from '../../../src-main/backend/db/postgres-backup.ts';
import { startBackend } from '../../../src-main/backend/server.ts';
import { StartupError } from '../../../src-main/backend/startup-error.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';
import { startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';

const PASSWORD = `pw-${randomBytes(12).toString('hex')}`;
const USER = 'mailer@corp.example';
let database: TestDatabase;
let smtp: TestSmtp;
const logins: { user: string; pass: string }[] = [];
const nodes: TestBackend[] = [];
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'mdm-secrets-'));
  dirs.push(dir);
  return dir;
};

/** Waits until `check` passes (the other node learns a change through the cluster feed). */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await read();
    if (check(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`never: ${what}`);
}

/** Every row of every table of the database, as text. */
async function wholeDatabase(node: TestBackend): Promise<string> {
  const tables = await node.sql.all<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  const parts: string[] = [];
  for (const { name } of tables) {
    for (const row of await node.sql.all<{ t: string }>(`SELECT t::text AS t FROM "${name}" t`)) parts.push(row.t);
  }
  return parts.join('\n');
}

/** A node's start that must be refused: its one-line message. */
async function refusedStart(options: Parameters<typeof startBackend>[0]): Promise<string> {
  const started = startBackend({
    port: 0,
    adminPort: 0,
    mqttPort: 0,
    mqttTlsPort: 0,
    host: '127.0.0.1',
    publicHost: '127.0.0.1',
    databaseUrl: database.url,
    nodeName: `refused-${randomBytes(3).toString('hex')}`,
    // Each node runs its own embedded broker here (one process), which serve refuses beside other nodes.
    embeddedBrokerPerNode: true,
    ...options,
  });
  const error = await started.then(
    async (backend) => {
      await backend.close();
      return null;
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StartupError);
  const message = (error as StartupError).message;
  expect(message).not.toContain('\n');
  return message;
}

beforeAll(async () => {
  database = await createTestDatabase('shared_secrets');
  smtp = await startTestSmtp({
    authOptional: false,
    authMethods: ['PLAIN', 'LOGIN'],
    onAuth(auth, _session, callback) {
      logins.push({ user: auth.username ?? '', pass: auth.password ?? '' });
      if (auth.username === USER && auth.password === PASSWORD) callback(null, { user: USER });
      else callback(new Error('Invalid username or password'));
    },
  });
  // The operator's key, the same for both nodes (openssl rand -base64 32).
  const secretKey = randomBytes(32).toString('base64');
  const first = await startTestBackend({ databaseUrl: database.url, nodeName: 'node-a', secretKey, embeddedBrokerPerNode: true });
  nodes.push(first);
  const dataDir = tempDir();
  copyFileSync(join(first.dataDir, 'admin-token'), join(dataDir, 'admin-token'));
  nodes.push(
    await startTestBackend({ databaseUrl: database.url, dataDir, nodeName: 'node-b', secretKey, embeddedBrokerPerNode: true }),
  );
}, 120_000);
afterAll(async () => {
  for (const node of nodes) await node.stop();
  await smtp?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await database?.drop();
});

describe('the SMTP password on several nodes', () => {
  it('set in the console of node A, node B sends with it (node A stopped)', async () => {
    const [a, b] = nodes as [TestBackend, TestBackend];
    const put = await a.admin('PUT', '/mail/settings', {
      smtp_host: '127.0.0.1',
      smtp_port: smtp.port,
      smtp_security: 'none',
      smtp_user: USER,
      smtp_password: PASSWORD,
      mail_from_address: 'it@corp.example',
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({
      smtp_password_set: true,
      smtp_password_unreadable: false,
      secret_storage: 'database-aes-256-gcm',
    });
    // Node B learns it through the cluster feed, without a restart.
    const seen = await eventually(
      () => b.admin('GET', '/mail/settings'),
      (answer) => answer.body.smtp_password_set === true,
      'node B sees the password set',
    );
    expect(seen.body).toMatchObject({ smtp_password_unreadable: false, secret_storage: 'database-aes-256-gcm' });
    // Nothing in either data dir: no secrets.json.
    for (const node of nodes) expect(existsSync(join(node.dataDir, 'secrets.json'))).toBe(false);

    // Node A stops: only node B can send the invitation it makes.
    await a.stop();
    nodes.shift();
    const invited = await b.admin('POST', '/invitations', { email: 'dev@example.com' });
    expect(invited.status).toBe(201);
    const [mail] = await smtp.waitFor(1, 20_000);
    expect(mail!.envelope.to).toEqual(['dev@example.com']);
    expect(logins.at(-1)).toEqual({ user: USER, pass: PASSWORD });
  });

  it('the password is nowhere in clear: not in the database, an answer, the audit trail or a backup', async () => {
    const b = nodes[0]!;
    const rows = await wholeDatabase(b);
    expect(rows).toContain('smtp_password'); // the sealed row and the audited change are there…
    expect(rows).not.toContain(PASSWORD); // …never the value
    const answers = [
      await b.admin('GET', '/mail/settings'),
      await b.admin('GET', '/mail/status'),
      await b.admin('GET', '/settings'),
      await b.admin('GET', '/events?limit=1000'),
      await b.admin('GET', '/audit'),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(JSON.stringify(answer.body)).not.toContain(PASSWORD);
    }
    const exported = await fetch(`${b.backend.info.admin_url}/api/audit/export?format=jsonl`, {
      headers: { authorization: `Bearer ${b.backend.info.admin_token}` },
    });
    expect(exported.status).toBe(200);
    const exportText = await exported.text();
    expect(exportText).toContain('smtp_password');
    expect(exportText).not.toContain(PASSWORD);

    const backup = join(tempDir(), 'backup');
    await backupPostgres(b.dataDir, database.url, backup);
    const files = readdirSync(backup, { recursive: true, encoding: 'utf8' }).filter((name) =>
      statSync(join(backup, name)).isFile(),
    );
    expect(files).toContain('mdm-console.sqlite');
    for (const name of files) expect(readFileSync(join(backup, name)).includes(PASSWORD), name).toBe(false);
  });

  it('a node with another key, or with none, is refused at start with one line saying what to do', async () => {
    const wrong = await refusedStart({ dataDir: tempDir(), secretKey: randomBytes(32).toString('base64') });
    expect(wrong).toBe(
      "The cluster key of MDM_CONSOLE_SECRET_KEY is not the one this database's secrets were written with: give every node the same key: " +
        "copy DATA_DIR/secret-key of a node that runs into this node's data dir, or set MDM_CONSOLE_SECRET_KEY (or serve --secret-key-file FILE) on every node.",
    );
    const none = tempDir();
    const missing = await refusedStart({ dataDir: none });
    expect(missing).toMatch(
      /^This node has no cluster key, and this database's secrets \(the SMTP password\) are encrypted with one: give every node the same key/,
    );
    // It made no key of its own.
    expect(existsSync(join(none, 'secret-key'))).toBe(false);

    const keyFile = join(tempDir(), 'key');
    writeFileSync(keyFile, 'not a key\n');
    expect(await refusedStart({ dataDir: tempDir(), secretKeyFile: keyFile })).toBe(
      `--secret-key-file ${keyFile} is not a cluster key: give 32 random bytes in base64, as \`openssl rand -base64 32\` prints them (9 characters given)`,
    );
    expect(await refusedStart({ dataDir: tempDir(), secretKeyFile: join(none, 'absent') })).toBe(
      `--secret-key-file ${join(none, 'absent')}: cannot read it (ENOENT)`,
    );
  });
});

describe('the first node on a database without a key', () => {
  it('makes one in its data dir, says so, and the next node is refused until it has a copy', async () => {
    const fresh = await createTestDatabase('secrets_first');
    const dirA = tempDir();
    const dirB = tempDir();
    let a: TestBackend | undefined;
    let b: TestBackend | undefined;
    try {
      a = await startTestBackend({
        databaseUrl: fresh.url,
        dataDir: dirA,
        nodeName: 'first-a',
        secretKey: undefined,
        embeddedBrokerPerNode: true,
      });
      const keyFile = join(dirA, 'secret-key');
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      expect(Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64')).toHaveLength(32);
      expect(a.backend.notices).toEqual([expect.stringMatching(new RegExp(`^A new cluster key was written to ${keyFile}: `))]);
      expect(
        (await a.admin('PUT', '/mail/settings', { smtp_host: '127.0.0.1', smtp_user: USER, smtp_password: PASSWORD })).status,
      ).toBe(200);
      copyFileSync(join(dirA, 'admin-token'), join(dirB, 'admin-token'));
      await expect(
        startTestBackend({
          databaseUrl: fresh.url,
          dataDir: dirB,
          nodeName: 'first-b',
          secretKey: undefined,
          embeddedBrokerPerNode: true,
        }),
      ).rejects.toThrow(/^This node has no cluster key/);
      copyFileSync(keyFile, join(dirB, 'secret-key'));
      b = await startTestBackend({
        databaseUrl: fresh.url,
        dataDir: dirB,
        nodeName: 'first-b',
        secretKey: undefined,
        embeddedBrokerPerNode: true,
      });
      expect(b.backend.notices).toEqual([]);
      expect((await b.admin('GET', '/mail/settings')).body).toMatchObject({
        smtp_password_set: true,
        smtp_password_unreadable: false,
      });
      expect(b.backend.services.mail.settings.target()).toMatchObject({ smtp: { password: PASSWORD } });
    } finally {
      await b?.stop();
      await a?.stop();
      await fresh.drop();
    }
  });
});
