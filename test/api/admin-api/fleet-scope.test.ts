// Fleet scoping (issue 22, items 2 and 7): an operator or observer scoped to fleets sees and acts on
// those fleets' devices, invitations, codes and assignments only, in lists, counts, the event history
// and the live stream; another fleet's device answers 404 by id, as one that does not exist, and
// a command to it reaches nothing. A token is scoped within its account. Real HTTP, SQLite and MQTT.
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { hashPassword } from '../../../src-main/backend/accounts/passwords.ts';
import { adminRoutes } from '../../../src-shared/contract/admin-routes.ts';
import { can, permissionsNeeded } from '../../../src-shared/contract/permissions.ts';
import type { TestBackend } from '../../helpers/backend.ts';
import { callFrom } from '../../helpers/from-address.ts';
import {
  agentRow,
  connectAgent,
  enrollAgent,
  inbox,
  nextEvent,
  ofAgent,
  useBrokerBackend,
  type EnrolledAgent,
} from '../../helpers/mqtt.ts';

let t: TestBackend;
let adminUrl: string;
const fleet: Record<'A' | 'B' | 'C', number> = { A: 0, B: 0, C: 0 };
let inA: EnrolledAgent;
let inB: EnrolledAgent;
let olgaId: number;
let olga: string; // Olga's console session (cookie)
const PASSWORD = 'helpdesk horse battery';

useBrokerBackend(async (backend) => {
  t = backend;
  adminUrl = t.backend.info.admin_url;
  for (const name of ['A', 'B', 'C'] as const) fleet[name] = (await t.admin('POST', '/fleets', { name })).body.id;
  inA = await enrollAgent(t, { fleet: 'A', serial: 'SCOPE-A-1' });
  inB = await enrollAgent(t, { fleet: 'B', serial: 'SCOPE-B-1' });
  for (const name of ['A', 'B'])
    expect((await t.admin('POST', '/codes', { name: `code ${name}`, fleet: name })).status).toBe(201);
  // Olga, an operator (made in her table: inviting admins is another step of the issue), signs in.
  t.db
    .prepare(
      `INSERT INTO admin_accounts (email, display_name, role, password_hash, created_at) VALUES ('olga@example.org', 'Olga', 'operator', ?, ?)`,
    )
    .run(await hashPassword(PASSWORD), new Date().toISOString());
  olgaId = t.db.prepare(`SELECT id FROM admin_accounts WHERE email = 'olga@example.org'`).pluck().get() as number;
  const signedIn = await callFrom('127.0.0.1', `${adminUrl}/auth/password`, {
    method: 'POST',
    headers: { 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'olga@example.org', password: PASSWORD }),
  });
  expect(signedIn.status).toBe(200);
  olga = /mdm_console=([^;]*)/.exec(String(signedIn.headers['set-cookie']))![1]!;
});

