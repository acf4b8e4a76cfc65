// The simulator's download and range checks against a tiny fake server started here, which
// speaks the spec's download headers. It tests the client only: no backend involved.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentApiError } from '../../../src-main/device/api-client.ts';
import {
  defaultRangeChecks,
  downloadAndVerify,
  expectedRange,
  fileNameOf,
  parseDownloadTarget,
} from '../../../src-main/device/download.ts';

const API_TOKEN = 'agent-api-token-0123456789';
const SESSION = 'session-abcdef';

type Bug =
  | 'none'
  | 'suffix-is-last-n'
  | 'ignores-range'
  | 'wrong-content-range'
  | 'corrupt-part'
  | 'no-416'
  | 'wrong-sha256'
  | 'no-metadata'
  | 'always-206';

interface Item {
  name: string;
  content: Buffer;
}

interface Fake {
  baseUrl: string;
  items: Map<string, Item>;
  bug: Bug;
  requests: { method: string; url: URL; headers: IncomingMessage['headers'] }[];
  server: Server;
}

function startFake(): Promise<Fake> {
  const fake = { items: new Map<string, Item>(), bug: 'none', requests: [] } as unknown as Fake;
  const server = createServer((req, res) => handle(fake, req, res));
  fake.server = server;
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
      resolve(fake);
    });
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function handle(fake: Fake, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://fake');
  fake.requests.push({ method: req.method ?? '', url, headers: req.headers });
  if (url.pathname === '/api/initSession') {
    if (url.searchParams.get('user_token') !== API_TOKEN)
      return sendJson(res, 401, ['ERROR_LOGIN', 'Incorrect username or password']);
    return sendJson(res, 200, { session_token: SESSION });
  }
  const match = /^\/api\/(PluginMdmFile|PluginMdmPackage)\/(\d+)$/.exec(url.pathname);
  if (!match) return sendJson(res, 404, ['ERROR_ITEM_NOT_FOUND', 'Item not found']);
  if (url.searchParams.get('session_token') !== SESSION)
    return sendJson(res, 401, ['ERROR_SESSION_TOKEN_INVALID', 'session_token seems invalid']);
  const item = fake.items.get(`${match[1]}/${match[2]}`);
  if (!item) return sendJson(res, 404, ['ERROR_ITEM_NOT_FOUND', 'Item not found']);
  const size = item.content.length;

  if (req.headers.accept !== 'application/octet-stream') {
    if (fake.bug === 'no-metadata') return sendJson(res, 406, ['ERROR_BAD_REQUEST', 'Bad Request']);
    const sha256 = fake.bug === 'wrong-sha256' ? '0'.repeat(64) : createHash('sha256').update(item.content).digest('hex');
    return sendJson(res, 200, {
      id: Number(match[2]),
      name: item.name,
      filesize: size,
      mime_type: 'application/octet-stream',
      sha256,
      date_mod: '2024-01-01 00:00:00',
    });
  }

  // The spec's forms: bytes=a-b, bytes=a-, bytes=-n meaning 0..n.
  let first = 0;
  let last = size - 1;
  const range = req.headers.range;
  if (range !== undefined && fake.bug !== 'ignores-range') {
    const parts = /^bytes=(\d*)-(\d*)/.exec(range);
    if (parts) {
      if (parts[1] === '') {
        if (fake.bug === 'suffix-is-last-n') first = Math.max(0, size - Number(parts[2]));
        else last = Math.min(Number(parts[2]), size - 1);
      } else {
        first = Number(parts[1]);
        if (parts[2] !== '') last = Math.min(Number(parts[2]), size - 1);
      }
    }
    if (first >= size && fake.bug !== 'no-416') {
      res.writeHead(416, { 'Content-Range': `bytes */${size}` });
      return void res.end();
    }
    if (first >= size) first = 0; // the 'no-416' bug: whole content instead
  }
  let body = item.content.subarray(first, last + 1);
  if (fake.bug === 'corrupt-part' && range !== undefined && body.length < size) {
    body = Buffer.from(body);
    body[body.length - 1] = (body[body.length - 1] ?? 0) ^ 0xff;
  }
  const whole = body.length === size && fake.bug !== 'always-206';
  res.writeHead(whole ? 200 : 206, {
    'Accept-Ranges': 'bytes',
    'Access-Control-Expose-Headers': 'content-type, content-range, accept-range',
    'Cache-Control': 'private, must-revalidate',
    'Content-Length': String(body.length),
    'Content-Range': fake.bug === 'wrong-content-range' ? `bytes 0-${size}/${size}` : `bytes ${first}-${last}/${size}`,
    'Content-Transfer-Encoding': 'binary',
    'Content-Type': 'application/octet-stream',
    'Content-disposition': `attachment; filename="${item.name.replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(item.name)}`,
    Expires: 'Mon, 26 Nov 1962 00:00:00 GMT',
    'Last-Modified': 'Mon, 01 Jan 2024 00:00:00 +0000',
  });
  res.end(body);
}

