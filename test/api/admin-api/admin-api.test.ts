import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';

let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t.stop();
});

type StreamEvent = { id: string; type: string; data: any };

/**
 * Reads an SSE stream until `until` has seen what it wants; resolves to the events read. `opened`
 * resolves once the server's preamble (`retry:`) arrived: it subscribes in the same tick, so any
 * change made after that is on the stream.
 */
function readEvents(headers: Record<string, string>, until: (events: StreamEvent[]) => boolean, query = '') {
  let markOpened!: () => void;
  const preamble = new Promise<void>((resolve) => (markOpened = resolve));
  const read = new Promise<StreamEvent[]>((resolve, reject) => {
    const events: StreamEvent[] = [];
    const req = httpRequest(`${t.backend.info.admin_url}/api/events/stream${query}`, { headers }, (res) => {
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain('text/event-stream');
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith('retry: ')) markOpened();
          const field = (name: string) =>
            block
              .split('\n')
              .find((line) => line.startsWith(`${name}: `))
              ?.slice(name.length + 2);
          const data = field('data');
          if (data) events.push({ id: field('id')!, type: field('event')!, data: JSON.parse(data) });
        }
        if (until(events)) {
          req.destroy();
          resolve(events);
        }
      });
    });
    req.on('error', (error) =>
      error.message.includes('aborted') || (error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error),
    );
    req.end();
    setTimeout(() => reject(new Error(`timed out; got ${JSON.stringify(events.map((e) => e.type))}`)), 15_000).unref();
  });
  // A stream that fails before its preamble fails `opened` too, rather than leave it pending.
  return Object.assign(read, { opened: Promise.race([preamble, read.then(() => undefined)]) });
}

const bearer = () => ({ authorization: `Bearer ${t.backend.info.admin_token}` });