/** A call as Olga's console session (changes from the console's own origin, as a browser sends them). */
const asOlga = (method: string, path: string, body?: unknown) =>
  callFrom('127.0.0.1', `${adminUrl}/api${path}`, {
    method,
    headers: {
      cookie: `mdm_console=${olga}`,
      'sec-fetch-site': 'same-origin',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const withBearer = (bearer: string, method: string, path: string, body?: unknown) =>
  callFrom('127.0.0.1', `${adminUrl}/api${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const scopeOlga = (fleetIds: number[]) => t.admin('PUT', `/accounts/${olgaId}/scope`, { fleet_ids: fleetIds });
const ids = (items: { id: number }[]) => items.map((item) => item.id);
type RecordedFrame = { id: number; agent_id: number | null; invitation_id: number | null; data: Record<string, unknown> | null };

/** An open event stream: the frames as they come, parsed; `close()` ends it. */
function openStream(headers: Record<string, string>) {
  const frames: { id: number; type: string; agent_id: number | null; invitation_id: number | null }[] = [];
  const waiters: { match: (f: (typeof frames)[number]) => boolean; resolve: () => void }[] = [];
  let buffer = '';
  const req = request(`${adminUrl}/api/events/stream`, { headers: { accept: 'text/event-stream', ...headers } });
  const opened = new Promise<number>((resolve, reject) => {
    req.on('response', (response) => {
      resolve(response.statusCode ?? 0);
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trim())
            .join('\n');
          if (!data) continue;
          const frame = JSON.parse(data) as (typeof frames)[number];
          frames.push(frame);
          for (const waiter of [...waiters])
            if (waiter.match(frame)) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve();
            }
        }
      });
    });
    req.on('error', reject);
  });
  req.end();
  return {
    opened,
    frames,
    until: (match: (f: (typeof frames)[number]) => boolean) =>
      frames.some(match) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ match, resolve })),
    close: () => req.destroy(),
  };
}

describe('an operator scoped to one fleet', () => {
  it('sees only that fleet in every list and count; /me says so', async () => {
    const before = await asOlga('GET', '/agents');
    expect(ids(before.body.items)).toEqual(expect.arrayContaining([inA.id, inB.id]));
    expect((await scopeOlga([fleet.A])).body).toMatchObject({ id: olgaId, role: 'operator', fleet_ids: [fleet.A] });

    expect((await asOlga('GET', '/me')).body).toMatchObject({ role: 'operator', fleets: [{ id: fleet.A, name: 'A' }] });
    expect(ids((await asOlga('GET', '/agents')).body.items)).toEqual([inA.id]);
    const invitations = (await asOlga('GET', '/invitations')).body;
    expect(invitations.total).toBe(1);
    expect(invitations.items.map((i: { fleet: string }) => i.fleet)).toEqual(['A']);
    expect((await asOlga('GET', '/codes')).body.items.map((c: { name: string }) => c.name)).toEqual(['code A']);
    expect((await asOlga('GET', '/fleets')).body.items.map((f: { name: string }) => f.name)).toEqual(['A']);
    const counts = (await asOlga('GET', '/status')).body.counts;
    expect(counts).toMatchObject({ agents: 1, invitations: 1, codes: 1, enrolled: 1 });
    // The owner still sees everything.
    expect((await t.admin('GET', '/status')).body.counts).toMatchObject({ agents: 2, invitations: 2, codes: 2 });
    expect((await t.admin('GET', '/me')).body.fleets).toBeNull();
  });

  it('gets 404 for another fleet’s device, invitation, code and assignment, as if none existed, and commands reach nothing', async () => {
    await scopeOlga([fleet.A]);
    const missing = await asOlga('GET', '/agents/999999');
    const other = await asOlga('GET', `/agents/${inB.id}`);
    expect(other.status).toBe(404);
    expect(other.body).toEqual(missing.body);
    expect((await asOlga('GET', `/agents/${inA.id}`)).status).toBe(200);

    // A command to the other fleet's device: 404, nothing recorded, nothing published to it.
    const device = await connectAgent(t, inB);
    const box = inbox(device);
    await device.subscribeAsync({ [`${inB.topic}/#`]: { qos: 1 } });
    for (const command of ['lock', 'ping'])
      expect((await asOlga('POST', `/agents/${inB.id}/commands`, { command })).status).toBe(404);
    for (const [method, path] of [
      ['POST', `/agents/${inB.id}/approve`],
      ['POST', `/agents/${inB.id}/reject`],
      ['GET', `/agents/${inB.id}/tasks`],
      ['GET', `/agents/${inB.id}/policies`],
    ] as const)
      expect((await asOlga(method, path)).status, `${method} ${path}`).toBe(404);
    expect((await agentRow(t, inB.id)).lock).toBe(0);
    // Her own fleet's device is locked, through the broker.
    const deviceA = await connectAgent(t, inA);
    const boxA = inbox(deviceA);
    await deviceA.subscribeAsync({ [`${inA.topic}/#`]: { qos: 1 } });
    expect((await asOlga('POST', `/agents/${inA.id}/commands`, { command: 'lock' })).status).toBe(202);
    await boxA.next((m) => m.text === '{"lock":"now"}');
    // (Its retained fleet announcement, Command/Subscribe, is all it holds.)
    expect(box.messages.filter((m) => /\/Command\/(Lock|Ping)$/.test(m.topic))).toEqual([]);

    const invitationB = (await t.admin('POST', '/invitations', { email: 'pending.b@example.org', fleet: 'B', send_email: false }))
      .body.id as number;
    const codeB = (await t.admin('GET', '/codes')).body.items.find((c: { name: string }) => c.name === 'code B').id as number;
    const assignmentB = (await t.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: true, fleet: 'B' })).body
      .id as number;
    const assignmentA = (await t.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: true, fleet: 'A' })).body
      .id as number;
    for (const [method, path] of [
      ['GET', `/invitations/${invitationB}`],
      ['POST', `/invitations/${invitationB}/revoke`],
      ['GET', `/invitations/${invitationB}/qr.png`],
      ['GET', `/codes/${codeB}`],
      ['POST', `/codes/${codeB}/revoke`],
      ['GET', `/policy-assignments/${assignmentB}`],
      ['GET', `/deployments/${assignmentB}`],
    ] as const)
      expect((await asOlga(method, path)).status, `${method} ${path}`).toBe(404);
    expect(ids((await asOlga('GET', '/policy-assignments')).body.items)).toEqual([assignmentA]);
    expect((await asOlga('GET', '/compliance')).body.items.map((c: { agent_id: number }) => c.agent_id)).toEqual([inA.id]);
    // Nor can she create in another fleet.
    expect((await asOlga('POST', '/invitations', { email: 'x@example.org', fleet: 'B', send_email: false })).status).toBe(400);
    expect((await t.admin('GET', `/invitations/${invitationB}`)).body.status).toBe('pending');
  });

  it('is told live only of her fleet’s events, and the replay (Last-Event-ID) is filtered too', async () => {
    await scopeOlga([fleet.A]);
    const stream = openStream({ cookie: `mdm_console=${olga}` });
    const owners = openStream({ authorization: `Bearer ${t.backend.info.admin_token}` });
    expect(await stream.opened).toBe(200);
    expect(await owners.opened).toBe(200);
    const lastA = nextEvent(t, ofAgent(inA.id, 'agent.command'));
    expect((await t.admin('POST', `/agents/${inB.id}/commands`, { command: 'lock' })).status).toBe(202);
    expect((await t.admin('POST', `/agents/${inA.id}/commands`, { command: 'unlock' })).status).toBe(202);
    const last = await lastA;
    // The owner's stream carries both; hers (written after B's, in order) only A's.
    await owners.until((f) => f.id === last.id);
    await stream.until((f) => f.id === last.id);
    expect(owners.frames.some((f) => f.agent_id === inB.id)).toBe(true);
    expect(stream.frames.filter((f) => f.agent_id === inB.id)).toEqual([]);
    expect(stream.frames.some((f) => f.agent_id === inA.id)).toBe(true);
    stream.close();
    owners.close();

    // Reconnecting from the start: the replay holds A's device events, none of B's device or invitation.
    const replay = openStream({ cookie: `mdm_console=${olga}`, 'last-event-id': '1' });
    await replay.opened;
    await replay.until((f) => f.id === last.id);
    replay.close();
    expect(replay.frames.filter((f) => f.agent_id === inB.id)).toEqual([]);
    expect(replay.frames.some((f) => f.agent_id === inA.id)).toBe(true);
    const invitationB = (await t.admin('GET', `/invitations?fleet_id=${fleet.B}`)).body.items[0].id as number;
    expect(replay.frames.filter((f) => f.invitation_id === invitationB)).toEqual([]);
    // The event history as well.
    const history = (await asOlga('GET', '/events?limit=1000')).body.items as { agent_id: number | null }[];
    expect(history.some((e) => e.agent_id === inA.id)).toBe(true);
    expect(history.filter((e) => e.agent_id === inB.id)).toEqual([]);
  });
});

