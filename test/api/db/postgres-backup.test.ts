// `backup` and `restore` in PostgreSQL mode (--database-url), as a user runs them (the CLI, its own
// process), on an office moved to the run's PostgreSQL: a backup taken while transactions keep
// committing is one snapshot; it restores into an empty database, table for table, with the
// data dir's files; into a database that is not empty it is refused; and the same backup
// restores onto SQLite too.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateDataDirToPostgres } from '../../../src-main/backend/db/migrate-to-postgres.ts';
import { PostgresSql } from '../../../src-main/backend/db/postgres-sql.ts';
import { runCli } from '../../helpers/cli.ts';
import { postgresContent, sqliteContent } from '../../helpers/db-content.ts';
import { populateOffice, type PopulatedOffice } from '../../helpers/populated-office.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

const dirs: string[] = [];
const databases: TestDatabase[] = [];
let office: PopulatedOffice;
/** The office, moved to PostgreSQL (its data dir keeps the files). */
let source: TestDatabase;

const tempDir = (prefix = 'mdm-pgbackup-') => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};
const database = async (label: string) => {
  const made = await createTestDatabase(label);
  databases.push(made);
  return made;
};

beforeAll(async () => {
  office = await populateOffice(tempDir('mdm-office-'));
  source = await database('pgbackup');
  await migrateDataDirToPostgres({ dataDir: office.dataDir, url: source.url });
}, 120_000);

afterAll(async () => {
  for (const made of databases) await made.drop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function expectRefusal(result: { code: number; stderr: string }, ...phrases: string[]) {
  expect(result.code, result.stderr).toBe(1);
  for (const phrase of phrases) expect(result.stderr).toContain(phrase);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

/** Every file under `dir` with its SHA-256, by path relative to it (the lock file aside: it names its last holder). */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name === 'server.lock') continue;
    const path = join(entry.parentPath, entry.name);
    out[path.slice(dir.length + 1)] = createHash('sha256').update(readFileSync(path)).digest('hex');
  }
  return out;
}

describe('backup and restore with --database-url', () => {
  it('a backup taken while transactions commit is one snapshot; it restores into an empty database table for table, with the files', async () => {
    // A writer keeps committing, each transaction one event and the counter of them.
    const writer = new PostgresSql(source.url);
    await writer.run(`INSERT INTO settings (key, value) VALUES ('test_ticks', '0')`);
    let ticks = 0;
    let writing = true;
    const writes = (async () => {
      while (writing) {
        await writer.transaction(async () => {
          await writer.run(`INSERT INTO events (at, type, message) VALUES (?, 'test.tick', 'tick')`, [new Date().toISOString()]);
          await writer.run(`UPDATE settings SET value = ? WHERE key = 'test_ticks'`, [String(++ticks)]);
        });
      }
    })();
    const backup = join(tempDir(), 'backup');
    let made;
    try {
      while (ticks < 5) await new Promise((resolve) => setTimeout(resolve, 20));
      made = await runCli(office.dataDir, ['backup', backup, '--database-url', source.url, '--json']);
    } finally {
      writing = false;
      await writes;
    }
    const ticksAfter = ticks;
    await writer.close();
    expect(made.code, made.stderr).toBe(0);
    const manifest = JSON.parse(made.stdout);
    expect(manifest).toMatchObject({ engine: 'postgres', files: 1, packages: 1 });
    expect(manifest.database).not.toContain(new URL(source.url).password);

    // One snapshot: the counter and the events it counts agree, at some point within the run.
    const copy = new Database(join(backup, 'mdm-console.sqlite'), { readonly: true });
    const counted = Number(copy.prepare(`SELECT value FROM settings WHERE key = 'test_ticks'`).pluck().get());
    const events = copy.prepare(`SELECT count(*) FROM events WHERE type = 'test.tick'`).pluck().get() as number;
    copy.close();
    expect(counted).toBeGreaterThanOrEqual(5);
    expect(events).toBe(counted);
    expect(ticksAfter).toBeGreaterThan(counted - 1);
    // The stored files and the certificate are in it, as in SQLite mode.
    expect(existsSync(join(backup, 'mqtt-tls'))).toBe(true);
    expect(tree(join(backup, 'files'))).toEqual(tree(join(office.dataDir, 'files')));

    // Into an empty database and a new data dir: the same rows, the same files.
    const target = await database('restored');
    const dataDir = tempDir();
    const restored = await runCli(dataDir, ['restore', backup, '--database-url', target.url, '--json']);
    expect(restored.code, restored.stderr).toBe(0);
    expect(await postgresContent(target.url)).toEqual(sqliteContent(join(backup, 'mdm-console.sqlite')));
    expect(tree(join(dataDir, 'files'))).toEqual(tree(join(backup, 'files')));
    expect(readFileSync(join(dataDir, 'mqtt-tls', 'cert.pem'))).toEqual(
      readFileSync(join(office.dataDir, 'mqtt-tls', 'cert.pem')),
    );
    expect(existsSync(join(dataDir, 'mdm-console.sqlite'))).toBe(false);
    // New rows go on past the restored ids.
    const sql = new PostgresSql(target.url);
    const max = (await sql.value<number>('SELECT max(id) FROM events'))!;
    expect(await sql.value<number>(`INSERT INTO events (at, type, message) VALUES ('x', 'y', 'z') RETURNING id`)).toBe(max + 1);
    await sql.close();

    // The same backup onto SQLite (no --database-url): the laptop again.
    const laptop = tempDir();
    const onSqlite = await runCli(laptop, ['restore', backup]);
    expect(onSqlite.code, onSqlite.stderr).toBe(0);
    expect(sqliteContent(join(laptop, 'mdm-console.sqlite'))).toEqual(sqliteContent(join(backup, 'mdm-console.sqlite')));
  }, 120_000);

  it('refuses to restore into a database that is not empty, leaving it and the data dir as they were', async () => {
    const backup = join(tempDir(), 'backup');
    expect((await runCli(office.dataDir, ['backup', backup, '--database-url', source.url])).code).toBe(0);
    const before = await postgresContent(source.url);
    const dataDir = tempDir();
    cpSync(office.dataDir, dataDir, { recursive: true });
    const files = tree(dataDir);
    expectRefusal(await runCli(dataDir, ['restore', backup, '--database-url', source.url]), 'is not empty', 'Nothing was copied');
    expect(await postgresContent(source.url)).toEqual(before);
    expect(tree(dataDir)).toEqual(files);
  }, 60_000);

  it('an SQLite backup restores into PostgreSQL', async () => {
    const backup = join(tempDir(), 'backup');
    const made = await runCli(office.dataDir, ['backup', backup]);
    expect(made.code, made.stderr).toBe(0);
    const target = await database('fromsqlite');
    const restored = await runCli(tempDir(), ['restore', backup, '--database-url', target.url]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(await postgresContent(target.url)).toEqual(sqliteContent(join(backup, 'mdm-console.sqlite')));
  }, 60_000);

  it('refuses to back up a database that is not MDM Console', async () => {
    const empty = await database('nothing');
    const backup = join(tempDir(), 'backup');
    expectRefusal(
      await runCli(office.dataDir, ['backup', backup, '--database-url', empty.url]),
      'There is no MDM Console database at',
    );
    expect(existsSync(join(backup, 'mdm-console.sqlite'))).toBe(false);
  });
});