let fake: Fake;
const content = randomBytes(100_003);

beforeAll(async () => {
  fake = await startFake();
  fake.items.set('PluginMdmFile/7', { name: 'rapport été.pdf', content });
  fake.items.set('PluginMdmPackage/3', { name: 'app.apk', content: randomBytes(3 * 1024 * 1024 + 17) });
  fake.items.set('PluginMdmFile/8', { name: 'empty.txt', content: Buffer.alloc(0) });
  fake.items.set('PluginMdmFile/9', { name: 'one.bin', content: Buffer.from('x') });
});
afterAll(() => new Promise<void>((resolve) => fake.server.close(() => resolve())));
afterEach(() => {
  fake.bug = 'none';
  fake.requests = [];
});

const download = (target: string, extra: { ranges?: string[]; saveTo?: string } = {}) => {
  const lines: string[] = [];
  return downloadAndVerify({ backendUrl: fake.baseUrl, apiToken: API_TOKEN, target, ...extra }, (line) => lines.push(line)).then(
    (summary) => ({ summary, lines }),
  );
};

describe('range rules', () => {
  it('computes what each spec form selects', () => {
    expect(expectedRange('bytes=0-', 100)).toEqual({ first: 0, last: 99 });
    expect(expectedRange('bytes=10-19', 100)).toEqual({ first: 10, last: 19 });
    expect(expectedRange('bytes=-9', 100)).toEqual({ first: 0, last: 9 }); // 0..9, not the last 9
    expect(expectedRange('bytes=90-200', 100)).toEqual({ first: 90, last: 99 });
    expect(expectedRange('bytes=99-', 100)).toEqual({ first: 99, last: 99 });
    expect(expectedRange('bytes=100-', 100)).toBe('unsatisfiable');
    expect(expectedRange('bytes=0-', 0)).toBe('unsatisfiable');
    expect(expectedRange('bytes=5-9, 20-30', 100)).toEqual({ first: 5, last: 9 });
    expect(() => expectedRange('bytes=9-5', 100)).toThrow(/last before first/);
    expect(() => expectedRange('items=0-5', 100)).toThrow(/not a byte range/);
    expect(() => expectedRange('bytes=-', 100)).toThrow(/not a byte range/);
  });

  it('picks default ranges that tell bytes=-n apart from a suffix', () => {
    expect(defaultRangeChecks(100_003)).toEqual([
      'bytes=0-',
      'bytes=0-0',
      'bytes=33334-37429',
      'bytes=-1023',
      'bytes=100002-',
      'bytes=100003-',
    ]);
    expect(defaultRangeChecks(1)).toEqual(
      ['bytes=0-', 'bytes=0-0', 'bytes=0-', 'bytes=1-'].filter((v, i, a) => a.indexOf(v) === i),
    );
    expect(defaultRangeChecks(0)).toEqual([]);
  });

  it('parses download targets and file names', () => {
    expect(parseDownloadTarget('file:7')).toEqual({ kind: 'file', id: 7 });
    expect(parseDownloadTarget('package:12')).toEqual({ kind: 'package', id: 12 });
    expect(() => parseDownloadTarget('file:0')).toThrow(/file:ID or package:ID/);
    expect(() => parseDownloadTarget('apk:3')).toThrow(/file:ID or package:ID/);
    expect(fileNameOf('attachment; filename="a \\"b\\".txt"')).toBe('a "b".txt');
    expect(fileNameOf("attachment; filename=plain.txt; filename*=UTF-8''%C3%A9t%C3%A9.txt")).toBe('été.txt');
    expect(fileNameOf('attachment; filename=plain.txt')).toBe('plain.txt');
    expect(fileNameOf(null)).toBeUndefined();
  });
});