describe('a device deleted while she watches', () => {
  it('is told of her fleet’s by the fleet its deletion recorded, not of another fleet’s', async () => {
    await scopeOlga([fleet.A]);
    const gone = { A: await enrollAgent(t, { fleet: 'A' }), B: await enrollAgent(t, { fleet: 'B' }) };
    const stream = openStream({ cookie: `mdm_console=${olga}` });
    expect(await stream.opened).toBe(200);
    const deletedA = nextEvent(t, ofAgent(gone.A.id, 'agent.deleted'));
    expect((await t.admin('DELETE', `/agents/${gone.B.id}`)).status).toBe(204);
    expect((await t.admin('DELETE', `/agents/${gone.A.id}`)).status).toBe(204);
    const last = await deletedA;
    await Promise.race([
      stream.until((f) => f.id === last.id),
      new Promise((_, reject) => setTimeout(() => reject(new Error('her fleet’s deletion never reached her stream')), 10_000)),
    ]);
    stream.close();
    expect(stream.frames.filter((f) => f.agent_id === gone.B.id)).toEqual([]);
  });
});

describe('the audit trail of a scoped observer or operator', () => {
  it('holds her fleets’ devices’ entries, none of another fleet’s', async () => {
    await scopeOlga([fleet.A]);
    expect((await t.admin('POST', `/agents/${inB.id}/commands`, { command: 'unlock' })).status).toBe(202);
    expect((await t.admin('POST', `/agents/${inA.id}/commands`, { command: 'lock' })).status).toBe(202);
    const owners = (await t.admin('GET', '/audit?target_kind=agent')).body.items as { target_id: number }[];
    expect(owners.some((e) => e.target_id === inB.id)).toBe(true);
    const hers = await asOlga('GET', '/audit');
    expect(hers.status).toBe(200);
    const entries = hers.body.items as { target_kind: string | null; target_id: number | null }[];
    expect(entries.some((e) => e.target_kind === 'agent' && e.target_id === inA.id)).toBe(true);
    expect(entries.filter((e) => e.target_kind === 'agent' && e.target_id === inB.id)).toEqual([]);
    const invitationsB = ((await t.admin('GET', `/invitations?fleet_id=${fleet.B}`)).body.items as { id: number }[]).map(
      (i) => i.id,
    );
    expect(entries.filter((e) => e.target_kind === 'invitation' && invitationsB.includes(e.target_id!))).toEqual([]);
  });
});

