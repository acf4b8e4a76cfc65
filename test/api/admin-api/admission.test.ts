// The admin port cannot be locked (issue 19, item 5): idle or header-dripping sockets without a
// token, or a pile of event streams, used to hold all 128 admin connections, and then the console
// neither loaded nor signed in. Sign-in is rate limited per address with each failure recorded,
// and the console's cookie is a server-side session: new on every sign-in, ended on sign-out and
// on expiry. Real sockets against a real backend; other clients come from 127.0.0.2 ….
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { callFrom, type Answer } from '../../helpers/from-address.ts';

let t: TestBackend;
let adminUrl: string;
let token: string;

beforeAll(async () => {
  t = await startTestBackend();
  adminUrl = t.backend.info.admin_url;
  token = t.backend.info.admin_token;
});
afterAll(async () => {
  await t?.stop();
});

const sameOrigin = () => ({ 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' });
const signInFrom = (address: string, credential: string) =>
  callFrom(address, `${adminUrl}/auth/sign-in`, { method: 'POST', headers: sameOrigin(), body: JSON.stringify({ credential }) });
const cookieOf = (answer: Answer) => /mdm_console=([^;]*)/.exec(String(answer.headers['set-cookie']))?.[1];
const withCookie = (cookie: string, path = '/api/status', address = '127.0.0.1') =>
  callFrom(address, `${adminUrl}${path}`, { headers: { cookie: `mdm_console=${cookie}` } });
const withBearer = (bearer: string, address = '127.0.0.1') =>
  callFrom(address, `${adminUrl}/api/status`, { headers: { authorization: `Bearer ${bearer}` } });
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A connection to the admin port that sends nothing, or half a request then a header every 200 ms. */
function holdConnection(kind: 'idle' | 'dripping'): Promise<{ socket: Socket; stop(): void }> {
  const { hostname, port } = new URL(adminUrl);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let drip: ReturnType<typeof setInterval> | undefined;
    const stop = () => {
      clearInterval(drip);
      socket.destroy();
    };
    socket.on('error', () => {});
    socket.once('close', () => clearInterval(drip));
    socket.once('connect', () => {
      if (kind === 'dripping') {
        socket.write('GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        drip = setInterval(() => socket.writable && socket.write('X-Slow: y\r\n'), 200);
      }
      resolve({ socket, stop });
    });
    socket.once('close', () => resolve({ socket, stop }));
  });
}

/** An event stream on a connection of its own; `ended` once the server closes it. */
function openStream(headers: Record<string, string>): Promise<{ ended: () => boolean; close(): void }> {
  return new Promise((resolve, reject) => {
    let ended = false;
    const req = request(
      `${adminUrl}/api/events/stream`,
      { agent: false, headers: { accept: 'text/event-stream', ...headers } },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`event stream answered ${res.statusCode}`));
        res.on('data', () => {});
        res.on('end', () => (ended = true));
        res.on('close', () => (ended = true));
        resolve({ ended: () => ended, close: () => req.destroy() });
      },
    );
    req.on('error', () => (ended = true));
    req.end();
  });
}

describe('the admin listener under idle and dripping sockets', () => {
  it(
    '140 idle and 140 header-dripping sockets without a token: the console still loads, signs in and answers',
    { timeout: 60_000 },
    async () => {
      const held = [
        ...(await Promise.all(Array.from({ length: 140 }, () => holdConnection('idle')))),
        ...(await Promise.all(Array.from({ length: 140 }, () => holdConnection('dripping')))),
      ];
      await settle(300);
      // They do fill the listener (128 places): the newest of them hold it.
      expect(held.filter((h) => !h.socket.destroyed).length).toBeGreaterThan(100);

      const page = await callFrom('127.0.0.1', `${adminUrl}/`);
      expect(page.text.toLowerCase()).toMatch(/^<!doctype html>/);
      const signedIn = await signInFrom('127.0.0.1', token);
      expect(signedIn.status).toBe(200);
      const cookie = cookieOf(signedIn)!;
      expect((await withCookie(cookie)).status).toBe(200);
      expect((await withBearer(token)).status).toBe(200);
      for (const h of held) h.stop();
    },
  );
});

describe('event streams', () => {
  it(
    "are capped per signed-in client, the client's oldest closed first; 130 streams cannot lock the listener",
    { timeout: 60_000 },
    async () => {
      const bearer = { authorization: `Bearer ${token}` };
      const mine = [];
      for (let i = 0; i < 10; i++) mine.push(await openStream(bearer));
      await settle(300);
      // Six per client: the four oldest were closed for the newer ones.
      expect(mine.map((s) => s.ended())).toEqual([true, true, true, true, false, false, false, false, false, false]);

      // 130 console sessions with a stream each: past 64 streams in all, the oldest go.
      const streams = [];
      for (let i = 0; i < 130; i++) {
        const cookie = cookieOf(await signInFrom('127.0.0.1', token))!;
        streams.push(await openStream({ cookie: `mdm_console=${cookie}` }));
      }
      await settle(300);
      const open = [...mine, ...streams].filter((s) => !s.ended()).length;
      expect(open).toBe(64);
      expect(streams.slice(-64).every((s) => !s.ended())).toBe(true);
      expect((await withBearer(token)).status).toBe(200);
      expect((await signInFrom('127.0.0.1', token)).status).toBe(200);
      for (const s of [...mine, ...streams]) s.close();
    },
  );
});