describe('admin authentication', () => {
  it('refuses calls without the admin token, or with a wrong one', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer nope' },
      { authorization: t.backend.info.admin_token },
      { cookie: 'mdm_console=forged' },
    ];
    for (const headers of attempts) {
      const response = await fetch(`${t.backend.info.admin_url}/api/invitations`, { headers });
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: string }).error).toBe('ERROR_UNAUTHORIZED');
    }
  });

  it('listens on loopback only', () => {
    expect(new URL(t.backend.info.admin_url).hostname).toBe('127.0.0.1');
  });

  it('exchanges a one-time console ticket for an HttpOnly, SameSite=Strict cookie', async () => {
    const first = await fetch(t.backend.info.console_url, { redirect: 'manual' });
    expect(first.status).toBe(302);
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).not.toContain(t.backend.info.admin_token);
    const withCookie = await fetch(`${t.backend.info.admin_url}/api/status`, { headers: { cookie: cookie.split(';')[0]! } });
    expect(withCookie.status).toBe(200);
    expect(JSON.stringify(await withCookie.json())).not.toContain(t.backend.info.admin_token);
    // A used link lands on the console's sign-in page, which says what happened and what to do.
    const again = await fetch(t.backend.info.console_url, { redirect: 'manual' });
    expect(again.status).toBe(302);
    expect(again.headers.get('location')).toBe('/sign-in?link=used');
    expect(again.headers.get('set-cookie')).toBeNull();
  });

  it('signs the console in with the admin token or a one-time link pasted on its sign-in page', async () => {
    const signIn = (credential: unknown, headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' }) =>
      fetch(`${t.backend.info.admin_url}/auth/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ credential }),
      });
    const withToken = await signIn(` ${t.backend.info.admin_token}\n`);
    expect(withToken.status).toBe(200);
    expect((await withToken.json()) as unknown).toEqual({ signed_in: true, with: 'token' });
    const cookie = withToken.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly; SameSite=Strict/);
    expect((await fetch(`${t.backend.info.admin_url}/api/status`, { headers: { cookie: cookie.split(';')[0]! } })).status).toBe(
      200,
    );

    const link = (await t.admin('POST', '/console-tickets')).body.console_url as string;
    const withLink = await signIn(link);
    expect(withLink.status).toBe(200);
    expect(((await withLink.json()) as { with: string }).with).toBe('link');
    const reused = await signIn(link);
    expect(reused.status).toBe(401);
    const refusal = (await reused.json()) as { error: string; message: string };
    expect(refusal).toMatchObject({ error: 'ERROR_SIGN_IN' });
    expect(refusal.message).toContain('npm run cli -- console');
    expect(refusal.message).not.toContain('`');
    expect(reused.headers.get('set-cookie')).toBeNull();

    expect((await signIn('not-the-token')).status).toBe(401);
    expect((await signIn({ token: 'x' })).status).toBe(400);
    // Another local page cannot sign this browser in (nor learn whether a guess was right).
    expect((await signIn(t.backend.info.admin_token, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await signIn(t.backend.info.admin_token, { origin: 'http://evil.example' })).status).toBe(403);
  });

  it('picks a LAN address as the public host in one call, and refuses any other address', async () => {
    // A backend of its own: the choice applies to everything it serves from then on.
    const own = await startTestBackend();
    try {
      const before = await own.admin('GET', '/status');
      expect(before.body.public_host).toBe('127.0.0.1');
      expect(before.body.warnings.join(' ')).toMatch(/loopback/);
      expect((await own.admin('POST', '/public-host', { host: '203.0.113.9' })).status).toBe(400);
      expect((await own.admin('POST', '/public-host', {})).status).toBe(400);
      const lan = before.body.lan_addresses as string[];
      if (lan.length === 0) return; // a machine with no network address has nothing to pick
      const picked = await own.admin('POST', '/public-host', { host: lan[0] });
      expect(picked.status).toBe(200);
      expect(picked.body.api_url).toContain(`//${lan[0]}:`);
      const after = await own.admin('GET', '/status');
      expect(after.body).toMatchObject({ public_host: lan[0], warnings: [] });
      const invitation = await own.admin('POST', '/invitations', { email: `lan.${Date.now()}@example.com`, send_email: false });
      expect(invitation.body.deeplink).toContain(`//${lan[0]}:`);
      expect(Buffer.from(decodeURIComponent(invitation.body.deeplink.split('data=')[1]), 'base64').toString()).toContain(
        `http://${lan[0]}:`,
      );
    } finally {
      await own.stop();
    }
  });

  it('refuses cookie-authenticated changes that come from another origin', async () => {
    const { body } = await t.admin('POST', '/console-tickets');
    const cookie = (await fetch(body.console_url, { redirect: 'manual' })).headers.get('set-cookie')!.split(';')[0]!;
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'csrf@example.com' });
    const revoke = (headers: Record<string, string>) =>
      fetch(`${t.backend.info.admin_url}/api/invitations/${invitation.id}/revoke`, {
        method: 'POST',
        headers: { cookie, ...headers },
      });
    expect((await revoke({ origin: 'http://127.0.0.1:5173', 'sec-fetch-site': 'same-site' })).status).toBe(401);
    expect((await revoke({ origin: 'http://127.0.0.1:5173' })).status).toBe(401);
    expect((await revoke({})).status).toBe(401);
    expect((await t.admin('GET', `/invitations/${invitation.id}`)).body.status).toBe('pending');
    // Reading with the cookie is fine from anywhere it is sent; changing needs the console's origin.
    expect((await fetch(`${t.backend.info.admin_url}/api/status`, { headers: { cookie } })).status).toBe(200);
    expect((await revoke({ 'sec-fetch-site': 'same-origin' })).status).toBe(200);
  });

  it('takes bodiless POSTs that still say Content-Type: application/json, and refuses __proto__ bodies', async () => {
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'bodiless@example.com' });
    const revoke = await fetch(`${t.backend.info.admin_url}/api/invitations/${invitation.id}/revoke`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/json' },
    });
    expect(revoke.status).toBe(200);
    const poisoned = await fetch(`${t.backend.info.admin_url}/api/fleets`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/json' },
      body: '{"name": "x", "__proto__": {"admin": true}}',
    });
    expect(poisoned.status).toBe(400);
  });

  it('answers unknown admin API paths with a JSON 404, not the console page', async () => {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const response = await fetch(`${t.backend.info.admin_url}/api/no/such/thing`, { method, headers: bearer() });
      expect(response.status, method).toBe(404);
      expect(((await response.json()) as { error: string }).error).toBe('ERROR_NOT_FOUND');
    }
  });

  it('issues fresh one-time sign-in links to the admin token holder', async () => {
    expect((await fetch(`${t.backend.info.admin_url}/api/console-tickets`, { method: 'POST' })).status).toBe(401);
    const { status, body } = await t.admin('POST', '/console-tickets');
    expect(status).toBe(201);
    expect(body.console_url).toMatch(new RegExp(`^${t.backend.info.admin_url}/auth\\?ticket=[0-9a-f]{48}$`));
    expect(body.console_url).not.toBe(t.backend.info.console_url);
    const used = await fetch(body.console_url, { redirect: 'manual' });
    expect(used.status).toBe(302);
    expect(used.headers.get('set-cookie')).toMatch(/Max-Age=\d+/);
  });
});

