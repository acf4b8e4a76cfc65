// Restore writes nothing outside the data dir (issue 19, item 3): a crafted backup whose stored
// content is a link, or whose database names a path that leaves the store, is refused by
// `mdm-console restore` (the CLI spawned as a user runs it) with a message naming the entry,
// before anything in the data dir is replaced.
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openSqliteSql } from '../../../src-main/backend/db/sqlite-sql.ts';
import { createFileStore } from '../../../src-main/backend/files/store.ts';

vi.setConfig({ testTimeout: 120_000 });

const ROOT = join(import.meta.dirname, '../../..');
const CLI = join(ROOT, 'src-main/cli/main.ts');
const STACK_LINE = /^\s+at /m;
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mdm-restore-links-'));
  dirs.push(dir);
  return dir;
}

function cli(args: string[]) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, cwd: ROOT });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const SECRET = 'outside the data dir: not for devices\n';

/** A data dir made by the real store, holding one stored file of SECRET's size; returns its storage name. */
async function dataDirWithAFile(dir: string, content = 'x'.repeat(SECRET.length)): Promise<string> {
  const db = openSqliteSql(join(dir, 'mdm-console.sqlite'));
  try {
    const item = await (
      await createFileStore(db, dir)
    ).add('file', { name: 'report.txt' }, Readable.from([Buffer.from(content)]));
    return item.storageName;
  } finally {
    await db.close();
  }
}

/** Every path under `dir` with its content (files) or '<dir>', for "left untouched". */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    out[path] = entry.isFile() ? readFileSync(path, 'base64') : entry.isDirectory() ? '<dir>' : '<other>';
  }
  return out;
}

async function madeBackup(): Promise<{ backup: string; storageName: string }> {
  const source = tempDir();
  const storageName = await dataDirWithAFile(source);
  const backup = join(tempDir(), 'backup');
  const made = cli(['backup', backup, '--data-dir', source, '--json']);
  expect(made.code, made.stderr).toBe(0);
  return { backup, storageName };
}

/** A data dir in use (its own database and file), to be left as it is by a refused restore. */
async function liveDataDir(): Promise<{ dataDir: string; before: Record<string, string> }> {
  const dataDir = tempDir();
  await dataDirWithAFile(dataDir, 'the live data dir keeps this');
  return { dataDir, before: snapshot(dataDir) };
}

function expectRefused(result: ReturnType<typeof cli>, ...patterns: (string | RegExp)[]) {
  expect(result.code, result.stderr + result.stdout).toBe(1);
  for (const pattern of patterns) expect(result.stderr).toMatch(pattern);
  expect(result.stderr).toMatch('Nothing was restored');
  expect(result.stderr).not.toMatch(STACK_LINE);
}

describe('restore refuses what would leave the data dir', () => {
  it('a stored file that is a link to a file outside: refused, naming the entry; the data dir untouched', async () => {
    const { backup, storageName } = await madeBackup();
    const outside = join(tempDir(), 'secret.txt');
    writeFileSync(outside, SECRET);
    // The same size as the row says, so only its being a link gives it away.
    const stored = join(backup, 'files', 'file', storageName);
    unlinkSync(stored);
    symlinkSync(outside, stored);
    const { dataDir, before } = await liveDataDir();

    expectRefused(cli(['restore', backup, '--data-dir', dataDir]), `files/file/${storageName}`, 'symbolic link', outside);
    expect(snapshot(dataDir)).toEqual(before);
  });

  it('a stored folder that is a link, and a database that is a link: refused too', async () => {
    const { backup } = await madeBackup();
    const outsideDir = tempDir();
    writeFileSync(join(outsideDir, 'evil'), SECRET);
    symlinkSync(outsideDir, join(backup, 'files', 'extra'));
    const { dataDir, before } = await liveDataDir();
    expectRefused(cli(['restore', backup, '--data-dir', dataDir]), 'files/extra', 'symbolic link');
    expect(snapshot(dataDir)).toEqual(before);

    const second = await madeBackup();
    const database = join(second.backup, 'mdm-console.sqlite');
    const elsewhere = join(tempDir(), 'db.sqlite');
    writeFileSync(elsewhere, readFileSync(database));
    unlinkSync(database);
    symlinkSync(elsewhere, database);
    expectRefused(cli(['restore', second.backup, '--data-dir', dataDir]), 'mdm-console.sqlite', 'symbolic link');
    expect(snapshot(dataDir)).toEqual(before);
  });

  it('a database naming a ../ path as stored content: refused, naming it; the data dir untouched', async () => {
    const { backup } = await madeBackup();
    // backup/files/file/../../../secret.txt is a file beside the backup folder, of the right size.
    const escape = '../../../secret.txt';
    writeFileSync(join(backup, 'files', 'file', escape), SECRET);
    const db = new Database(join(backup, 'mdm-console.sqlite'));
    db.prepare('UPDATE files SET storage_name = ?').run(escape);
    db.close();
    const { dataDir, before } = await liveDataDir();

    expectRefused(cli(['restore', backup, '--data-dir', dataDir]), JSON.stringify(escape), 'leaves the store');
    expect(snapshot(dataDir)).toEqual(before);
    expect(readdirSync(dataDir).some((name) => name.startsWith('before-restore-'))).toBe(false);
  });

  it('a plain backup still restores, and keeps what it replaced', async () => {
    const { backup, storageName } = await madeBackup();
    const { dataDir } = await liveDataDir();
    const restored = cli(['restore', backup, '--data-dir', dataDir, '--json']);
    expect(restored.code, restored.stderr).toBe(0);
    expect(readFileSync(join(dataDir, 'files', 'file', storageName), 'utf8')).toBe('x'.repeat(SECRET.length));
    const previous = (JSON.parse(restored.stdout) as { previous: string }).previous;
    expect(existsSync(join(previous, 'mdm-console.sqlite'))).toBe(true);
  });
});
