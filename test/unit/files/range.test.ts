import { describe, expect, it } from 'vitest';
import {
  contentDisposition,
  contentRange,
  downloadHeaders,
  glpiDate,
  httpDateNumericZone,
  resolveRange,
  rewriteSuffixRanges,
  wantsBytes,
} from '../../../src-main/backend/files/download.ts';
import type { StoredRecord } from '../../../src-main/backend/files/store.ts';

const SIZE = 100;

describe('rewriteSuffixRanges (spec: bytes=-N means 0..N)', () => {
  it('rewrites every suffix spec and leaves the others alone', () => {
    expect(rewriteSuffixRanges('-5')).toBe('0-5');
    expect(rewriteSuffixRanges(' - 7 ')).toBe('0-7');
    expect(rewriteSuffixRanges('-0')).toBe('0-0');
    expect(rewriteSuffixRanges('3-4')).toBe('3-4');
    expect(rewriteSuffixRanges('3-')).toBe('3-');
    expect(rewriteSuffixRanges('-5, 10-20,-2')).toBe('0-5,10-20,0-2');
  });

  it('drops blank list elements and keeps garbage for the parser to refuse', () => {
    expect(rewriteSuffixRanges('0-5,,')).toBe('0-5');
    expect(rewriteSuffixRanges(' , ')).toBe('');
    expect(rewriteSuffixRanges('-x')).toBe('-x');
    expect(rewriteSuffixRanges('--5')).toBe('--5');
  });
});

