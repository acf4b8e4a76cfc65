// Files and packages over real sockets: uploads through adminFileRoutes, downloads through the
// agent app (buildAgentApp, with its session hook), a real SQLite file and a real data dir. Sessions
// are real too: 'good' is an agent account's session in entity 1, 'other' one in entity 2.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAgentApp as buildAgentApi } from '../../../src-main/backend/agent-api/app.ts';
import { nowIso } from '../../../src-main/backend/db/database.ts';
import { openSqliteSql, type SqliteSql } from '../../../src-main/backend/db/sqlite-sql.ts';
import { UnitOfWork } from '../../../src-main/backend/db/unit-of-work.ts';
import { adminFileRoutes } from '../../../src-main/backend/files/routes.ts';
import { actsAs } from '../../../src-main/backend/http/route-table.ts';
import { DownloadLimits } from '../../../src-main/backend/files/download-limits.ts';
import { createFileStore, type FileStore } from '../../../src-main/backend/files/store.ts';
import { ApiError } from '../../../src-main/backend/errors.ts';
import { RateLimitRepository } from '../../../src-main/backend/sessions/rate-limit-repository.ts';
import { SqliteSessionRepository } from '../../../src-main/backend/sessions/session-repository.ts';
import { SessionService } from '../../../src-main/backend/sessions/sessions.ts';
import { UserRepository } from '../../../src-main/backend/sessions/user-repository.ts';
import type { StoredItem as AdminItem } from '../../../src-shared/contract/index.ts';

interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

const httpAgent = new Agent({ keepAlive: true });

function send(
  url: string,
  options: { method?: string; headers?: OutgoingHttpHeaders; body?: Buffer | Readable } = {},
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers, agent: httpAgent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    if (options.body instanceof Readable) pipeline(options.body, req).catch(reject);
    else req.end(options.body);
  });
}

const json = (response: Response): unknown => JSON.parse(response.body.toString('utf8'));
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** The raw header lines, names exactly as sent. */
function rawHeaderMap(response: Response): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i < response.rawHeaders.length; i += 2) map.set(response.rawHeaders[i] ?? '', response.rawHeaders[i + 1] ?? '');
  return map;
}

let dir: string;
let db: SqliteSql;
let store: FileStore;
let agentApp: FastifyInstance;
let adminApp: FastifyInstance;
let agentUrl: string;
let adminUrl: string;
const changes: string[] = [];
let sessions: SessionService;
/** Session tokens by name: 'bad' is no session at all. */
const tokens: Record<string, string> = { bad: 'bad' };

async function buildAgentApp(validatorCompiler?: typeof TypeBoxValidatorCompiler): Promise<FastifyInstance> {
  const app = await buildAgentApi({ sessions, downloads: { store }, ...(validatorCompiler && { validatorCompiler }) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

const urlOf = (app: FastifyInstance) => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'files-api-'));
  db = openSqliteSql(join(dir, 'mdm.sqlite'));
  // No capability creates entities (the spec serves the root one): a second one for the isolation checks.
  db.db.prepare('INSERT INTO entities (id, name, parent_id, created_at) VALUES (2, ?, 1, ?)').run('Branch', nowIso());
  store = await createFileStore(db, dir, (action, kind, item) => changes.push(`${action} ${kind} ${item.name}`));
  const users = new UserRepository(db);
  sessions = new SessionService({
    store: new SqliteSessionRepository(db),
    users,
    work: new UnitOfWork(db),
    rates: new RateLimitRepository(db),
  });
  for (const [name, entityId] of [
    ['good', 1],
    ['other', 2],
  ] as const) {
    tokens[name] = (await sessions.open((await users.createAgentAccount(entityId, name)).user_token)).session_token;
  }

  agentApp = await buildAgentApp();
  agentUrl = `${urlOf(agentApp)}/api`;

  adminApp = Fastify({ logger: false });
  adminApp.setErrorHandler((error: FastifyError | ApiError, _request, reply) => {
    if (error instanceof ApiError) return reply.code(error.status).send({ error: error.code, message: error.message });
    if ((error as FastifyError).validation) return reply.code(400).send({ error: 'ERROR_BAD_REQUEST', message: error.message });
    return reply.code((error as FastifyError).statusCode ?? 500).send({ error: 'ERROR', message: error.message });
  });
  // The admin listener's authentication, in short: every request here acts as the owner.
  adminApp.addHook('onRequest', (request, _reply, done) => {
    actsAs(request, 'owner');
    done();
  });
  await adminApp.register(adminFileRoutes, { prefix: '/api', store });
  await adminApp.listen({ port: 0, host: '127.0.0.1' });
  adminUrl = `${urlOf(adminApp)}/api`;
});