describe('sign-in', () => {
  it('is rate limited per address, each failure recorded; the right token from another address still signs in', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await signInFrom('127.0.0.2', `wrong-${i}`)).status);
    expect(statuses).toEqual([...Array<number>(10).fill(401), ...Array<number>(20).fill(429)]);
    // While slowed, even the right token is not looked at from that address.
    const slowed = await signInFrom('127.0.0.2', token);
    expect(slowed.status).toBe(429);
    expect(slowed.body.error).toBe('ERROR_TOO_MANY_SIGN_INS');
    expect(Number(slowed.headers['retry-after'])).toBeGreaterThan(0);
    expect((await signInFrom('127.0.0.1', token)).status).toBe(200);

    // Wrong bearer tokens on the API count the same way; the right one always passes (the CLI, scripts).
    const api: number[] = [];
    for (let i = 0; i < 15; i++) api.push((await withBearer('f'.repeat(64), '127.0.0.3')).status);
    expect(api).toEqual([...Array<number>(10).fill(401), ...Array<number>(5).fill(429)]);
    expect((await withBearer(token, '127.0.0.3')).status).toBe(200);

    // A used or unknown sign-in link counts and is recorded too.
    const link = await callFrom('127.0.0.4', `${adminUrl}/auth?ticket=${'ab'.repeat(24)}`);
    expect(link.status).toBe(302);
    expect(link.headers.location).toBe('/sign-in?link=used');

    const events = (await t.admin('GET', '/events?limit=1000')).body.items as { type: string; data: Record<string, unknown> }[];
    const failed = (address: string) => events.filter((e) => e.type === 'admin.sign_in_failed' && e.data.address === address);
    expect(failed('127.0.0.2')).toHaveLength(10);
    expect(failed('127.0.0.2').every((e) => e.data.with === 'form')).toBe(true);
    expect(failed('127.0.0.3')).toHaveLength(10);
    expect(failed('127.0.0.4').map((e) => e.data.with)).toEqual(['link']);
    const throttled = events.filter((e) => e.type === 'admin.sign_in_throttled');
    expect(throttled.map((e) => e.data.address).sort()).toEqual(['127.0.0.2', '127.0.0.3']);
  });
});

describe('the console cookie', () => {
  it('is new on every sign-in, kept on the server as a hash only, and refused after sign-out or expiry there', async () => {
    const [a, b, c] = [
      cookieOf(await signInFrom('127.0.0.1', token))!,
      cookieOf(await signInFrom('127.0.0.1', token))!,
      cookieOf(await signInFrom('127.0.0.1', token))!,
    ];
    expect(new Set([a, b, c]).size).toBe(3);
    for (const cookie of [a, b, c]) expect((await withCookie(cookie)).status).toBe(200);
    const stored = (await t.sql.all('SELECT * FROM admin_sessions')) as Record<string, unknown>[];
    expect(JSON.stringify(stored)).not.toContain(a);

    // Sign-out ends that session on the server: the cookie is worthless wherever it was copied.
    const out = await callFrom('127.0.0.1', `${adminUrl}/auth/sign-out`, {
      method: 'POST',
      headers: { ...sameOrigin(), cookie: `mdm_console=${a}` },
    });
    expect(out.status).toBe(200);
    expect(String(out.headers['set-cookie'])).toMatch(/mdm_console=;.*Max-Age=0/);
    expect((await withCookie(a)).status).toBe(401);
    expect((await withCookie(b)).status).toBe(200);

    // Past its maximum age, or idle too long, a session ends on the server whatever the browser keeps.
    const hashOf = async (cookie: string) =>
      Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(cookie))).toString('hex');
    await t.sql.run('UPDATE admin_sessions SET expires_at = ? WHERE id_hash = ?', [
      new Date(Date.now() - 1000).toISOString(),
      await hashOf(b),
    ]);
    await t.sql.run('UPDATE admin_sessions SET last_used_at = ? WHERE id_hash = ?', [
      new Date(Date.now() - 8 * 86_400_000).toISOString(),
      await hashOf(c),
    ]);
    expect((await withCookie(b)).status).toBe(401);
    expect((await withCookie(c)).status).toBe(401);
    expect((await withCookie(b, '/api/events/stream')).status).toBe(401);
  });
});