describe('resolveRange', () => {
  it('no Range header: the whole content, 200', () => {
    expect(resolveRange(SIZE, undefined)).toEqual({ status: 200, start: 0, end: 99 });
  });

  it('bytes=0- is the whole content, 200', () => {
    expect(resolveRange(SIZE, 'bytes=0-')).toEqual({ status: 200, start: 0, end: 99 });
  });

  it('bytes=a-b is inclusive, 206', () => {
    expect(resolveRange(SIZE, 'bytes=10-19')).toEqual({ status: 206, start: 10, end: 19 });
    expect(resolveRange(SIZE, 'bytes=0-0')).toEqual({ status: 206, start: 0, end: 0 });
    expect(resolveRange(SIZE, 'bytes=99-99')).toEqual({ status: 206, start: 99, end: 99 });
  });

  it('a range spanning everything is 200', () => {
    expect(resolveRange(SIZE, 'bytes=0-99')).toEqual({ status: 200, start: 0, end: 99 });
  });

  it('bytes=-N means bytes 0..N, NOT the last N', () => {
    expect(resolveRange(SIZE, 'bytes=-10')).toEqual({ status: 206, start: 0, end: 10 });
    expect(resolveRange(SIZE, 'bytes=-0')).toEqual({ status: 206, start: 0, end: 0 });
    expect(resolveRange(SIZE, 'bytes=-99')).toEqual({ status: 200, start: 0, end: 99 });
    expect(resolveRange(SIZE, 'bytes=-5000')).toEqual({ status: 200, start: 0, end: 99 });
  });

  it('bytes=a- runs from a to the end', () => {
    expect(resolveRange(SIZE, 'bytes=40-')).toEqual({ status: 206, start: 40, end: 99 });
    expect(resolveRange(SIZE, 'bytes=99-')).toEqual({ status: 206, start: 99, end: 99 });
  });

  it('clamps a last byte beyond the end', () => {
    expect(resolveRange(SIZE, 'bytes=50-1000')).toEqual({ status: 206, start: 50, end: 99 });
    expect(resolveRange(SIZE, 'bytes=0-1000')).toEqual({ status: 200, start: 0, end: 99 });
    expect(resolveRange(SIZE, 'bytes=5-99999999999999999999')).toEqual({ status: 206, start: 5, end: 99 });
  });

  it('several ranges: the first one, as sent, decides alone', () => {
    expect(resolveRange(SIZE, 'bytes=20-29,0-9')).toEqual({ status: 206, start: 20, end: 29 });
    expect(resolveRange(SIZE, 'bytes=0-9, 20-29')).toEqual({ status: 206, start: 0, end: 9 });
    expect(resolveRange(SIZE, 'bytes=-3,50-60')).toEqual({ status: 206, start: 0, end: 3 });
    expect(resolveRange(SIZE, 'bytes=40-,-3')).toEqual({ status: 206, start: 40, end: 99 });
    // overlapping ranges are not merged: the first is served as asked
    expect(resolveRange(SIZE, 'bytes=0-5,3-8')).toEqual({ status: 206, start: 0, end: 5 });
    expect(resolveRange(SIZE, 'bytes=0-99,3-8')).toEqual({ status: 200, start: 0, end: 99 });
    // an unsatisfiable first range is a 416 even when a later one could be served
    expect(resolveRange(SIZE, 'bytes=500-600,10-11')).toEqual({ status: 416 });
    // the later ones are not looked at, garbage included; blank elements are skipped
    expect(resolveRange(SIZE, 'bytes=2-3,garbage')).toEqual({ status: 206, start: 2, end: 3 });
    expect(resolveRange(SIZE, 'bytes= ,2-3')).toEqual({ status: 206, start: 2, end: 3 });
  });

  it('unsatisfiable byte ranges are 416', () => {
    expect(resolveRange(SIZE, 'bytes=100-')).toEqual({ status: 416 });
    expect(resolveRange(SIZE, 'bytes=100-200')).toEqual({ status: 416 });
    expect(resolveRange(SIZE, 'bytes=150-160,0-1')).toEqual({ status: 416 });
    expect(resolveRange(SIZE, 'bytes=30-20')).toEqual({ status: 416 });
  });

  it('unparseable Range headers and other units are ignored: whole content, 200', () => {
    for (const garbage of [
      'garbage',
      'bytes',
      'bytes=',
      'bytes=,',
      'bytes=abc',
      'bytes=a-b',
      'bytes=1-2-3',
      'bytes=-',
      'bytes=--5',
      'bytes=0x10-0x20',
      'bytes=1.5-3',
      'bytes=x,0-5',
      'items=0-5',
      '=0-5',
    ]) {
      expect(resolveRange(SIZE, garbage), garbage).toEqual({ status: 200, start: 0, end: 99 });
    }
  });

  it('accepts the unit in any case and surrounding blanks', () => {
    expect(resolveRange(SIZE, 'Bytes=1-2')).toEqual({ status: 206, start: 1, end: 2 });
    expect(resolveRange(SIZE, ' bytes = 1 - 2 ')).toEqual({ status: 206, start: 1, end: 2 });
  });

  it('an empty file: 200 without a Range or with one from 0, 416 for one starting further', () => {
    for (const header of [undefined, 'bytes=0-', 'bytes=0-0', 'bytes=0-100', 'bytes=-5', 'bytes=-0', 'garbage', 'bytes=x']) {
      expect(resolveRange(0, header), String(header)).toEqual({ status: 200, start: 0, end: -1 });
    }
    for (const header of ['bytes=1-', 'bytes=5-10', 'bytes=5-2']) {
      expect(resolveRange(0, header), header).toEqual({ status: 416 });
    }
  });

  it('a one-byte file', () => {
    expect(resolveRange(1, 'bytes=0-0')).toEqual({ status: 200, start: 0, end: 0 });
    expect(resolveRange(1, 'bytes=-0')).toEqual({ status: 200, start: 0, end: 0 });
    expect(resolveRange(1, 'bytes=1-')).toEqual({ status: 416 });
  });
});