afterAll(async () => {
  httpAgent.destroy();
  await Promise.allSettled([agentApp?.close(), adminApp?.close()]);
  await db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** An APK-named upload that is no APK is kept only when the admin says so, and describes it. */
const KEEP = { if_unreadable: 'keep', package_name: 'org.example.random', version_code: '1' };

async function upload(
  kind: 'files' | 'packages',
  name: string,
  body: Buffer | Readable,
  query: Record<string, string> = {},
): Promise<AdminItem> {
  const params = new URLSearchParams({ name, ...query });
  const response = await send(`${adminUrl}/${kind}?${params}`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body,
  });
  expect(response.status, response.body.toString()).toBe(201);
  return json(response) as AdminItem;
}

/** A download as the agent does it: session token in the query, Accept octet-stream, Content-Type json. */
function download(path: string, headers: OutgoingHttpHeaders = {}, who = 'good'): Promise<Response> {
  return send(`${agentUrl}/${path}?session_token=${tokens[who]}`, {
    headers: { accept: 'application/octet-stream', 'content-type': 'application/json', ...headers },
  });
}

/** Every header of the spec's table, spelled as the spec spells it. */
function expectSpecHeaders(response: Response, item: AdminItem, contentRange: string, length: number) {
  const raw = rawHeaderMap(response);
  expect(raw.get('Accept-Ranges')).toBe('bytes');
  expect(raw.get('Access-Control-Expose-Headers')).toBe('content-type, content-range, accept-range');
  expect(raw.get('Cache-Control')).toBe('private, must-revalidate');
  expect(raw.get('Connection')).toBe('keep-alive');
  expect(raw.get('Content-Length')).toBe(String(length));
  expect(raw.get('Content-Range')).toBe(contentRange);
  expect(raw.get('Content-Transfer-Encoding')).toBe('binary');
  expect(raw.get('Content-Type')).toBe('application/octet-stream');
  expect(raw.has('Content-disposition')).toBe(true);
  expect(raw.has('Content-Disposition')).toBe(false);
  expect(raw.get('Date')).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
  expect(Math.abs(Date.parse(raw.get('Date') ?? '') - Date.now())).toBeLessThan(60_000);
  expect(raw.get('Expires')).toBe('Mon, 26 Nov 1962 00:00:00 GMT');
  const lastModified = raw.get('Last-Modified') ?? '';
  expect(lastModified).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} \+0000$/);
  expect(Date.parse(lastModified)).toBe(Math.floor(Date.parse(item.updated_at) / 1000) * 1000);
  expect(response.headers['transfer-encoding']).toBeUndefined();
  // each header once
  const names = response.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
  expect(new Set(names).size).toBe(names.length);
  // the spec's headers and no other
  expect([...raw.keys()].sort()).toEqual(SPEC_HEADERS);
}

const SPEC_HEADERS = [
  'Accept-Ranges',
  'Access-Control-Expose-Headers',
  'Cache-Control',
  'Connection',
  'Content-Length',
  'Content-Range',
  'Content-Transfer-Encoding',
  'Content-Type',
  'Content-disposition',
  'Date',
  'Expires',
  'Last-Modified',
].sort();

