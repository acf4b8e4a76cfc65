import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteSql, type SqliteSql } from '../../../src-main/backend/db/sqlite-sql.ts';
import {
  createFileStore,
  guessMimeType,
  normalizeFileName,
  normalizeMimeType,
  type FileStoreAction,
  type StoredKind,
} from '../../../src-main/backend/files/store.ts';
import { ApiError } from '../../../src-main/backend/errors.ts';

let dir: string;
let db: SqliteSql;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'files-store-'));
  db = openSqliteSql(join(dir, 'db.sqlite'));
});

afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
const tmpFiles = () => readdirSync(join(dir, 'files', 'tmp'));
const stored = (kind: StoredKind) => readdirSync(join(dir, 'files', kind));

async function expectApiError(promise: Promise<unknown> | (() => unknown), status: number, message?: RegExp) {
  let caught: unknown;
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ApiError);
  expect((caught as ApiError).status).toBe(status);
  if (message) expect((caught as ApiError).message).toMatch(message);
}

describe('normalizeFileName', () => {
  it('keeps plain names, strips directories of either kind, trims, NFC-normalizes', () => {
    expect(normalizeFileName('app.apk')).toBe('app.apk');
    expect(normalizeFileName('/tmp/x/app.apk')).toBe('app.apk');
    expect(normalizeFileName('C:\\Users\\me\\Downloads\\app.apk')).toBe('app.apk');
    expect(normalizeFileName('../../etc/passwd')).toBe('passwd');
    expect(normalizeFileName('  spaced name.txt  ')).toBe('spaced name.txt');
    expect(normalizeFileName('Cafe\u0301.txt')).toBe('Caf\u00e9.txt');
    expect(normalizeFileName('日本語 ファイル.pdf')).toBe('日本語 ファイル.pdf');
  });

  it('refuses empty, dot names, control and bidi characters, too long names', async () => {
    await expectApiError(() => normalizeFileName(''), 400, /empty/);
    await expectApiError(() => normalizeFileName('   '), 400, /empty/);
    await expectApiError(() => normalizeFileName('some/dir/'), 400, /empty/);
    await expectApiError(() => normalizeFileName('..'), 400, /not a valid/);
    await expectApiError(() => normalizeFileName('a/.'), 400, /not a valid/);
    await expectApiError(() => normalizeFileName('a\r\nb.txt'), 400, /control/);
    await expectApiError(() => normalizeFileName('a\u0000b'), 400, /control/);
    await expectApiError(() => normalizeFileName('invoice\u202Efdp.apk'), 400, /direction/);
    await expectApiError(() => normalizeFileName('lone\uD800.txt'), 400);
    await expectApiError(() => normalizeFileName('x'.repeat(256)), 400, /too long/);
    expect(normalizeFileName('x'.repeat(255))).toHaveLength(255);
    await expectApiError(() => normalizeFileName('é'.repeat(128)), 400, /too long/); // 256 bytes
  });
});

describe('mime types', () => {
  it('guesses common extensions, case-insensitively', () => {
    expect(guessMimeType('a.apk')).toBe('application/vnd.android.package-archive');
    expect(guessMimeType('A.APK')).toBe('application/vnd.android.package-archive');
    expect(guessMimeType('a.ipa')).toBe('application/x-itunes-ipa');
    expect(guessMimeType('a.pdf')).toBe('application/pdf');
    expect(guessMimeType('a.png')).toBe('image/png');
    expect(guessMimeType('a.json')).toBe('application/json');
    expect(guessMimeType('a.txt')).toBe('text/plain');
    expect(guessMimeType('a.zip')).toBe('application/zip');
    expect(guessMimeType('a.unknown')).toBe('application/octet-stream');
    expect(guessMimeType('noext')).toBe('application/octet-stream');
  });

  it('validates a given type', async () => {
    expect(normalizeMimeType('Application/PDF')).toBe('application/pdf');
    expect(normalizeMimeType('application/vnd.android.package-archive')).toBe('application/vnd.android.package-archive');
    await expectApiError(() => normalizeMimeType('pdf'), 400, /mime type/);
    await expectApiError(() => normalizeMimeType('text/plain; charset=utf-8'), 400);
    await expectApiError(() => normalizeMimeType('text/plain\r\nX: y'), 400);
  });
});

