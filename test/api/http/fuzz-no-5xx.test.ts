/**
 * A seeded fuzzer over every HTTP surface: the agent API, the admin API, the deeplink page and the
 * console's static files. Bad input must always get a 4xx (or a 2xx/3xx), never a 5xx. The seed is
 * fixed so a failure replays; every 5xx found is reported with the request that caused it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeDeeplinkData } from '../../../src-main/backend/deeplink/codec.ts';
import { enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';

const SEED = 0x5eed_0011;
const REQUESTS = 3000;
const CONCURRENCY = 8;

/** mulberry32: small, seedable, good enough to pick cases. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  return { next, int, pick };
}

let t: TestBackend;
let rendererDir: string;
let known: { session: string; userToken: string; agentId: string; invitationIds: number[]; fileId: number };
const agentHttp = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

beforeAll(async () => {
  // A console build of our own, so the static route serves real files and its fallback.
  rendererDir = mkdtempSync(join(tmpdir(), 'mdm-fuzz-renderer-'));
  mkdirSync(join(rendererDir, 'assets'));
  writeFileSync(join(rendererDir, 'index.html'), '<!doctype html><title>console</title>');
  writeFileSync(join(rendererDir, 'assets', 'app.js'), 'console.log(1)');
  process.env.MDM_CONSOLE_RENDERER_DIR = rendererDir;
  t = await startTestBackend();
  await t.admin('PATCH', '/settings', { helpdesk_name: 'Desk', helpdesk_website: 'https://help.example.com' });
  const invitations = [];
  for (let i = 0; i < 4; i++)
    invitations.push((await t.admin('POST', '/invitations', { email: `fuzz${i}@example.com`, send_email: false })).body);
  const enrolled = await enrollByHand(t.apiUrl, { ...invitations[0], email: 'fuzz0@example.com' });
  const upload = await fetch(`${t.backend.info.admin_url}/api/files?name=fuzz.bin`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body: Buffer.alloc(4096, 7),
  });
  known = {
    session: enrolled.session,
    userToken: invitations[1].user_token,
    agentId: String(enrolled.created.body.id),
    invitationIds: invitations.map((invitation) => invitation.id),
    fileId: ((await upload.json()) as { id: number }).id,
  };
});

afterAll(async () => {
  agentHttp.destroy();
  await t?.stop();
  delete process.env.MDM_CONSOLE_RENDERER_DIR;
  rmSync(rendererDir, { recursive: true, force: true });
});

type Case = { base: 'agent' | 'admin'; method: string; path: string; headers: Record<string, string>; body?: string };

function generator(seed: number) {
  const r = prng(seed);
  const numbers = [
    '0',
    '-1',
    '1',
    '1e309',
    '-1e309',
    '1e20',
    'NaN',
    'Infinity',
    '0x10',
    '1.5',
    '9007199254740993',
    '',
    ' ',
    '%00',
    '1%00',
    '٣',
  ];
  const strings = [
    '',
    'a',
    '%00',
    '%ZZ',
    '%',
    '..%2F..%2Fetc%2Fpasswd',
    '%F0%9F%98%80',
    '<script>',
    '%22%3B%22',
    'x'.repeat(5000),
    '%C0%AF',
  ];
  const scalar = () => (r.next() < 0.5 ? r.pick(numbers) : r.pick(strings));
  const id = () => (r.next() < 0.4 ? String(r.pick(known.invitationIds)) : r.pick(numbers) || '0');
  // Mostly sensible values, so that the one odd value reaches the handler rather than the schema.
  const sensible: Record<string, string[]> = {
    status: ['pending', 'done', 'expired', 'revoked'],
    q: ['fuzz', ''],
    fleet_id: ['1'],
    limit: ['10', '1'],
    offset: ['0', '2'],
    size: ['128', '480'],
    name: ['a.bin'],
    mime_type: ['text/plain'],
    entity_id: ['1'],
    data: ['x'],
    ticket: ['abc'],
  };
  // One odd value per query, the others sensible, so that it gets past the schema's other checks.
  const query = (names: string[]) => {
    const odd = r.pick(names);
    const parts: string[] = [];
    for (const name of names) {
      if (name !== odd && r.next() < 0.5) continue;
      const value =
        name === odd || !sensible[name] ? (r.next() < 0.6 ? r.pick(numbers) : r.pick(strings)) : r.pick(sensible[name]!);
      parts.push(`${name}=${value}`);
    }
    if (r.next() < 0.1) parts.push(`${odd}=${scalar()}`); // repeated keys become arrays
    return `?${parts.join('&')}`;
  };
  const jsonValue = (depth: number): unknown => {
    const choice = r.int(depth > 3 ? 4 : 7);
    if (choice === 0) return r.pick([0, -1, 1.5, 1e300, 2 ** 60, Number.MAX_SAFE_INTEGER]);
    if (choice === 1)
      return r.pick(['', 'a@b.co', 'x'.repeat(r.int(4000)), '\u0000', 'https://x.example/' + 'p'.repeat(r.int(3000))]);
    if (choice === 2) return r.pick([true, false, null]);
    if (choice === 3) return 'fuzz@example.com';
    if (choice === 4) return Array.from({ length: r.int(4) }, () => jsonValue(depth + 1));
    const keys = [
      'latitude',
      'longitude',
      'datetime',
      'computers_id',
      'email',
      'days',
      'fleet',
      'firstname',
      'name',
      'command',
      'fleet_id',
      'input',
      '_email',
      '_serial',
      '_uuid',
      'version',
      'type',
      'invitations',
      'helpdesk_website',
      'helpdesk_name',
      'deeplink_base_url',
      'public_host',
      'limit',
      'to',
      '__proto__',
      'constructor',
    ];
    return Object.fromEntries(Array.from({ length: r.int(5) }, () => [r.pick(keys), jsonValue(depth + 1)]));
  };
  const body = () => {
    const choice = r.int(10);
    if (choice === 0) return '{"a":';
    if (choice === 1) return '1e309';
    if (choice === 2) return '{"limit": 1e309, "days": 1e400}';
    if (choice === 3) return '['.repeat(2000);
    if (choice === 4) return undefined;
    if (choice === 5) return '{"__proto__": {"x": 1}}';
    return JSON.stringify(jsonValue(0));
  };

  const agentCase = (): Case => {
    const session = r.next() < 0.6 ? known.session : scalar();
    const paths = [
      () =>
        `/api/initSession${r.next() < 0.5 ? `?user_token=${r.next() < 0.5 ? known.userToken : scalar()}` : query(['user_token'])}`,
      () => `/api/getFullSession?session_token=${session}`,
      () => `/api/changeActiveProfile?session_token=${session}&profiles_id=${scalar()}`,
      () => `/api/PluginMdmAgent?session_token=${session}`,
      () => `/api/PluginMdmAgent/${r.next() < 0.5 ? known.agentId : id()}?session_token=${session}`,
      () => `/api/PluginMdmFile/${r.next() < 0.5 ? known.fileId : id()}?session_token=${session}`,
      () => `/api/PluginMdmPackage/${id()}?session_token=${session}`,
      () => `/api/${r.pick(['Computer', 'Entity', 'PluginMdmFleet'])}/${id()}?session_token=${session}`,
      // the reference agents' names, reports and locations
      () =>
        `/api/${r.pick(['PluginFlyvemdmAgent', 'PluginFlyvemdmFile', 'search/PluginFlyvemdmTaskstatus', 'PluginFlyvemdmAgent/'])}/${r.next() < 0.5 ? known.agentId : id()}?session_token=${session}`,
      () => `/api/PluginMdmGeolocation?session_token=${session}`,
      () => `/api/${scalar()}${query(['session_token', 'user_token', 'range'])}`,
      () => `/${scalar()}`,
    ];
    const headers: Record<string, string> = {};
    if (r.next() < 0.5)
      headers['content-type'] = r.pick([
        'application/json',
        'text/plain',
        'application/octet-stream',
        'multipart/form-data; boundary=x',
      ]);
    if (r.next() < 0.5) headers.accept = r.pick(['application/octet-stream', '*/*', 'APPLICATION/OCTET-STREAM']);
    if (r.next() < 0.4)
      headers.range = r.pick([
        'bytes=0-',
        'bytes=-5',
        'bytes=5-1',
        'bytes=99999999-',
        'bytes=0-1e309',
        'bytes=a-b',
        'items=0-1',
        'bytes=-',
        'bytes=1-2,3-4',
        'bytes=' + '1-2,'.repeat(500),
      ]);
    if (r.next() < 0.2) headers['session-token'] = scalar();
    if (r.next() < 0.2) headers.authorization = `user_token ${r.next() < 0.5 ? known.userToken : scalar()}`;
    const method = r.pick(['GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);
    return {
      base: 'agent',
      method,
      path: r.pick(paths)(),
      headers,
      body: method === 'GET' || method === 'HEAD' ? undefined : body(),
    };
  };

  const deeplinkCase = (): Case => {
    const fields = {
      backendUrl: r.next() < 0.8 ? 'http://127.0.0.1:1/api' : 'x'.repeat(r.int(6000)),
      userToken: 'u'.repeat(1 + r.int(80)),
      invitationToken: 'i'.repeat(1 + r.int(80)),
      helpdeskName: r.pick(['', 'Desk', '"quoted;name"', 'n'.repeat(r.int(4000))]),
      helpdeskPhone: r.pick(['', '+1 555', 'p'.repeat(r.int(3000))]),
      helpdeskWebsite: r.pick(['', 'https://h.example', 'javascript:alert(1)', 'https://h.example/' + 'w'.repeat(r.int(4000))]),
      helpdeskEmail: r.pick(['', 'h@example.com', 'e'.repeat(r.int(2000))]),
    };
    const choice = r.int(5);
    const data =
      choice === 0
        ? scalar()
        : choice === 1
          ? encodeDeeplinkData(fields).slice(0, r.int(200))
          : choice === 2
            ? Buffer.from(Array.from({ length: r.int(400) }, () => r.int(256))).toString('base64')
            : encodeURIComponent(encodeDeeplinkData(fields));
    const path = r.next() < 0.9 ? `/deeplink/?data=${data}` : `/deeplink/${query(['data', 'x'])}`;
    const headers: Record<string, string> =
      r.next() < 0.5 ? { 'user-agent': r.pick(['Mozilla/5.0 (Linux; Android 14)', 'Mozilla/5.0 (iPhone)', 'curl/8']) } : {};
    return { base: 'agent', method: r.pick(['GET', 'GET', 'GET', 'POST', 'HEAD']), path, headers };
  };

  const adminCase = (): Case => {
    const invitation = () => (r.next() < 0.5 ? String(r.pick(known.invitationIds)) : id());
    const routes: Array<[string, () => string]> = [
      ['GET', () => `/api/status`],
      ['GET', () => `/api/invitations${query(['status', 'q', 'fleet_id', 'limit', 'offset'])}`],
      ['POST', () => `/api/invitations`],
      ['POST', () => `/api/invitations/validate`],
      ['POST', () => `/api/invitations/bulk`],
      ['GET', () => `/api/invitations/${invitation()}`],
      ['GET', () => `/api/invitations/${invitation()}/qr.png${query(['size'])}`],
      ['GET', () => `/api/invitations/${invitation()}/qr.svg`],
      ['POST', () => `/api/invitations/${invitation()}/revoke`],
      ['POST', () => `/api/invitations/${invitation()}/resend`],
      ['DELETE', () => `/api/invitations/${id()}`],
      ['GET', () => `/api/agents${query(['limit'])}`],
      ['GET', () => `/api/agents/${r.next() < 0.5 ? known.agentId : id()}`],
      ['PATCH', () => `/api/agents/${r.next() < 0.5 ? known.agentId : id()}`],
      ['POST', () => `/api/agents/${r.next() < 0.5 ? known.agentId : id()}/commands`],
      ['GET', () => `/api/fleets`],
      ['POST', () => `/api/fleets`],
      ['PATCH', () => `/api/fleets/${id()}`],
      ['GET', () => `/api/files`],
      ['POST', () => `/api/files${query(['name', 'mime_type', 'entity_id'])}`],
      ['DELETE', () => `/api/packages/${id()}`],
      ['GET', () => `/api/settings`],
      ['PATCH', () => `/api/settings`],
      ['GET', () => `/api/mail/status`],
      ['POST', () => `/api/mail/preview`],
      ['GET', () => `/api/events${query(['limit'])}`],
      ['POST', () => `/api/console-tickets`],
      ['GET', () => `/api/${scalar()}`],
      ['GET', () => `/assets/${scalar()}`],
      ['GET', () => `/${scalar()}`],
      ['GET', () => `/auth${query(['ticket'])}`],
    ];
    const [method, path] = r.pick(routes);
    const headers: Record<string, string> = {};
    if (r.next() < 0.9) headers.authorization = `Bearer ${t.backend.info.admin_token}`;
    if (method !== 'GET' && r.next() < 0.8)
      headers['content-type'] = r.pick(['application/json', 'application/json', 'text/plain', 'application/octet-stream']);
    return {
      base: 'admin',
      method: r.next() < 0.9 ? method : r.pick(['PUT', 'DELETE', 'GET', 'HEAD']),
      path: path(),
      headers,
      body: method === 'GET' ? undefined : body(),
    };
  };

  return () => {
    const which = r.next();
    return which < 0.4 ? agentCase() : which < 0.6 ? deeplinkCase() : adminCase();
  };
}