describe('header values', () => {
  it('Content-Range', () => {
    expect(contentRange({ start: 0, end: 99 }, 100)).toBe('bytes 0-99/100');
    expect(contentRange({ start: 5, end: 9 }, 100)).toBe('bytes 5-9/100');
    expect(contentRange({ start: 0, end: -1 }, 0)).toBe('bytes */0');
  });

  it('Last-Modified uses a numeric zone offset', () => {
    expect(httpDateNumericZone(new Date('2026-11-21T15:34:00.000Z'))).toBe('Sat, 21 Nov 2026 15:34:00 +0000');
  });

  it('date_mod is GLPI style, UTC', () => {
    expect(glpiDate('2026-11-21T15:34:00.123Z')).toBe('2026-11-21 15:34:00');
  });

  it('Content-disposition quotes the name, escapes quotes and backslashes', () => {
    expect(contentDisposition('app.apk')).toBe('attachment; filename="app.apk"');
    expect(contentDisposition('my "best" app.apk')).toBe('attachment; filename="my \\"best\\" app.apk"');
    expect(contentDisposition('a\\b.txt')).toBe('attachment; filename="a\\\\b.txt"');
    expect(contentDisposition('semi;colon=x.txt')).toBe('attachment; filename="semi;colon=x.txt"');
  });

  it('Content-disposition adds filename* for non-ASCII names', () => {
    expect(contentDisposition('Über résumé.pdf')).toBe(
      'attachment; filename="_ber r_sum_.pdf"; filename*=UTF-8\'\'%C3%9Cber%20r%C3%A9sum%C3%A9.pdf',
    );
    expect(contentDisposition("l'app (1)*.apk")).toBe('attachment; filename="l\'app (1)*.apk"');
    expect(contentDisposition("日本's (1)*.apk")).toBe(
      "attachment; filename=\"__'s (1)*.apk\"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%27s%20%281%29%2A.apk",
    );
    expect(contentDisposition('😀.txt')).toBe('attachment; filename="_.txt"; filename*=UTF-8\'\'%F0%9F%98%80.txt');
  });

  it('a name cannot inject header content', () => {
    const value = contentDisposition('evil"\r\nSet-Cookie: x=1\r\n.txt');
    expect(value).not.toMatch(/[\r\n]/);
    expect(value).toMatch(/^attachment; filename="evil\\"__Set-Cookie: x=1__\.txt"; filename\*=UTF-8''/);
    expect(value.slice(value.indexOf('filename*='))).toMatch(/^filename\*=UTF-8''[A-Za-z0-9!#$&+\-.^_`|~%]+$/);
  });

  it('wantsBytes only for exactly application/octet-stream', () => {
    expect(wantsBytes('application/octet-stream')).toBe(true);
    expect(wantsBytes(' Application/Octet-Stream ')).toBe(true);
    expect(wantsBytes(undefined)).toBe(false);
    expect(wantsBytes('*/*')).toBe(false);
    expect(wantsBytes('application/json')).toBe(false);
    expect(wantsBytes('application/octet-stream, */*')).toBe(false);
    expect(wantsBytes('application/octet-stream;q=0.9')).toBe(false);
  });

  it('downloadHeaders: the spec table, names as the spec spells them', () => {
    const item: StoredRecord = {
      id: 7,
      kind: 'file',
      entityId: 1,
      name: 'a.bin',
      size: 100,
      mimeType: 'application/octet-stream',
      version: 1,
      packageInfo: { packageName: null, versionCode: null, versionName: null, label: null, icon: null },
      sha256: 'x',
      storageName: 'y',
      createdAt: '2026-11-21T15:34:00.000Z',
      updatedAt: '2026-11-21T15:34:00.000Z',
    };
    const now = new Date('2026-12-01T08:00:00.000Z');
    expect(downloadHeaders(item, { start: 10, end: 19 }, true, now)).toEqual([
      ['Accept-Ranges', 'bytes'],
      ['Access-Control-Expose-Headers', 'content-type, content-range, accept-range'],
      ['Cache-Control', 'private, must-revalidate'],
      ['Connection', 'keep-alive'],
      ['Content-Length', '10'],
      ['Content-Range', 'bytes 10-19/100'],
      ['Content-Transfer-Encoding', 'binary'],
      ['Content-Type', 'application/octet-stream'],
      ['Content-disposition', 'attachment; filename="a.bin"'],
      ['Date', 'Tue, 01 Dec 2026 08:00:00 GMT'],
      ['Expires', 'Mon, 26 Nov 1962 00:00:00 GMT'],
      ['Last-Modified', 'Sat, 21 Nov 2026 15:34:00 +0000'],
    ]);
    const empty = downloadHeaders({ ...item, size: 0 }, { start: 0, end: -1 }, false, now);
    expect(empty).toContainEqual(['Content-Length', '0']);
    expect(empty).toContainEqual(['Content-Range', 'bytes */0']);
    expect(empty).toContainEqual(['Connection', 'close']);
  });
});
