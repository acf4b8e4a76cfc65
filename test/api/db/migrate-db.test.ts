// `mdm-console migrate-db --to postgres://…` as a user runs it (the CLI, its own process) on a real
// office data dir (test/helpers/populated-office.ts) into real PostgreSQL databases (the run's
// cluster, test/helpers/postgres.ts): every table equal on both sides, the stored files checked,
// and every refusal leaving the target as it was.
import Database from 'better-sqlite3';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src-main/backend/db/database.ts';
import { migrations } from '../../../src-main/backend/db/migrations.ts';
import { PostgresSql } from '../../../src-main/backend/db/postgres-sql.ts';
import { startTestBackend } from '../../helpers/backend.ts';
import { runCli } from '../../helpers/cli.ts';
import { postgresContent, sqliteContent } from '../../helpers/db-content.ts';
import { populateOffice, type PopulatedOffice } from '../../helpers/populated-office.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const dirs: string[] = [];
const databases: TestDatabase[] = [];
let office: PopulatedOffice;

const tempDir = (prefix = 'mdm-migrate-') => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};
/** A copy of the populated office's data dir, so each test starts from the same place. */
const officeCopy = () => {
  const dir = tempDir();
  cpSync(office.dataDir, dir, { recursive: true });
  return dir;
};
const database = async (label: string) => {
  const made = await createTestDatabase(label);
  databases.push(made);
  return made;
};

beforeAll(async () => {
  office = await populateOffice(tempDir('mdm-office-'));
}, 120_000);