/** What a client can put on the wire at all: spaces and non-ASCII percent-encoded. */
const wireSafe = (text: string) => text.replace(/[^\x21-\x7e]/gu, (c) => encodeURIComponent(c));
const headerSafe = (text: string) => text.replace(/[^\x20-\x7e]/gu, (c) => encodeURIComponent(c));

function send(c: Case, retry = true): Promise<number> {
  const base = new URL(c.base === 'agent' ? t.backend.info.deeplink_url : t.backend.info.admin_url);
  const headers = Object.fromEntries(Object.entries(c.headers).map(([name, value]) => [name, headerSafe(value)]));
  // Bodies only where HTTP gives them a meaning, always with their length (no chunked HEADs).
  const body = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(c.method) ? c.body : undefined;
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: base.hostname,
        port: base.port,
        method: c.method,
        path: wireSafe(c.path),
        headers,
        agent: retry ? agentHttp : false,
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    // A kept-alive connection the server closed meanwhile (after a 413, say) is retried once, as
    // Node's documentation advises, on a fresh connection; a fresh connection that fails is a real failure.
    req.on('error', (error) => {
      if (retry && req.reusedSocket) send(c, false).then(resolve, reject);
      else reject(error);
    });
    req.end(body);
  });
}

describe('fuzzing every HTTP surface', () => {
  it(`answers ${REQUESTS} seeded random requests without a single 5xx`, { timeout: 60_000 }, async () => {
    const next = generator(SEED);
    const cases = Array.from({ length: REQUESTS }, next);
    const serverErrors: string[] = [];
    const statuses = new Map<number, number>();
    let index = 0;
    const worker = async () => {
      while (index < cases.length) {
        const c = cases[index++]!;
        const status = await send(c).catch((error: Error) => {
          serverErrors.push(
            `no answer (${error.message}) ${c.base} ${c.method} ${c.path.slice(0, 160)} ${JSON.stringify(c.headers)} ${c.body?.slice(0, 120) ?? ''}`,
          );
          return 0;
        });
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status >= 500)
          serverErrors.push(`${status} ${c.base} ${c.method} ${c.path.slice(0, 160)} ${c.body?.slice(0, 120) ?? ''}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    expect(serverErrors).toEqual([]);
    // The fuzzer reached the handlers, not only the routers' 404s.
    const ok = [...statuses].filter(([status]) => status < 300).reduce((sum, [, n]) => sum + n, 0);
    const refused = [...statuses].filter(([status]) => status >= 400 && status < 500).reduce((sum, [, n]) => sum + n, 0);
    expect(ok).toBeGreaterThan(REQUESTS / 20);
    expect(refused).toBeGreaterThan(REQUESTS / 10);
    // The server is still whole afterwards.
    expect((await t.admin('GET', '/status')).status).toBe(200);
  });
});