describe('createFileStore', () => {
  it('adds, lists, gets and removes, with sha256 and size computed while streaming', async () => {
    const events: Array<[FileStoreAction, StoredKind, number]> = [];
    const store = await createFileStore(db, dir, (action, kind, item) => events.push([action, kind, item.id]));
    const content = Buffer.from('hello, device');

    const item = await store.add('file', { name: 'dir/hello.txt' }, Readable.from([content]));
    expect(item).toMatchObject({
      kind: 'file',
      entityId: 1,
      name: 'hello.txt',
      size: content.length,
      mimeType: 'text/plain',
      sha256: sha(content),
    });
    expect(item.id).toBeTypeOf('number');
    expect(item.storageName).toMatch(/^[0-9a-f]{32}$/);
    expect(readFileSync(store.pathOf(item))).toEqual(content);
    expect(store.pathOf(item)).toBe(join(dir, 'files', 'file', item.storageName));
    expect(tmpFiles()).toEqual([]);

    const pkg = await store.add('package', { name: 'app.apk', mimeType: 'Application/X-Custom' }, Readable.from([]));
    expect(pkg).toMatchObject({ kind: 'package', size: 0, mimeType: 'application/x-custom', sha256: sha('') });
    expect(stored('package')).toEqual([pkg.storageName]);

    expect((await store.list('file')).map((i) => i.id)).toEqual([item.id]);
    expect((await store.list('package')).map((i) => i.id)).toEqual([pkg.id]);
    expect(await store.list('file', 1)).toHaveLength(1);
    expect(await store.list('file', 2)).toHaveLength(0);
    expect(await store.get('file', item.id)).toEqual(item);
    expect(await store.get('package', item.id === pkg.id ? 999 : item.id)).toBeUndefined();

    expect(await store.remove('file', item.id)).toEqual(item);
    expect(existsSync(store.pathOf(item))).toBe(false);
    expect(await store.get('file', item.id)).toBeUndefined();
    expect(await store.remove('file', item.id)).toBeUndefined();

    expect(events).toEqual([
      ['added', 'file', item.id],
      ['added', 'package', pkg.id],
      ['removed', 'file', item.id],
    ]);
  });

  it('streams a multi-chunk source and never holds the whole of it', async () => {
    const store = await createFileStore(db, dir);
    const chunk = Buffer.alloc(64 * 1024, 7);
    const hash = createHash('sha256');
    function* chunks() {
      for (let i = 0; i < 64; i++) {
        hash.update(chunk);
        yield chunk;
      }
    }
    const item = await store.add('package', { name: 'big.bin' }, Readable.from(chunks()));
    expect(item.size).toBe(64 * chunk.length);
    expect(item.sha256).toBe(hash.digest('hex'));
  });

  it('accepts a file read stream as the source (CLI use)', async () => {
    const store = await createFileStore(db, dir);
    const source = join(dir, 'local.pdf');
    writeFileSync(source, 'pdf bytes');
    const item = await store.add('file', { name: source }, createReadStream(source));
    expect(item).toMatchObject({ name: 'local.pdf', mimeType: 'application/pdf', size: 9 });
  });

  it('refuses bad names and unknown entities before reading the source', async () => {
    const store = await createFileStore(db, dir);
    let read = false;
    const source = () =>
      new Readable({
        read() {
          read = true;
          this.push(null);
        },
      });
    await expectApiError(store.add('file', { name: '' }, source()), 400, /empty/);
    await expectApiError(store.add('file', { name: 'a.txt', mimeType: 'nope' }, source()), 400, /mime type/);
    await expectApiError(store.add('file', { name: 'a.txt', entityId: 42 }, source()), 400, /entity 42/);
    expect(read).toBe(false);
    expect(await store.list('file')).toEqual([]);
    expect(tmpFiles()).toEqual([]);
  });

  it('a source that fails midway leaves no row, no temp file and no content', async () => {
    const events: string[] = [];
    const store = await createFileStore(db, dir, (action) => events.push(action));
    let sent = 0;
    const source = new Readable({
      read() {
        if (sent++ < 3) this.push(Buffer.alloc(1024, 1));
        else this.destroy(new Error('connection reset'));
      },
    });
    await expectApiError(store.add('file', { name: 'broken.bin' }, source), 400, /interrupted/);
    expect(await store.list('file')).toEqual([]);
    expect(tmpFiles()).toEqual([]);
    expect(stored('file')).toEqual([]);
    expect(events).toEqual([]);
  });

  it('an upload over the limit is a 413 and leaves nothing', async () => {
    const store = await createFileStore(db, dir, undefined, { maxSize: 10 });
    expect(store.maxSize).toBe(10);
    await expectApiError(store.add('file', { name: 'a.bin' }, Readable.from([Buffer.alloc(6), Buffer.alloc(6)])), 413);
    expect(await store.list('file')).toEqual([]);
    expect(tmpFiles()).toEqual([]);
    const exact = await store.add('file', { name: 'b.bin' }, Readable.from([Buffer.alloc(10)]));
    expect(exact.size).toBe(10);
  });

  it("a failing listener (the change's record) undoes the change: no row, no file, its error is the operation's", async () => {
    const store = await createFileStore(db, dir, () => {
      throw new Error('cannot record');
    });
    await expect(store.add('file', { name: 'a.txt' }, Readable.from(['x']))).rejects.toThrow('cannot record');
    expect(await store.list('file')).toEqual([]);
    expect(stored('file')).toEqual([]);
    expect(tmpFiles()).toEqual([]);
    const quiet = await createFileStore(db, dir);
    const kept = await quiet.add('file', { name: 'b.txt' }, Readable.from(['y']));
    await expect(store.remove('file', kept.id)).rejects.toThrow('cannot record');
    expect(await quiet.get('file', kept.id)).toEqual(kept);
    expect(existsSync(quiet.pathOf(kept))).toBe(true);
  });

  it('a read that started before remove() finishes with the original content', async () => {
    const store = await createFileStore(db, dir);
    const content = Buffer.alloc(256 * 1024, 3);
    const item = await store.add('file', { name: 'a.bin' }, Readable.from([content]));
    const reader = createReadStream(store.pathOf(item), { highWaterMark: 1024 });
    await new Promise((resolve) => reader.once('open', resolve));
    await store.remove('file', item.id);
    const chunks: Buffer[] = [];
    for await (const chunk of reader) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks)).toEqual(content);
  });

  it('sweeps stale temp files and orphaned content at start, keeps fresh and known ones', async () => {
    const first = await createFileStore(db, dir);
    const kept = await first.add('file', { name: 'kept.txt' }, Readable.from(['keep']));
    const old = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000);
    const tmp = join(dir, 'files', 'tmp');
    mkdirSync(tmp, { recursive: true });
    writeFileSync(join(tmp, 'stale.part'), 'x');
    utimesSync(join(tmp, 'stale.part'), old, old);
    writeFileSync(join(tmp, 'fresh.part'), 'x');
    writeFileSync(join(dir, 'files', 'file', 'orphan'), 'x');
    utimesSync(join(dir, 'files', 'file', 'orphan'), old, old);
    utimesSync(first.pathOf(kept), old, old);

    await createFileStore(db, dir);
    expect(tmpFiles()).toEqual(['fresh.part']);
    expect(stored('file')).toEqual([kept.storageName]);
  });
});