describe('upload and download over HTTP', () => {
  const content = randomBytes(1000);
  let item: AdminItem;

  beforeAll(async () => {
    item = await upload('files', 'report.bin', content);
  });

  it('upload answers 201 with the stored item, sha256 and size of what was sent', () => {
    expect(item).toEqual({
      id: expect.any(Number),
      entity_id: 1,
      name: 'report.bin',
      size: 1000,
      mime_type: 'application/octet-stream',
      sha256: sha256(content),
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      version: 1,
    });
    expect(Number.isInteger(item.id)).toBe(true);
    expect(changes).toContain('added file report.bin');
  });

  it('the admin lists show it', async () => {
    const files = await send(`${adminUrl}/files`);
    expect(files.status).toBe(200);
    expect(json(files)).toContainEqual(item);
    const packages = await send(`${adminUrl}/packages`);
    expect(json(packages)).not.toContainEqual(expect.objectContaining({ id: item.id, name: 'report.bin' }));
  });

  it('whole download: 200 with every header of the spec and the exact bytes', async () => {
    const response = await download(`PluginMdmFile/${item.id}`);
    expect(response.status).toBe(200);
    expectSpecHeaders(response, item, 'bytes 0-999/1000', 1000);
    expect(rawHeaderMap(response).get('Content-disposition')).toBe('attachment; filename="report.bin"');
    expect(response.body.equals(content)).toBe(true);
    expect(sha256(response.body)).toBe(item.sha256);
  });

  it('bytes=0- and a range covering everything are the whole content, 200', async () => {
    for (const range of ['bytes=0-', 'bytes=0-999', 'bytes=0-5000', 'bytes=-999']) {
      const response = await download(`PluginMdmFile/${item.id}`, { range });
      expect(response.status, range).toBe(200);
      expectSpecHeaders(response, item, 'bytes 0-999/1000', 1000);
      expect(response.body.equals(content), range).toBe(true);
    }
  });

  it('bytes=a-b: 206 with the spec headers and bytes a..b inclusive', async () => {
    const response = await download(`PluginMdmFile/${item.id}`, { range: 'bytes=10-19' });
    expect(response.status).toBe(206);
    expectSpecHeaders(response, item, 'bytes 10-19/1000', 10);
    expect(response.body.equals(content.subarray(10, 20))).toBe(true);
  });

  it('bytes=-N: bytes 0..N, not the last N', async () => {
    const response = await download(`PluginMdmFile/${item.id}`, { range: 'bytes=-10' });
    expect(response.status).toBe(206);
    expectSpecHeaders(response, item, 'bytes 0-10/1000', 11);
    expect(response.body.equals(content.subarray(0, 11))).toBe(true);
  });

  it('bytes=a-: from a to the end; a last byte past the end is clamped', async () => {
    const tail = await download(`PluginMdmFile/${item.id}`, { range: 'bytes=990-' });
    expect(tail.status).toBe(206);
    expectSpecHeaders(tail, item, 'bytes 990-999/1000', 10);
    expect(tail.body.equals(content.subarray(990))).toBe(true);

    const clamped = await download(`PluginMdmFile/${item.id}`, { range: 'bytes=995-123456' });
    expect(clamped.status).toBe(206);
    expectSpecHeaders(clamped, item, 'bytes 995-999/1000', 5);
    expect(clamped.body.equals(content.subarray(995))).toBe(true);
  });

  it('several ranges: the first is served', async () => {
    const response = await download(`PluginMdmFile/${item.id}`, { range: 'bytes=100-109, 0-9' });
    expect(response.status).toBe(206);
    expectSpecHeaders(response, item, 'bytes 100-109/1000', 10);
    expect(response.body.equals(content.subarray(100, 110))).toBe(true);
  });

  it('unsatisfiable: 416 with Content-Range bytes */size', async () => {
    for (const range of ['bytes=1000-', 'bytes=2000-3000', 'bytes=50-40']) {
      const response = await download(`PluginMdmFile/${item.id}`, { range });
      expect(response.status, range).toBe(416);
      expect(response.headers['content-range']).toBe('bytes */1000');
      expect(json(response)).toEqual(['ERROR_RANGE_NOT_SATISFIABLE', expect.any(String)]);
    }
  });

  it('an unparseable Range is ignored: whole content, 200', async () => {
    const response = await download(`PluginMdmFile/${item.id}`, { range: 'bytes=lots' });
    expect(response.status).toBe(200);
    expectSpecHeaders(response, item, 'bytes 0-999/1000', 1000);
    expect(response.body.equals(content)).toBe(true);
  });

  it('Connection: close from the client is honoured', async () => {
    const response = await download(`PluginMdmFile/${item.id}`, { connection: 'close' });
    expect(response.status).toBe(200);
    expect(response.headers.connection).toBe('close');
    expect(response.body.equals(content)).toBe(true);
  });

  it('without Accept: application/octet-stream, JSON metadata', async () => {
    const expected = {
      id: item.id,
      name: 'report.bin',
      filesize: 1000,
      mime_type: 'application/octet-stream',
      sha256: sha256(content),
      date_mod: item.updated_at.slice(0, 19).replace('T', ' '),
      version: 1,
    };
    for (const accept of [undefined, '*/*', 'application/json', 'application/octet-stream, */*']) {
      const headers: OutgoingHttpHeaders = { 'content-type': 'application/json' };
      if (accept !== undefined) headers.accept = accept;
      const response = await send(`${agentUrl}/PluginMdmFile/${item.id}?session_token=${tokens.good}`, { headers });
      expect(response.status, String(accept)).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(json(response)).toEqual(expected);
    }
  });

  it('unknown ids, the other kind and another entity are 404 ERROR_ITEM_NOT_FOUND', async () => {
    for (const path of ['PluginMdmFile/999999', `PluginMdmPackage/${item.id + 1000}`]) {
      const response = await download(path);
      expect(response.status, path).toBe(404);
      expect(json(response)).toEqual(['ERROR_ITEM_NOT_FOUND', 'Item not found']);
    }
    const otherEntity = await download(`PluginMdmFile/${item.id}`, {}, 'other');
    expect(otherEntity.status).toBe(404);
    expect(json(otherEntity)).toEqual(['ERROR_ITEM_NOT_FOUND', 'Item not found']);
  });

  it('a bad id is a 400; a missing or invalid session a 401, before anything else', async () => {
    for (const id of ['abc', '1.5', '0', '-3', '99999999999999999999']) {
      const response = await download(`PluginMdmFile/${id}`);
      expect(response.status, id).toBe(400);
      expect(json(response)).toEqual(['ERROR_BAD_REQUEST', 'Bad Request']);
    }
    const missing = await send(`${agentUrl}/PluginMdmFile/${item.id}`, { headers: { accept: 'application/octet-stream' } });
    expect(missing.status).toBe(401);
    expect(json(missing)).toEqual(['ERROR_SESSION_TOKEN_MISSING', expect.any(String)]);
    const invalid = await download('PluginMdmFile/abc', {}, 'bad');
    expect(invalid.status).toBe(401);
    expect(json(invalid)).toEqual(['ERROR_SESSION_TOKEN_INVALID', expect.any(String)]);
  });
});