afterAll(async () => {
  for (const made of databases) await made.drop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const migrate = (dataDir: string, url: string, ...extra: string[]) => runCli(dataDir, ['migrate-db', '--to', url, ...extra]);

/** A refusal: exit code 1, the message on stderr, never a stack trace. */
function expectRefusal(result: { code: number; stderr: string }, ...phrases: string[]) {
  expect(result.code, result.stderr).toBe(1);
  for (const phrase of phrases) expect(result.stderr).toContain(phrase);
  expect(result.stderr).not.toMatch(/\n\s+at /);
  expect(result.stderr).not.toContain('unexpected error');
}

const count = async (url: string, table: string) => {
  const sql = new PostgresSql(url);
  try {
    return (await sql.value<number>(`SELECT count(*) FROM "${table}"`)) ?? 0;
  } finally {
    await sql.close();
  }
};

describe('migrate-db', () => {
  it('copies a populated office into an empty database: every row of every table equal on both sides, identities past the copied ids', async () => {
    const dataDir = officeCopy();
    const target = await database('migrate');
    const result = await migrate(dataDir, target.url, '--json');
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.stored).toMatchObject({ files: 1, packages: 1 });
    expect(report.next).toMatch(/^MDM_CONSOLE_DATABASE_URL=postgres:\/\/\S+ mdm-console serve --data-dir /);
    expect(report.next).not.toContain(new URL(target.url).password);

    const lite = sqliteContent(join(dataDir, 'mdm-console.sqlite'));
    const copied = await postgresContent(target.url);
    expect(Object.keys(copied).sort()).toEqual(Object.keys(lite).sort());
    for (const table of Object.keys(lite)) expect(copied[table], table).toEqual(lite[table]);
    // What the office holds is all there.
    const rows = (table: string) => lite[table]!.length;
    expect(rows('agents')).toBe(2);
    expect(rows('invitations')).toBe(2);
    expect(rows('enrollment_codes')).toBe(1);
    expect(lite.enrollment_code_log!.some((r) => r.includes('"outcome":"used"'))).toBe(true);
    expect(rows('fleets')).toBe(3);
    expect(rows('files') + rows('packages')).toBe(2);
    expect(rows('policy_assignments')).toBe(3);
    expect(rows('policy_tasks')).toBeGreaterThanOrEqual(4);
    expect(rows('admin_accounts')).toBe(2);
    expect(rows('api_tokens')).toBeGreaterThanOrEqual(2);
    expect(rows('audit_log')).toBeGreaterThan(5);
    expect(rows('events')).toBeGreaterThan(5);
    // The report's counts are the tables'.
    for (const table of report.tables as { table: string; rows: number; checksum: string }[]) {
      expect(table.rows, table.table).toBe(rows(table.table));
      expect(table.checksum).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(report.rows).toBe(Object.values(lite).reduce((sum, r) => sum + r.length, 0));

    // A new row gets an id past the copied ones, in every table that has an identity.
    const sql = new PostgresSql(target.url);
    try {
      const identities = await sql.all<{ table: string; column: string }>(
        `SELECT table_name AS table, column_name AS column FROM information_schema.columns
          WHERE table_schema = current_schema() AND is_identity = 'YES'`,
      );
      expect(identities.length).toBeGreaterThan(20);
      for (const { table, column } of identities) {
        const max = (await sql.value<number>(`SELECT coalesce(max("${column}"), 0) FROM "${table}"`)) ?? 0;
        const next = await sql.value<number>(`SELECT nextval(pg_get_serial_sequence('"${table}"', '${column}'))`);
        expect(next, table).toBe(max + 1);
      }
    } finally {
      await sql.close();
    }
    // The data dir says where its data went.
    expect(JSON.parse(readFileSync(join(dataDir, 'moved-to-postgres.json'), 'utf8'))).toMatchObject({ rows: report.rows });
  }, 60_000);

  it("carries the office's SMTP password over, sealed by a cluster key it writes into the data dir; the server on PostgreSQL uses it", async () => {
    const dataDir = officeCopy();
    const password = 'office-smtp-password-7f3a';
    writeFileSync(
      join(dataDir, 'secrets.json'),
      JSON.stringify({ version: 1, protection: 'file-0600', values: { smtp_password: password } }),
      { mode: 0o600 },
    );
    const target = await database('migrate_secret');
    const result = await migrate(dataDir, target.url);
    expect(result.code, result.stderr).toBe(0);
    const keyFile = join(dataDir, 'secret-key');
    expect(result.stdout).toContain(
      `The SMTP password was carried over, encrypted in the database with the cluster key written to ${keyFile}.`,
    );
    expect(result.stdout).toContain("Every node on this database needs that key: copy the file into each node's data dir");
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const stored = Object.values(await postgresContent(target.url))
      .flat()
      .join('\n');
    expect(stored).toContain('sealed:smtp_password');
    expect(stored).not.toContain(password);
    // The server started as the command says (same data dir, its key file) reads it.
    const node = await startTestBackend({ dataDir, databaseUrl: target.url });
    try {
      expect(node.backend.notices).toEqual([]);
      expect((await node.admin('GET', '/mail/settings')).body).toMatchObject({
        smtp_password_set: true,
        smtp_password_unreadable: false,
        secret_storage: 'database-aes-256-gcm',
      });
    } finally {
      await node.stop();
    }
  }, 60_000);

  it("says the SMTP password must be entered again when the desktop's keychain protects it", async () => {
    const dataDir = officeCopy();
    writeFileSync(
      join(dataDir, 'secrets.json'),
      JSON.stringify({ version: 1, protection: 'os-safe-storage', values: { smtp_password: 'djEwAAAA' } }),
      { mode: 0o600 },
    );
    const target = await database('migrate_keychain');
    const result = await migrate(dataDir, target.url);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("The SMTP password is protected by this computer's keychain");
    expect(result.stdout).toContain('Enter it again in the console (Settings → Mail)');
    expect(existsSync(join(dataDir, 'secret-key'))).toBe(false);
    expect(
      Object.values(await postgresContent(target.url))
        .flat()
        .join('\n'),
    ).not.toContain('sealed:');
  }, 60_000);

  it('refuses a data dir already moved (its SQLite file is the past); a restore onto SQLite puts the note aside', async () => {
    const dataDir = officeCopy();
    const backup = join(tempDir(), 'backup');
    expect((await runCli(dataDir, ['backup', backup])).code).toBe(0);
    const first = await database('moved');
    expect((await migrate(dataDir, first.url)).code).toBe(0);
    const second = await database('movedagain');
    expectRefusal(
      await migrate(dataDir, second.url),
      `${dataDir} was already moved to PostgreSQL (postgres://`,
      `remove ${join(dataDir, 'moved-to-postgres.json')}`,
    );
    expect(await count(first.url, 'agents')).toBe(2);
    // Back on SQLite: the note goes aside with what the restore replaces, and a move may be made again.
    const restored = await runCli(dataDir, ['restore', backup, '--json']);
    expect(restored.code, restored.stderr).toBe(0);
    expect(existsSync(join(dataDir, 'moved-to-postgres.json'))).toBe(false);
    expect(existsSync(join(JSON.parse(restored.stdout).previous as string, 'moved-to-postgres.json'))).toBe(true);
    expect((await migrate(dataDir, second.url)).code).toBe(0);
  }, 90_000);

  it('refuses a target holding MDM Console data, and leaves it as it was', async () => {
    const dataDir = officeCopy();
    const target = await database('nonempty');
    expect((await migrate(dataDir, target.url)).code).toBe(0);
    const before = await postgresContent(target.url);
    const again = await migrate(officeCopy(), target.url);
    expectRefusal(again, 'is not empty', 'admin_accounts (2 rows)', 'Nothing was copied');
    expect(again.stderr).not.toContain(new URL(target.url).password);
    expect(await postgresContent(target.url)).toEqual(before);
  }, 60_000);

  it("refuses a target holding another application's tables", async () => {
    const target = await database('foreign');
    const sql = new PostgresSql(target.url);
    await sql.exec('CREATE TABLE customers (id integer PRIMARY KEY)');
    await sql.close();
    expectRefusal(await migrate(officeCopy(), target.url), "tables that are not MDM Console's (customers)");
  });

  it('refuses while a server runs on the data dir', async () => {
    const dataDir = officeCopy();
    const target = await database('running');
    const running = await startTestBackend({ dataDir });
    try {
      expectRefusal(await migrate(dataDir, target.url), `A server is running on ${dataDir}`, 'Stop it first');
    } finally {
      await running.stop();
    }
    // Nothing was made in the target.
    const sql = new PostgresSql(target.url);
    expect(await sql.value<number>(`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`)).toBe(0);
    await sql.close();
  }, 60_000);

  it('a row PostgreSQL cannot hold stops the copy, which is rolled back whole; the same command then starts over', async () => {
    const dataDir = officeCopy();
    const target = await database('rollback');
    // Text with a NUL character: SQLite keeps it, PostgreSQL's text cannot. The table comes late
    // in the copy (parents first), so much has been copied when it is met.
    const db = new Database(join(dataDir, 'mdm-console.sqlite'));
    const id = db.prepare('SELECT max(id) FROM task_history').pluck().get() as number;
    db.prepare(`UPDATE task_history SET reason = 'broken' || char(0) || 'reason' WHERE id = ?`).run(id);
    db.close();
    expectRefusal(await migrate(dataDir, target.url), `task_history id ${id}: column reason holds a NUL character`);
    // The schema is there (the migrator's own transactions), with nothing copied into it.
    expect(await count(target.url, 'agents')).toBe(0);
    expect(await count(target.url, 'audit_log')).toBe(0);
    expect(await count(target.url, 'fleets')).toBe(1);

    const fix = new Database(join(dataDir, 'mdm-console.sqlite'));
    fix.prepare(`UPDATE task_history SET reason = 'fixed' WHERE id = ?`).run(id);
    fix.close();
    const again = await migrate(dataDir, target.url);
    expect(again.code, again.stderr).toBe(0);
    expect(await count(target.url, 'agents')).toBe(2);
  }, 60_000);

  it('refuses when a stored file is missing or no longer has its recorded SHA-256, naming it', async () => {
    const dataDir = officeCopy();
    const target = await database('files');
    const db = new Database(join(dataDir, 'mdm-console.sqlite'), { readonly: true });
    const stored = db.prepare('SELECT id, storage_name FROM files').get() as { id: number; storage_name: string };
    const pkg = db.prepare('SELECT id, storage_name FROM packages').get() as { id: number; storage_name: string };
    db.close();
    const path = join(dataDir, 'files', 'file', stored.storage_name);
    const bytes = readFileSync(path);
    bytes[10] = bytes[10]! ^ 1;
    writeFileSync(path, bytes);
    rmSync(join(dataDir, 'files', 'package', pkg.storage_name));
    const refused = await migrate(dataDir, target.url);
    expectRefusal(
      refused,
      `files id ${stored.id} ("prices.txt")`,
      'does not have its recorded SHA-256',
      `packages id ${pkg.id} ("field-app.apk")`,
      'is missing',
      'Nothing was copied',
    );
    expect(existsSync(path)).toBe(true);
  }, 60_000);

  it('an SQLite data dir at an older schema is migrated first, then copied', async () => {
    const dataDir = tempDir();
    const older = openDatabase(
      join(dataDir, 'mdm-console.sqlite'),
      migrations.filter((m) => m.version <= 20),
    );
    older.prepare(`INSERT INTO settings (key, value) VALUES ('public_host', '"10.0.0.5"')`).run();
    older.close();
    const target = await database('older');
    const result = await migrate(dataDir, target.url, '--json');
    expect(result.code, result.stderr).toBe(0);
    const latest = Math.max(...migrations.map((m) => m.version));
    expect(JSON.parse(result.stdout).schemaVersion).toBe(latest);
    const db = new Database(join(dataDir, 'mdm-console.sqlite'), { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(latest);
    db.close();
    expect(await count(target.url, 'settings')).toBe(1);
  }, 60_000);

  it('says what it needs when the URL is missing, malformed or unreachable', async () => {
    const dataDir = officeCopy();
    const missing = await runCli(dataDir, ['migrate-db']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('migrate-db needs the PostgreSQL database to copy into');
    expectRefusal(await migrate(dataDir, 'mysql://x@localhost/db'), 'is not a PostgreSQL URL');
    expectRefusal(await migrate(dataDir, 'postgres://x:y@127.0.0.1:1/db'), 'Cannot connect to PostgreSQL at 127.0.0.1:1');
    expectRefusal(await migrate(tempDir(), 'postgres://x:y@127.0.0.1:1/db'), 'There is no SQLite database in');
  });
});