describe('the event stream', () => {
  it('answers a HEAD with the stream headers and ends it: the same connection serves the next request', async () => {
    // One kept-alive socket: a HEAD left open would hold the request after it forever.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const call = (method: string, path: string) =>
      new Promise<{ status: number; type: string }>((resolve, reject) => {
        const req = httpRequest(`${t.backend.info.admin_url}/api${path}`, { method, agent, headers: bearer() }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']) }));
        });
        req.on('error', reject);
        req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path} was not answered`)));
        req.end();
      });
    try {
      expect(await call('HEAD', '/events/stream')).toEqual({ status: 200, type: expect.stringContaining('text/event-stream') });
      expect((await call('GET', '/status')).status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  it('relays every change live, then catches a reconnecting client up from Last-Event-ID', async () => {
    const live = readEvents(bearer(), (events) =>
      events.some((e) => e.type === 'agent.enrolled' && e.data.data.serial === 'SSE-1'),
    );
    await live.opened;
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'sse@example.com' });
    await enrollByHand(t.apiUrl, invitation, { serial: 'SSE-1' });
    const events = await live;
    const types = events.map((e) => e.type);
    expect(types).toContain('invitation.created');
    expect(types.indexOf('invitation.created')).toBeLessThan(types.indexOf('agent.enrolled'));
    const enrolled = events.find((e) => e.type === 'agent.enrolled')!;
    expect(enrolled.data.invitation_id).toBe(invitation.id);
    expect(Number.isInteger(enrolled.data.agent_id)).toBe(true);

    const created = events.find((e) => e.type === 'invitation.created')!;
    const replay = await readEvents({ ...bearer(), 'last-event-id': created.id }, (seen) =>
      seen.some((e) => e.type === 'agent.enrolled'),
    );
    expect(replay[0]!.id).not.toBe(created.id);
    expect(replay.map((e) => e.type)).toContain('agent.enrolled');
  });

  it("carries the agent's device-list row on events naming the agent (null once it is gone), and on no others", async () => {
    let agentId = 0;
    const live = readEvents(bearer(), (events) => events.some((e) => e.type === 'agent.deleted' && e.data.agent_id === agentId));
    await live.opened;
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'row@example.com' });
    await enrollByHand(t.apiUrl, invitation, { serial: 'ROW-1' });
    const row = (await t.admin('GET', '/agents')).body.items.find((agent: { serial: string }) => agent.serial === 'ROW-1');
    agentId = row.id;
    expect((await t.admin('DELETE', `/agents/${agentId}`)).status).toBeLessThan(300);
    const events = await live;

    const created = events.find((e) => e.type === 'invitation.created' && e.data.invitation_id === invitation.id)!;
    expect(created.data).not.toHaveProperty('agent');
    const enrolled = events.find((e) => e.type === 'agent.enrolled' && e.data.agent_id === agentId)!;
    expect(Object.keys(enrolled.data.agent).sort()).toEqual(Object.keys(row).sort());
    expect(enrolled.data.agent).toMatchObject({
      id: agentId,
      serial: 'ROW-1',
      enroll_status: row.enroll_status,
      email: 'row@example.com',
      fleet: row.fleet,
    });
    expect(events.find((e) => e.type === 'agent.deleted')!.data.agent).toBeNull();
    // The feed (GET /events) lists the events as recorded, without rows.
    const feed = (await t.admin('GET', '/events?limit=20')).body.items;
    expect(feed.find((e: { id: number }) => String(e.id) === enrolled.id)).not.toHaveProperty('agent');
  });
});

describe('invitations', () => {
  it('lists with status, search and fleet filters', async () => {
    const { body: fleet } = await t.admin('POST', '/fleets', { name: 'Filters' });
    const { body: a } = await t.admin('POST', '/invitations', {
      email: 'filter-a@example.com',
      firstname: 'Zed',
      fleet: 'filters',
    });
    const { body: b } = await t.admin('POST', '/invitations', { email: 'filter_b@example.com' });
    await t.admin('POST', `/invitations/${b.id}/revoke`);
    const list = async (query: string) =>
      (await t.admin('GET', `/invitations?${query}`)).body.items.map((i: { id: number }) => i.id);
    expect(await list(`fleet_id=${fleet.id}`)).toEqual([a.id]);
    expect(await list('q=zed')).toEqual([a.id]);
    expect(await list('q=filter_b')).toEqual([b.id]); // _ is literal, not a wildcard
    expect(await list('status=revoked')).toContain(b.id);
    expect(await list('status=pending')).toContain(a.id);
    expect(await list('status=pending')).not.toContain(b.id);
    expect((await t.admin('GET', '/invitations?status=bogus')).status).toBe(400);
  });

  it('validates input with clear errors and creates nothing from a bad bulk', async () => {
    const cases: [unknown, number][] = [
      [{ email: 'not-an-email' }, 400],
      [{ email: 'ok@example.com', days: 0 }, 400],
      [{ email: 'ok@example.com', days: 181 }, 400],
      [{ email: 'ok@example.com', fleet: 'No such fleet' }, 400],
      [{ email: 'ok@example.com', extra: 1 }, 400],
      [{}, 400],
      ['just a string', 400],
    ];
    for (const [body, status] of cases) {
      const response = await t.admin('POST', '/invitations', body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(typeof response.body.message).toBe('string');
    }
    const before = (await t.admin('GET', '/invitations')).body.total;
    const bulk = await t.admin('POST', '/invitations/bulk', {
      invitations: [{ email: 'good1@example.com' }, { email: 'bad' }, { email: 'good1@example.com' }],
    });
    expect(bulk.status).toBe(400);
    expect(bulk.body.errors).toEqual([expect.stringMatching(/^row 2: /), expect.stringMatching(/^row 3: .*row 1/)]);
    expect((await t.admin('GET', '/invitations')).body.total).toBe(before);
  });

  it('re-inviting an email reuses its user and token; delete removes the invitation', async () => {
    const { body: first } = await t.admin('POST', '/invitations', { email: 'Again@Example.com' });
    // A pending invitation is said, with the invitation to resend, not silently doubled.
    const refused = await t.admin('POST', '/invitations', { email: 'again@example.COM' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      error: 'ERROR_INVITATION_PENDING',
      invitation: { id: first.id, invitation_token: first.invitation_token },
    });
    expect(refused.body.message).toContain(`again@example.com already has a pending invitation (#${first.id}`);
    const bulk = await t.admin('POST', '/invitations/bulk', {
      invitations: [{ email: 'fresh-one@example.com' }, { email: 'AGAIN@example.com' }],
    });
    expect(bulk.status).toBe(400);
    expect(bulk.body.errors).toEqual([
      expect.stringMatching(new RegExp(`^row 2: again@example.com already has a pending invitation \\(#${first.id}`)),
    ]);
    expect((await t.admin('GET', '/invitations?q=fresh-one')).body.total).toBe(0);
    // A second device: asked for explicitly.
    const { status, body: second } = await t.admin('POST', '/invitations', { email: 'again@example.COM', another: true });
    expect(status).toBe(201);
    expect(second.user_token).toBe(first.user_token);
    expect(second.invitation_token).not.toBe(first.invitation_token);
    expect((await t.admin('DELETE', `/invitations/${first.id}`)).status).toBe(204);
    expect((await t.admin('GET', `/invitations/${first.id}`)).status).toBe(404);
    expect((await t.admin('DELETE', `/invitations/${first.id}`)).status).toBe(404);
  });

  it('will not revoke a used invitation', async () => {
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'used-revoke@example.com' });
    await enrollByHand(t.apiUrl, invitation);
    const response = await t.admin('POST', `/invitations/${invitation.id}/revoke`);
    expect(response.status).toBe(409);
  });
});