describe('retrying every failed invitation email', () => {
  it('retries her fleets’ only', async () => {
    await scopeOlga([fleet.A]);
    const failed: number[] = [];
    for (const name of ['A', 'B']) {
      const id = (await t.admin('POST', '/invitations', { email: `retry.${name}@example.org`, fleet: name, send_email: false }))
        .body.id as number;
      // Its email failed (as an SMTP server refusing it would leave it; written here, the test has no such server).
      const at = new Date().toISOString();
      t.db
        .prepare(
          `INSERT INTO mail_deliveries (invitation_id, state, attempts, error, queued_at, updated_at) VALUES (?, 'failed', 5, 'refused', ?, ?)`,
        )
        .run(id, at, at);
      failed.push(id);
    }
    const retried = await asOlga('POST', '/mail/retry', {});
    expect(retried.status, retried.text).toBe(202);
    expect(retried.body.queued).toBe(1);
    const states = t.db
      .prepare(`SELECT invitation_id, state FROM mail_deliveries WHERE invitation_id IN (?, ?)`)
      .all(...failed) as {
      invitation_id: number;
      state: string;
    }[];
    expect(states.find((row) => row.invitation_id === failed[1])!.state).toBe('failed');
    expect(states.find((row) => row.invitation_id === failed[0])!.state).not.toBe('failed');
  });
});

describe('every route that takes a device, invitation, code, fleet or assignment by id', () => {
  /** Its group's object of fleet B, and a body the route accepts, so only the scope can refuse it. */
  const of = (path: string): 'agent' | 'invitation' | 'code' | 'fleet' | 'assignment' | null =>
    path.startsWith('/api/agents/:id')
      ? 'agent'
      : path.startsWith('/api/invitations/:id')
        ? 'invitation'
        : path.startsWith('/api/codes/:id')
          ? 'code'
          : path.startsWith('/api/fleets/:id')
            ? 'fleet'
            : /^\/api\/(deployments|policy-assignments)\/:id/.test(path)
              ? 'assignment'
              : null;
  const BODIES: Record<string, unknown> = {
    'agents.move': { fleet: 'A' },
    'agents.command': { command: 'ping' },
    'codes.simulate': {},
    'fleets.rename': { name: 'Renamed' },
  };

  it('answers 404 to a scoped operator for another fleet’s, changing nothing (a new such route fails here until it is scoped)', async () => {
    await scopeOlga([fleet.A]);
    const other = {
      agent: inB.id,
      invitation: (await t.admin('POST', '/invitations', { email: 'table.b@example.org', fleet: 'B', send_email: false })).body
        .id as number,
      code: (await t.admin('POST', '/codes', { name: 'table B', fleet: 'B' })).body.id as number,
      fleet: fleet.B,
      assignment: (await t.admin('POST', '/policy-assignments', { policy: 'disableRoaming', value: true, fleet: 'B' })).body
        .id as number,
    };
    const routes = Object.entries(adminRoutes).filter(([, entry]) => of(entry.path) !== null);
    expect(routes.length).toBeGreaterThan(25);
    const before = (await t.admin('GET', '/events?limit=1')).body.items[0].id as number;
    let scoped = 0;
    for (const [name, entry] of routes) {
      const path = entry.path.slice('/api'.length).replace(':id', String(other[of(entry.path)!]));
      const body = 'body' in entry ? (BODIES[name] ?? {}) : undefined;
      const answer = await asOlga(entry.method, path, body);
      // What her role may not do is refused first, whatever the id (403, the same for a missing one):
      // only what it may do reaches the scope, which answers as for a missing object.
      const allowed = permissionsNeeded(entry.permission, body).every((permission) => can('operator', permission));
      if (allowed) scoped++;
      const missing = await asOlga(entry.method, entry.path.slice('/api'.length).replace(':id', '999999'), body);
      expect(answer.status, `${name}: ${entry.method} ${path} ${answer.text}`).toBe(allowed ? 404 : 403);
      expect(answer.body, `${name}: the same answer as for a missing one`).toEqual(missing.body);
    }
    expect(scoped).toBeGreaterThan(15);
    // Nothing happened to any of them.
    const since = ((await t.admin('GET', '/events?limit=1000')).body.items as RecordedFrame[]).filter((e) => e.id > before);
    expect(
      since.filter(
        (e) =>
          e.agent_id === inB.id ||
          e.invitation_id === other.invitation ||
          e.data?.code_id === other.code ||
          e.data?.fleet_id === fleet.B ||
          e.data?.deployment_id === other.assignment,
      ),
    ).toEqual([]);
    expect((await t.admin('GET', `/agents/${inB.id}`)).status).toBe(200);
    expect((await t.admin('GET', `/invitations/${other.invitation}`)).body.status).toBe('pending');
    expect((await t.admin('GET', `/codes/${other.code}`)).body.revoked_at).toBeNull();
  });
});

