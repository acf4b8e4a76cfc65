// Stored files kept open between downloads (files/open-files.ts): real files in a temp dir, the
// process's own descriptors counted in /proc/self/fd.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NotARegularFile, OpenFiles } from '../../../src-main/backend/files/open-files.ts';

const dir = mkdtempSync(join(tmpdir(), 'open-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const openDescriptors = () => readdirSync('/proc/self/fd').length;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function file(name: string, content = name): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('OpenFiles', () => {
  it('downloads of one file share one descriptor, and it stays open for the next one', async () => {
    const files = new OpenFiles({ idleMs: 60_000 });
    const path = file('shared.bin', 'abcdef');
    const before = openDescriptors();
    const readers = await Promise.all(Array.from({ length: 20 }, () => files.open(path)));
    expect(openDescriptors()).toBe(before + 1);
    const buffer = Buffer.alloc(3);
    await readers[7]!.handle.read(buffer, 0, 3, 2);
    expect(buffer.toString()).toBe('cde');
    for (const reader of readers) reader.release();
    expect(files.size).toBe(1); // idle, still open
    const again = await files.open(path);
    expect(openDescriptors()).toBe(before + 1);
    again.release();
    await files.closeAll();
    expect(openDescriptors()).toBe(before);
  });

  it('an idle file is closed after idleMs; one in use never is', async () => {
    const files = new OpenFiles({ idleMs: 150 });
    const before = openDescriptors();
    const idle = await files.open(file('idle.bin'));
    const busy = await files.open(file('busy.bin'));
    idle.release();
    await sleep(600);
    expect(files.size).toBe(1);
    expect(openDescriptors()).toBe(before + 1);
    const buffer = Buffer.alloc(4);
    await busy.handle.read(buffer, 0, 4, 0);
    expect(buffer.toString()).toBe('busy');
    busy.release();
    await sleep(600);
    expect(files.size).toBe(0);
    expect(openDescriptors()).toBe(before);
  });

  it('at most maxIdle idle files, the least recently used closed first', async () => {
    const files = new OpenFiles({ maxIdle: 2, idleMs: 60_000 });
    for (const name of ['a.bin', 'b.bin', 'c.bin']) (await files.open(file(name))).release();
    expect(files.size).toBe(2);
    const before = openDescriptors();
    (await files.open(join(dir, 'a.bin'))).release(); // a was closed: opened again, b (oldest) closed
    expect(openDescriptors()).toBe(before);
    expect(files.size).toBe(2);
    await files.closeAll();
  });

  it('a link is not followed, a directory is not a file, a missing file is ENOENT; nothing stays open', async () => {
    const files = new OpenFiles();
    const before = openDescriptors();
    const link = join(dir, 'link.bin');
    symlinkSync(file('target.bin'), link);
    await expect(files.open(link)).rejects.toMatchObject({ code: 'ELOOP' });
    mkdirSync(join(dir, 'sub'));
    await expect(files.open(join(dir, 'sub'))).rejects.toBeInstanceOf(NotARegularFile);
    await expect(files.open(join(dir, 'missing.bin'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(files.size).toBe(0);
    expect(openDescriptors()).toBe(before);
  });
});