describe('agents, fleets and settings', () => {
  it('deleting an agent retires its api_token', async () => {
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'delete-agent@example.com' });
    const { session, created } = await enrollByHand(t.apiUrl, invitation);
    const record = (await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body.id}?session_token=${session}`)).body;
    const { body: detail } = await t.admin('GET', `/agents/${created.body.id}`);
    expect(detail.events.map((e: { type: string }) => e.type)).toContain('agent.enrolled');
    expect((await t.admin('DELETE', `/agents/${created.body.id}`)).status).toBe(204);
    expect((await t.admin('GET', `/agents/${created.body.id}`)).status).toBe(404);
    expect((await agentCall(t.apiUrl, 'GET', `initSession?user_token=${record.api_token}`)).status).toBe(401);
    const { body: seen } = await t.admin('GET', `/invitations/${invitation.id}`);
    expect(seen.agent).toBeNull();
  });

  it('creates and renames fleets, refusing duplicates', async () => {
    const created = await t.admin('POST', '/fleets', { name: 'Warehouse' });
    expect(created.status).toBe(201);
    expect((await t.admin('POST', '/fleets', { name: 'warehouse' })).status).toBe(409);
    expect((await t.admin('POST', '/fleets', { name: '' })).status).toBe(400);
    const renamed = await t.admin('PATCH', `/fleets/${created.body.id}`, { name: 'Depot' });
    expect(renamed.body.name).toBe('Depot');
    expect((await t.admin('PATCH', '/fleets/9999', { name: 'X' })).status).toBe(404);
    const { body } = await t.admin('GET', '/fleets');
    expect(body.items.filter((f: { is_default: number }) => f.is_default)).toHaveLength(1);
  });

  it('validates settings and applies them to new deeplinks at once', async () => {
    for (const bad of [
      { invitation_lifetime_days: 0 },
      { public_host: 'evil.com/x?' },
      { public_host: 'a b' },
      { deeplink_base_url: 'javascript:alert(1)//' },
      { deeplink_base_url: 'https://x.example/?q=1' },
      { app_link_scheme: 'javascript' },
      { app_link_scheme: 'https' },
      { mail_html_template: '<p>{{nope}}</p>' },
    ]) {
      const response = await t.admin('PATCH', '/settings', bad);
      expect(response.status, JSON.stringify(bad)).toBe(400);
    }
    for (const good of [
      { public_host: '192.168.1.20' },
      { public_host: 'fe80::1' },
      { public_host: 'mdm.example.org' },
      { deeplink_base_url: 'https://links.example.org/mdm' },
    ]) {
      expect((await t.admin('PATCH', '/settings', good)).status, JSON.stringify(good)).toBe(200);
    }
    await t.admin('PATCH', '/settings', { public_host: '', deeplink_base_url: '' });
    expect((await t.admin('PATCH', '/settings', { app_link_scheme: 'no spaces' })).status).toBe(400);
    expect((await t.admin('PATCH', '/settings', { nonsense: 1 })).status).toBe(400);
    expect((await t.admin('PATCH', '/settings', {})).status).toBe(400);
    const ok = await t.admin('PATCH', '/settings', { invitation_lifetime_days: 30, helpdesk_name: 'Desk 42' });
    expect(ok.status).toBe(200);
    expect(ok.body.invitation_lifetime_days).toBe(30);
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'settings@example.com' });
    expect(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)).toBe(30 * 24 * 3600 * 1000);
    expect(Buffer.from(invitation.deeplink_data, 'base64').toString()).toContain(';Desk 42;');
  });
});