describe('scopes', () => {
  it('a token is scoped within its account: narrower works, wider is refused, none inherits', async () => {
    await scopeOlga([fleet.A, fleet.C]);
    expect((await asOlga('GET', '/me')).body.fleets.map((f: { name: string }) => f.name)).toEqual(['A', 'C']);
    const wider = await asOlga('POST', '/tokens', { name: 'too wide', role: 'observer', fleet_ids: [fleet.B] });
    expect(wider.status).toBe(403);
    const narrow = await asOlga('POST', '/tokens', { name: 'C only', role: 'observer', fleet_ids: [fleet.C] });
    expect(narrow.status).toBe(201);
    expect(narrow.body.fleet_ids).toEqual([fleet.C]);
    expect((await withBearer(narrow.body.token, 'GET', '/me')).body.fleets).toEqual([{ id: fleet.C, name: 'C' }]);
    expect((await withBearer(narrow.body.token, 'GET', '/agents')).body.items).toEqual([]);
    expect((await withBearer(narrow.body.token, 'GET', `/agents/${inA.id}`)).status).toBe(404);
    // A token naming no fleet has its maker's scope.
    const inherits = await asOlga('POST', '/tokens', { name: 'mine', role: 'operator' });
    expect(inherits.body.fleet_ids).toEqual([fleet.A, fleet.C]);
    expect(ids((await withBearer(inherits.body.token, 'GET', '/agents')).body.items)).toEqual([inA.id]);
    // Her account narrowed later: her tokens narrow with it (never wider than the account).
    await scopeOlga([fleet.A]);
    expect((await withBearer(narrow.body.token, 'GET', '/me')).body.fleets).toEqual([]);
    expect((await withBearer(inherits.body.token, 'GET', '/me')).body.fleets).toEqual([{ id: fleet.A, name: 'A' }]);
    // The owner may hand out an operator token scoped to one fleet.
    const ops = await t.admin('POST', '/tokens', { name: 'B desk', role: 'operator', fleet_ids: [fleet.B] });
    expect(ops.status).toBe(201);
    expect(ids((await withBearer(ops.body.token, 'GET', '/agents')).body.items)).toEqual([inB.id]);
  });

  it('only operators and observers are scoped; unknown fleets are refused; a scoped fleet is not deleted', async () => {
    const ownerScope = await t.admin('PUT', '/accounts/1/scope', { fleet_ids: [fleet.A] });
    expect(ownerScope.status).toBe(400);
    expect(ownerScope.body.message).toMatch(/only operators and observers/);
    const adminToken = await t.admin('POST', '/tokens', { name: 'x', role: 'admin', fleet_ids: [fleet.A] });
    expect(adminToken.status).toBe(400);
    expect((await scopeOlga([987654])).status).toBe(400);
    expect((await t.admin('PUT', '/accounts/999/scope', { fleet_ids: [] })).status).toBe(404);

    await scopeOlga([fleet.C]);
    const removal = await t.admin('DELETE', `/fleets/${fleet.C}`);
    expect(removal.status).toBe(409);
    expect(removal.body.message).toMatch(/scopes Olga/);
    // Unscoped again, she sees every fleet; the fleet can go once no live token names it either.
    expect((await scopeOlga([])).body.fleet_ids).toEqual([]);
    expect(ids((await asOlga('GET', '/agents')).body.items)).toEqual(expect.arrayContaining([inA.id, inB.id]));
    for (const token of (await t.admin('GET', '/tokens')).body.items as { id: number; fleet_ids: number[] }[])
      if (token.fleet_ids.includes(fleet.C)) await t.admin('POST', `/tokens/${token.id}/revoke`);
    expect((await t.admin('DELETE', `/fleets/${fleet.C}`)).status).toBe(204);
  });
});