describe('downloadAndVerify against a conforming server', () => {
  it('downloads, hashes and verifies every range of a file', async () => {
    const { summary, lines } = await download('file:7');
    expect(summary).toMatchObject({
      target: 'file:7',
      size: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      fileName: 'rapport été.pdf',
      ok: true,
    });
    expect(summary.checks.map((check) => [check.name, check.status])).toEqual([
      ['whole', 'ok'],
      ['metadata', 'ok'],
      ...defaultRangeChecks(content.length).map((range) => [`range ${range}`, 'ok']),
    ]);
    expect(lines[0]).toBe('download file:7 … session ok (api_token)');
    expect(lines).toContain('  range bytes=-1023 … ok (206, bytes 0-1023/100003)');
    expect(lines).toContain('  range bytes=100003- … ok (416, bytes */100003)');
  });

  it('sends the wire details a real agent sends', async () => {
    await download('file:7');
    const [init, whole, metadata] = fake.requests;
    expect(init?.url.searchParams.get('user_token')).toBe(API_TOKEN);
    for (const request of fake.requests) expect(request.headers['content-type']).toBe('application/json');
    for (const request of fake.requests.slice(1)) expect(request.url.searchParams.get('session_token')).toBe(SESSION);
    expect(whole?.headers.range).toBeUndefined(); // the whole content in one request, as the reference agent
    expect(whole?.headers.accept).toBe('application/octet-stream');
    expect(metadata?.headers.accept).toBe('application/json');
  });

  it('streams a multi-MiB package and keeps it when asked', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'device-download-test-'));
    try {
      const saveTo = join(directory, 'sub', 'app.apk');
      const { summary } = await download('package:3', { saveTo });
      expect(summary.ok).toBe(true);
      expect(summary.savedTo).toBe(saveTo);
      expect((await readFile(saveTo)).equals(fake.items.get('PluginMdmPackage/3')?.content ?? Buffer.alloc(0))).toBe(true);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('handles empty and one-byte contents', async () => {
    const empty = await download('file:8');
    expect(empty.summary).toMatchObject({ size: 0, ok: true, sha256: createHash('sha256').digest('hex') });
    const one = await download('file:9');
    expect(one.summary).toMatchObject({ size: 1, ok: true });
  });

  it('checks custom ranges', async () => {
    const { summary } = await download('file:7', { ranges: ['bytes=5-5', 'bytes=99990-200000', 'bytes=-0'] });
    expect(summary.rangesChecked).toEqual(['bytes=5-5', 'bytes=99990-200000', 'bytes=-0']);
    expect(summary.ok).toBe(true);
  });

  it('refuses a malformed custom range before any request', async () => {
    await expect(download('file:7', { ranges: ['bytes=9-1'] })).rejects.toThrow(/last before first/);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('downloadAndVerify reports a faulty server', () => {
  const failures = async (bug: Bug): Promise<Record<string, string>> => {
    fake.bug = bug;
    const { summary } = await download('file:7');
    expect(summary.ok).toBe(false);
    return Object.fromEntries(
      summary.checks.filter((check) => check.status === 'failed').map((check) => [check.name, check.detail]),
    );
  };

  it('bytes=-n served as the last n bytes', async () => {
    const failed = await failures('suffix-is-last-n');
    expect(Object.keys(failed)).toEqual(['range bytes=-1023']);
    expect(failed['range bytes=-1023']).toContain('Content-Range bytes 98980-100002/100003, expected bytes 0-1023/100003');
  });

  it('Range ignored', async () => {
    const failed = await failures('ignores-range');
    expect(failed['range bytes=0-0']).toMatch(/status 200, expected 206.*body is longer than the expected 1 bytes/);
    expect(failed['range bytes=100003-']).toMatch(/status 200, expected 416/);
  });

  it('wrong Content-Range', async () => {
    const failed = await failures('wrong-content-range');
    expect(failed['whole']).toContain('Content-Range bytes 0-100003/100003, expected bytes 0-100002/100003');
  });

  it('wrong bytes in a part', async () => {
    const failed = await failures('corrupt-part');
    expect(failed['range bytes=-1023']).toContain('body differs from the whole download at byte 1023');
  });

  it('no 416 past the end', async () => {
    const failed = await failures('no-416');
    expect(Object.keys(failed)).toEqual(['range bytes=100003-']);
  });

  it('206 for the whole content', async () => {
    const failed = await failures('always-206');
    expect(failed['whole']).toContain('status 206, expected 200');
  });

  it('metadata sha256 that does not match', async () => {
    const failed = await failures('wrong-sha256');
    expect(Object.keys(failed)).toEqual(['metadata']);
    expect(failed['metadata']).toMatch(/^sha256 0+ but the download hashes to [0-9a-f]{64}$/);
  });

  it('no metadata is not a failure', async () => {
    fake.bug = 'no-metadata';
    const { summary } = await download('file:7');
    expect(summary.ok).toBe(true);
    expect(summary.checks[1]).toMatchObject({ name: 'metadata', status: 'skipped' });
  });
});

describe('download errors', () => {
  it('surfaces the server code and message', async () => {
    const error = await download('file:404').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentApiError);
    expect(error).toMatchObject({
      status: 404,
      code: 'ERROR_ITEM_NOT_FOUND',
      serverMessage: 'Item not found',
      endpoint: 'GET PluginMdmFile/404',
    });
  });

  it('a bad api_token fails at initSession', async () => {
    const error = await downloadAndVerify({ backendUrl: fake.baseUrl, apiToken: 'nope', target: 'file:7' }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ status: 401, code: 'ERROR_LOGIN', endpoint: 'GET initSession' });
  });

  it('an unreachable server is a NETWORK_ERROR', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await downloadAndVerify({
      backendUrl: `http://127.0.0.1:${port}/api`,
      apiToken: API_TOKEN,
      target: 'file:7',
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 0, code: 'NETWORK_ERROR' });
  });
});