describe('names, kinds and entities', () => {
  it('a non-ASCII name: quoted ASCII fallback plus filename*', async () => {
    const name = 'Über "rapport" été 日本.pdf';
    const content = Buffer.from('%PDF-1.4 not really');
    const item = await upload('files', name, content);
    expect(item.name).toBe(name);
    expect(item.mime_type).toBe('application/pdf');

    const response = await download(`PluginMdmFile/${item.id}`);
    expect(response.status).toBe(200);
    expectSpecHeaders(response, item, `bytes 0-${content.length - 1}/${content.length}`, content.length);
    const disposition = rawHeaderMap(response).get('Content-disposition') ?? '';
    expect(disposition).toBe(
      'attachment; filename="_ber \\"rapport\\" _t_ __.pdf"; filename*=UTF-8\'\'' +
        '%C3%9Cber%20%22rapport%22%20%C3%A9t%C3%A9%20%E6%97%A5%E6%9C%AC.pdf',
    );
    const encoded = /filename\*=UTF-8''(.+)$/.exec(disposition)?.[1] ?? '';
    expect(decodeURIComponent(encoded)).toBe(name);
    expect(response.body.equals(content)).toBe(true);
  });

  it('a path given as name keeps its last segment; bad names are a clear 400', async () => {
    const item = await upload('files', 'C:\\Users\\me\\notes.txt', Buffer.from('hi'));
    expect(item).toMatchObject({ name: 'notes.txt', mime_type: 'text/plain' });

    for (const [name, message] of [
      ['..', /not a valid file name/],
      ['dir/', /empty/],
      ['a\u202Etxt.apk', /text-direction/],
      ['x'.repeat(300), /too long/],
    ] as const) {
      const response = await send(`${adminUrl}/files?${new URLSearchParams({ name })}`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: Buffer.from('data'),
      });
      expect(response.status, name).toBe(400);
      expect(json(response)).toEqual({ error: 'ERROR_BAD_REQUEST', message: expect.stringMatching(message) });
    }
  });

  it('query validation and content types', async () => {
    const noName = await send(`${adminUrl}/files`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: Buffer.from('x'),
    });
    expect(noName.status).toBe(400);
    const badMime = await send(`${adminUrl}/files?name=a.txt&mime_type=nonsense`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: Buffer.from('x'),
    });
    expect(badMime.status).toBe(400);
    const asJson = await send(`${adminUrl}/files?name=a.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from('{"a":1}'),
    });
    expect(asJson.status).toBe(415);
    expect(json(asJson)).toMatchObject({ error: 'ERROR_UNSUPPORTED_MEDIA_TYPE' });
    const unknownEntity = await send(`${adminUrl}/files?name=a.txt&entity_id=77`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: Buffer.from('x'),
    });
    expect(unknownEntity.status).toBe(400);
    expect(json(unknownEntity)).toEqual({ error: 'ERROR_BAD_REQUEST', message: 'entity 77 does not exist' });
  });

  it('packages: guessed mime type, given mime type, downloaded from PluginMdmPackage', async () => {
    // random bytes are no APK: kept as the package the admin describes
    const apk = randomBytes(4096);
    const item = await upload('packages', 'app-release.apk', apk, KEEP);
    expect(item.mime_type).toBe('application/vnd.android.package-archive');
    const custom = await upload('packages', 'thing.bin', Buffer.from('x'), { mime_type: 'application/x-thing' });
    expect(custom.mime_type).toBe('application/x-thing');

    const response = await download(`PluginMdmPackage/${item.id}`, { range: 'bytes=4000-' });
    expect(response.status).toBe(206);
    expectSpecHeaders(response, item, 'bytes 4000-4095/4096', 96);
    expect(response.body.equals(apk.subarray(4000))).toBe(true);

    const listed = json(await send(`${adminUrl}/packages`)) as AdminItem[];
    expect(listed.map((p) => p.name)).toEqual(expect.arrayContaining(['app-release.apk', 'thing.bin']));
  });

  it("an item of another entity is downloaded by that entity's sessions only", async () => {
    const item = await upload('files', 'branch.txt', Buffer.from('branch only'), { entity_id: '2' });
    expect(item.entity_id).toBe(2);
    expect((await download(`PluginMdmFile/${item.id}`, {}, 'other')).body.toString()).toBe('branch only');
    expect((await download(`PluginMdmFile/${item.id}`, {}, 'good')).status).toBe(404);
  });

  it('an empty file: 200, Content-Length 0, Content-Range bytes */0', async () => {
    const item = await upload('files', 'empty.txt', Buffer.alloc(0));
    expect(item).toMatchObject({ size: 0, sha256: sha256(Buffer.alloc(0)) });
    for (const range of [undefined, 'bytes=0-', 'bytes=-5']) {
      const response = await download(`PluginMdmFile/${item.id}`, range === undefined ? {} : { range });
      expect(response.status, String(range)).toBe(200);
      expectSpecHeaders(response, item, 'bytes */0', 0);
      expect(response.body.length).toBe(0);
    }
    const beyond = await download(`PluginMdmFile/${item.id}`, { range: 'bytes=1-' });
    expect(beyond.status).toBe(416);
    expect(beyond.headers['content-range']).toBe('bytes */0');
  });

  it('works with the TypeBox validator compiler too', async () => {
    const app = await buildAgentApp(TypeBoxValidatorCompiler);
    try {
      const item = await upload('files', 'tb.txt', Buffer.from('typebox'));
      const ok = await send(`${urlOf(app)}/api/PluginMdmFile/${item.id}?session_token=${tokens.good}`, {
        headers: { accept: 'application/octet-stream' },
      });
      expect(ok.status).toBe(200);
      expect(ok.body.toString()).toBe('typebox');
      const bad = await send(`${urlOf(app)}/api/PluginMdmFile/abc?session_token=${tokens.good}`);
      expect(bad.status).toBe(400);
    } finally {
      await app.close();
    }
  });
});

describe('big uploads, deletes and failures', () => {
  const CHUNK = 64 * 1024;
  const CHUNKS = 320; // 20 MiB
  let big: AdminItem;
  let bigSha: string;

  beforeAll(async () => {
    const hash = createHash('sha256');
    function* chunks() {
      for (let i = 0; i < CHUNKS; i++) {
        const chunk = randomBytes(CHUNK);
        hash.update(chunk);
        yield chunk;
      }
    }
    // chunked transfer encoding, no Content-Length: streamed end to end
    big = await upload('packages', 'big.apk', Readable.from(chunks()), KEEP);
    bigSha = hash.digest('hex');
  });

  it('a ~20 MiB upload is stored with the right size and sha256', async () => {
    expect(big.size).toBe(CHUNK * CHUNKS);
    expect(big.sha256).toBe(bigSha);
  });

  it('and downloads whole and in parts, byte for byte', async () => {
    const whole = await download(`PluginMdmPackage/${big.id}`);
    expect(whole.status).toBe(200);
    expectSpecHeaders(whole, big, `bytes 0-${big.size - 1}/${big.size}`, big.size);
    expect(sha256(whole.body)).toBe(bigSha);

    const first = 7 * 1024 * 1024 + 3;
    const last = first + 1024 * 1024;
    const part = await download(`PluginMdmPackage/${big.id}`, { range: `bytes=${first}-${last}` });
    expect(part.status).toBe(206);
    expectSpecHeaders(part, big, `bytes ${first}-${last}/${big.size}`, last - first + 1);
    expect(part.body.equals(whole.body.subarray(first, last + 1))).toBe(true);
  });

  it('many at once, slow readers among them: every byte right (chunk buffers are reused once the socket has sent them)', async () => {
    const whole = await download(`PluginMdmPackage/${big.id}`);
    /** A whole download read in small bites with pauses: its socket drains slowly. */
    const slowly = () =>
      new Promise<Buffer>((resolve, reject) => {
        const req = httpRequest(`${agentUrl}/PluginMdmPackage/${big.id}?session_token=${tokens.good}`, {
          headers: { accept: 'application/octet-stream' },
          agent: false,
        });
        req.on('error', reject);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          let bites = 0;
          res.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            if (++bites % 16 === 0) {
              res.pause();
              setTimeout(() => res.resume(), 5);
            }
          });
          res.on('error', reject);
          res.on('end', () => resolve(Buffer.concat(chunks)));
        });
        req.end();
      });
    const ranges = Array.from({ length: 12 }, (_, i) => {
      const first = (i * 1_234_567) % (big.size - 2 * 1024 * 1024);
      return { first, last: first + 1024 * 1024 + i };
    });
    const [first, fast, second, ...parts] = await Promise.all([
      slowly(),
      download(`PluginMdmPackage/${big.id}`).then((response) => response.body),
      slowly(),
      ...ranges.map(({ first, last }) =>
        download(`PluginMdmPackage/${big.id}`, { range: `bytes=${first}-${last}` }).then((response) => response.body),
      ),
    ]);
    for (const body of [first!, fast!, second!]) expect(sha256(body)).toBe(bigSha);
    for (const [i, part] of parts.entries())
      expect(part.equals(whole.body.subarray(ranges[i]!.first, ranges[i]!.last + 1))).toBe(true);
  });

  it('an interrupted upload leaves no row and no temp file', async () => {
    const rowsBefore = (json(await send(`${adminUrl}/packages`)) as AdminItem[]).length;
    const storedBefore = readdirSync(join(dir, 'files', 'package')).length;
    const changesBefore = changes.length;
    const tmp = join(dir, 'files', 'tmp');

    const req = httpRequest(`${adminUrl}/packages?name=aborted.apk`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(10 * 1024 * 1024) },
    });
    req.on('error', () => {}); // the abort below
    req.on('response', (res) => res.resume());
    req.write(randomBytes(1024 * 1024));
    await waitFor(() => readdirSync(tmp).length > 0, 'the upload to reach the temp dir');
    req.destroy();
    await waitFor(() => readdirSync(tmp).length === 0, 'the temp file to be removed');

    expect((json(await send(`${adminUrl}/packages`)) as AdminItem[]).length).toBe(rowsBefore);
    expect(readdirSync(join(dir, 'files', 'package')).length).toBe(storedBefore);
    expect(changes.length).toBe(changesBefore);
  });

  it('a download in progress survives the delete of its item', async () => {
    const hash = createHash('sha256');
    let received = 0;
    const done = new Promise<{ status: number }>((resolve, reject) => {
      const req = httpRequest(`${agentUrl}/PluginMdmPackage/${big.id}?session_token=${tokens.good}`, {
        headers: { accept: 'application/octet-stream' },
        agent: false,
      });
      req.on('error', reject);
      req.on('response', (res) => {
        res.pause();
        const deleteThenRead = async () => {
          const removed = await send(`${adminUrl}/packages/${big.id}`, { method: 'DELETE' });
          expect(removed.status).toBe(204);
          for await (const chunk of res) {
            hash.update(chunk as Buffer);
            received += (chunk as Buffer).length;
          }
          return { status: res.statusCode ?? 0 };
        };
        deleteThenRead().then(resolve, reject);
      });
      req.end();
    });
    expect((await done).status).toBe(200);
    expect(received).toBe(big.size);
    expect(hash.digest('hex')).toBe(bigSha);
    expect(changes).toContain('removed package big.apk');
  });

  it('a deleted item is gone: 404 on download and on a second delete', async () => {
    const download404 = await download(`PluginMdmPackage/${big.id}`);
    expect(download404.status).toBe(404);
    const again = await send(`${adminUrl}/packages/${big.id}`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect(json(again)).toEqual({ error: 'ERROR_ITEM_NOT_FOUND', message: 'Item not found' });
    expect(json(await send(`${adminUrl}/packages`))).not.toContainEqual(expect.objectContaining({ id: big.id }));
    const badId = await send(`${adminUrl}/packages/abc`, { method: 'DELETE' });
    expect(badId.status).toBe(400);
  });
});

describe('limits and odd cases', () => {
  it('an upload over the store limit is a 413, with or without Content-Length, and leaves nothing', async () => {
    const small = await createFileStore(db, dir, undefined, { maxSize: 1000 });
    const app = Fastify({ logger: false });
    app.setErrorHandler((error: FastifyError | ApiError, _request, reply) =>
      error instanceof ApiError
        ? reply.code(error.status).send({ error: error.code, message: error.message })
        : reply.code((error as FastifyError).statusCode ?? 500).send({ error: 'ERROR', message: error.message }),
    );
    app.addHook('onRequest', (request, _reply, done) => {
      actsAs(request, 'owner');
      done();
    });
    await app.register(adminFileRoutes, { prefix: '/api', store: small });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const before = (await small.list('file')).length;
      const declared = await send(`${urlOf(app)}/api/files?name=big.bin`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: Buffer.alloc(5000),
      });
      expect(declared.status).toBe(413);
      expect(json(declared)).toMatchObject({ error: 'ERROR_PAYLOAD_TOO_LARGE' });
      expect(declared.headers.connection).toBe('close');

      const chunked = await send(`${urlOf(app)}/api/files?name=big.bin`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: Readable.from([Buffer.alloc(600), Buffer.alloc(600)]),
      });
      expect(chunked.status).toBe(413);
      expect(json(chunked)).toMatchObject({ error: 'ERROR_PAYLOAD_TOO_LARGE' });

      expect((await small.list('file')).length).toBe(before);
      expect(readdirSync(join(dir, 'files', 'tmp'))).toEqual([]);

      const fits = await send(`${urlOf(app)}/api/files?name=fits.bin`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: Buffer.alloc(1000),
      });
      expect(fits.status).toBe(201);
    } finally {
      await app.close();
    }
  });

  it('HEAD answers the headers without a body', async () => {
    const content = randomBytes(300);
    const item = await upload('files', 'head.bin', content);
    const response = await send(`${agentUrl}/PluginMdmFile/${item.id}?session_token=${tokens.good}`, {
      method: 'HEAD',
      headers: { accept: 'application/octet-stream', range: 'bytes=100-' },
    });
    expect(response.status).toBe(206);
    expectSpecHeaders(response, item, 'bytes 100-299/300', 200);
    expect(response.body.length).toBe(0);
  });

  // A client that hangs up while its download waits (the session check, the file's opening) leaves
  // a closed response: the handler must give back what it took, not wait for a 'drain' that never comes.
  for (const where of ['session check', 'file opening'] as const) {
    it(`downloads whose client hung up during the ${where} give back every slot, open file and pool byte`, async () => {
      const content = randomBytes(3 * 1024 * 1024 + 17);
      const item = await upload('files', `hung-up-${where}.bin`, content);
      const poolBytes = 8 * 1024 * 1024;
      const limits = new DownloadLimits({ maxConcurrent: 4, poolBytes });
      // The wait is held until the clients are gone, as a busy database or disk would hold it. The
      // store and the files are the real ones; the test only delays their answers and counts them.
      let openGate!: () => void;
      const gate = new Promise<void>((resolve) => (openGate = resolve));
      let waiting = 0;
      let passed = 0;
      const held = async <T>(work: Promise<T>): Promise<T> => {
        waiting++;
        try {
          await gate;
          return await work;
        } finally {
          passed++;
        }
      };
      const realOpen = limits.files.open.bind(limits.files);
      if (where === 'file opening') limits.files.open = (path) => held(realOpen(path));
      const realGet = store.get.bind(store);
      const countedStore: FileStore = Object.create(store) as FileStore;
      countedStore.get = (kind, id) => (where === 'session check' ? held(realGet(kind, id)) : realGet(kind, id));
      const app = await buildAgentApi({ sessions, downloads: { store: countedStore, limits } });
      await app.listen({ port: 0, host: '127.0.0.1' });
      const connections = () =>
        new Promise<number>((resolve, reject) =>
          app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
        );
      try {
        const url = `${urlOf(app)}/api/PluginMdmFile/${item.id}?session_token=${tokens.good}`;
        const clients = Array.from({ length: 6 }, () => {
          const client = httpRequest(url, { headers: { accept: 'application/octet-stream' }, agent: false });
          client.on('error', () => {});
          client.end();
          return client;
        });
        // The file's opening is reached by the four that took a slot (the other two were told 503, or,
        // on a slow machine, one still in its session check when the clients go takes a slot freed by
        // their going: at least four).
        const expected = where === 'file opening' ? 4 : 6;
        await waitFor(() => waiting >= expected, `${expected} requests held at the ${where}`);
        for (const client of clients) client.destroy();
        while ((await connections()) > 0) await new Promise((resolve) => setTimeout(resolve, 10));
        openGate();
        await waitFor(() => passed === waiting, `every request held at the ${where} answered`);

        // Every slot is free: four downloads at once, each whole.
        const answers = await Promise.all(
          Array.from({ length: 4 }, () =>
            send(url, { headers: { accept: 'application/octet-stream' } }).then((response) => ({
              status: response.status,
              sha: sha256(response.body),
            })),
          ),
        );
        for (const answer of answers) expect(answer).toEqual({ status: 200, sha: sha256(content) });
        await waitFor(() => limits.inProgress === 0 && limits.files.users === 0, 'the downloads over');
        expect(limits.poolFree).toBe(poolBytes);
      } finally {
        openGate();
        await app.close();
      }
    });
  }

  it('content missing on disk is a 404, not a 500', async () => {
    const item = await upload('files', 'vanishing.txt', Buffer.from('soon gone'));
    const stored = await store.get('file', item.id);
    expect(stored).toBeDefined();
    rmSync(store.pathOf(stored!));
    const response = await download(`PluginMdmFile/${item.id}`);
    expect(response.status).toBe(404);
    expect(json(response)).toEqual(['ERROR_ITEM_NOT_FOUND', 'Item not found']);
    expect(response.headers['content-range']).toBeUndefined();
  });

  it('content that is a link out of the store is not followed: 404, GET and HEAD (issue 19)', async () => {
    const outside = join(dir, 'outside-secret.txt');
    writeFileSync(outside, 'secret!!!');
    const item = await upload('files', 'linked.txt', Buffer.from('innocent'));
    const path = store.pathOf((await store.get('file', item.id))!);
    rmSync(path);
    symlinkSync(outside, path);
    for (const method of ['GET', 'HEAD']) {
      const response = await send(`${agentUrl}/PluginMdmFile/${item.id}?session_token=${tokens.good}`, {
        method,
        headers: { accept: 'application/octet-stream' },
      });
      expect(response.status, method).toBe(404);
      expect(response.body.toString()).not.toContain('secret');
    }
  });

  it('a row whose storage name leaves the store is a 404, and deleting it touches nothing outside (issue 19)', async () => {
    const outside = join(dir, 'outside-victim.txt');
    writeFileSync(outside, 'victim!!');
    const item = await upload('files', 'escaping.txt', Buffer.from('innocent'));
    db.db.prepare('UPDATE files SET storage_name = ? WHERE id = ?').run('../../outside-victim.txt', item.id);
    const response = await download(`PluginMdmFile/${item.id}`);
    expect(response.status).toBe(404);
    expect(json(response)).toEqual(['ERROR_ITEM_NOT_FOUND', 'Item not found']);
    const removed = await send(`${adminUrl}/files/${item.id}`, { method: 'DELETE' });
    expect(removed.status).toBeLessThan(300);
    expect(readdirSync(dir)).toContain('outside-victim.txt');
  });
});

async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
