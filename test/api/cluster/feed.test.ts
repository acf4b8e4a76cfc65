// Several nodes on one PostgreSQL database (issue 23, item 2): three backends in this process on
// one database, each with its own data dir (the admin token copied, as the nodes share it). What
// one node records reaches the others through the cluster feed (cluster/feed.ts: LISTEN/NOTIFY,
// read by id): the console stream of node A shows an enrollment served by node C, in order, once
// each; Last-Event-ID replays across nodes; a killed listening connection loses nothing; a
// settings change on B applies on A; a bulk job on A counts answers received by B.
import { request } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresFeed } from '../../../src-main/backend/cluster/feed.ts';
import { agentCall, enrollByHand, type TestBackend } from '../../helpers/backend.ts';
import { connectAgent } from '../../helpers/mqtt.ts';
import { startNodes } from '../../helpers/nodes.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

let database: TestDatabase;
let A: TestBackend;
let B: TestBackend;
let C: TestBackend;
const streams: Stream[] = [];

/** The listening connection's reconnection: first attempt after 1.5 s, so a burst of events falls in the outage. */
const feed = { retryMs: [1500, 200], checkEveryMs: 2000 };

beforeAll(async () => {
  database = await createTestDatabase('feed');
  [A, B, C] = (await startNodes(3, { databaseUrl: database.url, feed })) as [TestBackend, TestBackend, TestBackend];
}, 120_000);

afterAll(async () => {
  for (const stream of streams) stream.close();
  for (const node of [A, B, C]) await node?.stop();
  await database?.drop();
});

interface Frame {
  id: number;
  type: string;
  agent_id: number | null;
  invitation_id: number | null;
  agent?: { id: number; name: string } | null;
}

interface Stream {
  frames: Frame[];
  /** Resolves once the server has started the stream (its first bytes). */
  ready: Promise<void>;
  /** Resolves once a frame matches (rejects after `timeoutMs`, saying what came). */
  until(match: (frame: Frame) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** A real SSE client of a node's /api/events/stream: every frame, parsed, in arrival order. */
function openStream(node: TestBackend, headers: Record<string, string> = {}): Stream {
  const frames: Frame[] = [];
  const waiters = new Set<{ match: (frame: Frame) => boolean; resolve: () => void }>();
  let buffer = '';
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const req = request(`${node.backend.info.admin_url}/api/events/stream`, {
    headers: { accept: 'text/event-stream', authorization: `Bearer ${node.backend.info.admin_token}`, ...headers },
  });
  req.on('response', (response) => {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      markReady();
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
        const frame = JSON.parse(data) as Frame;
        frames.push(frame);
        for (const waiter of [...waiters]) {
          if (!waiter.match(frame)) continue;
          waiters.delete(waiter);
          waiter.resolve();
        }
      }
    });
  });
  req.on('error', () => {});
  req.end();
  const stream: Stream = {
    frames,
    ready,
    until: (match, timeoutMs = 15_000) =>
      frames.some(match)
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            const waiter = { match, resolve: () => (clearTimeout(timer), resolve()) };
            const timer = setTimeout(() => {
              waiters.delete(waiter);
              reject(new Error(`no such frame within ${timeoutMs} ms; got ${frames.map((f) => `${f.id} ${f.type}`).join(', ')}`));
            }, timeoutMs);
            waiters.add(waiter);
          }),
    close: () => req.destroy(),
  };
  streams.push(stream);
  return stream;
}

const maxEventId = async () => Number((await A.sql.value<number>('SELECT coalesce(max(id), 0) FROM events')) ?? 0);
const eventIdsAfter = async (id: number) =>
  (await A.sql.all<{ id: number; type: string }>('SELECT id, type FROM events WHERE id > ? ORDER BY id', [id])).map((row) => ({
    id: Number(row.id),
    type: row.type,
  }));

let invited = 0;
async function invite(node: TestBackend) {
  invited += 1;
  const email = `feed${invited}@example.com`;
  const made = await node.admin('POST', '/invitations', { email, send_email: false });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return { ...made.body, email } as { id: number; user_token: string; invitation_token: string; email: string };
}

/** The stream's frames after `start`, as id and type, in the order they came. */
const seen = (stream: Stream, start: number) =>
  stream.frames.filter((frame) => frame.id > start).map((frame) => ({ id: frame.id, type: frame.type }));

describe('the console stream of every node', () => {
  it('shows the live rows of an enrollment served by node C on node A, in order, once each', async () => {
    const start = await maxEventId();
    const stream = openStream(A);
    await stream.ready;
    const invitation = await invite(C);
    const { created } = await enrollByHand(C.apiUrl, invitation, { serial: 'FEEDC1' });
    expect(created.status).toBe(201);
    const agentId = Number(created.body.id);
    const recorded = await eventIdsAfter(start);
    expect(recorded.map((event) => event.type)).toEqual(expect.arrayContaining(['invitation.created', 'agent.enrolled']));
    await stream.until((frame) => frame.id === recorded.at(-1)!.id);
    // Every event C recorded, none twice, in id order (C's commits are serialized).
    expect(seen(stream, start)).toEqual(recorded);
    // The device-list row travels with the agent's events, read on A.
    const enrolled = stream.frames.find((frame) => frame.type === 'agent.enrolled')!;
    expect(enrolled.agent).toMatchObject({ id: agentId, name: 'FEEDC1' });
  });

  it('replays from Last-Event-ID on another node, then follows the others live, once each', async () => {
    const first = await invite(C);
    const start = Number(
      (await A.sql.value<number>(`SELECT id FROM events WHERE type = 'invitation.created' AND invitation_id = ?`, [first.id]))!,
    );
    // Made on B and C after the id the console last had: B replays them from the table.
    await invite(B);
    await invite(C);
    const stream = openStream(B, { 'last-event-id': String(start) });
    await stream.ready;
    const before = await eventIdsAfter(start);
    await stream.until((frame) => frame.id === before.at(-1)!.id);
    // Then live: what A and C record now.
    await invite(A);
    await invite(C);
    const all = await eventIdsAfter(start);
    await stream.until((frame) => frame.id === all.at(-1)!.id);
    expect(seen(stream, start)).toEqual(all);
    expect(stream.frames.some((frame) => frame.id <= start)).toBe(false);
  });

  it('loses nothing when the listening connection is killed (pg_terminate_backend): what was committed meanwhile is read', async () => {
    const feedOfA = A.backend.services.feed as PostgresFeed;
    const start = await maxEventId();
    const stream = openStream(A);
    await stream.ready;
    const reconnects = feedOfA.reconnects;
    const caught = feedOfA.caughtUp;
    const pid = await feedOfA.listeningPid();
    expect(pid).toBeGreaterThan(0);
    expect(await C.sql.value<number>('SELECT count(*) FROM pg_stat_activity WHERE pid = ?', [pid])).toBe(1);
    await C.sql.value('SELECT pg_terminate_backend(?)', [pid]);
    // While A listens again (1.5 s later), C records more.
    for (let i = 0; i < 4; i++) await invite(C);
    const during = await eventIdsAfter(start);
    await stream.until((frame) => frame.id === during.at(-1)!.id);
    // And after: live again.
    await invite(C);
    const all = await eventIdsAfter(start);
    await stream.until((frame) => frame.id === all.at(-1)!.id);
    expect(seen(stream, start)).toEqual(all);
    expect(feedOfA.reconnects).toBe(reconnects + 1);
    expect(feedOfA.caughtUp).toBeGreaterThan(caught);
    expect(await feedOfA.listeningPid()).not.toBe(pid);
  });
});

describe('the catch-up after a lost connection', () => {
  it('reads an id committed after a higher one (a gap remembered), not only those after the highest seen', async () => {
    const feedOfA = A.backend.services.feed as PostgresFeed;
    const stream = openStream(A);
    await stream.ready;
    // A writer outside the transaction lock (what concurrent writers would be): its event's id is
    // drawn now, its commit comes later.
    const writer = new pg.Client({ connectionString: database.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      const held = Number(
        (
          await writer.query<{ id: string }>(
            `WITH e AS (INSERT INTO events (at, type, message) VALUES ($1, 'server.started', 'a late commit') RETURNING id)
             SELECT id, pg_notify('mdm_events', CAST(id AS text) || ' a-writer') FROM e`,
            [new Date().toISOString()],
          )
        ).rows[0]!.id,
      );
      // C records a higher id, committed first: A sees it live.
      const later = await invite(C);
      const laterId = Number(
        await A.sql.value<number>(`SELECT id FROM events WHERE type = 'invitation.created' AND invitation_id = ?`, [later.id]),
      );
      expect(laterId).toBeGreaterThan(held);
      await stream.until((frame) => frame.id === laterId);
      // A's listening connection is lost; the held event commits meanwhile (its notice never reaches A).
      const pid = await feedOfA.listeningPid();
      await C.sql.value('SELECT pg_terminate_backend(?)', [pid]);
      await writer.query('COMMIT');
      await stream.until((frame) => frame.id === held);
      expect(stream.frames.filter((frame) => frame.id === held)).toHaveLength(1);
    } finally {
      await writer.end();
    }
  });
});

describe('settings changed on another node', () => {
  const eventually = async <T>(read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 10_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (ok(value) || Date.now() > deadline) return value;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it('apply on node A without a restart: the general settings (deeplink base, helpdesk) and the sign-in settings', async () => {
    const patched = await B.admin('PATCH', '/settings', {
      helpdesk_name: 'Helpdesk of node B',
      deeplink_base_url: 'https://enroll.example.com',
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const onA = await eventually(
      () => A.admin('GET', '/settings'),
      (read) => read.body.helpdesk_name === 'Helpdesk of node B',
    );
    expect(onA.body).toMatchObject({ helpdesk_name: 'Helpdesk of node B', deeplink_base_url: 'https://enroll.example.com' });
    // What A makes now carries them: an invitation's deeplink.
    const invitation = await A.admin('POST', '/invitations', { email: 'after-settings@example.com', send_email: false });
    expect(invitation.status).toBe(201);
    expect(JSON.stringify(invitation.body)).toContain('https://enroll.example.com/deeplink/');

    const signIn = await B.admin('PATCH', '/sign-in-settings', { session_idle_minutes: 45 });
    expect(signIn.status, JSON.stringify(signIn.body)).toBe(200);
    const signInOnA = await eventually(
      () => A.admin('GET', '/sign-in-settings'),
      (read) => read.body.session_idle_minutes === 45,
    );
    expect(signInOnA.body.session_idle_minutes).toBe(45);
  });
});

describe('a bulk job', () => {
  it('started on node A counts the answers node B receives', async () => {
    const invitation = await invite(A);
    const { session, created } = await enrollByHand(A.apiUrl, invitation, { serial: 'FEEDJOB1' });
    expect(created.status).toBe(201);
    const agentId = Number(created.body.id);
    const record = await agentCall(A.apiUrl, 'GET', `PluginMdmAgent/${agentId}?session_token=${session}`);
    expect(record.status).toBe(200);
    // A lock for a device not connected: kept for it (retained), its answer awaited.
    const job = await A.admin('POST', '/jobs', { action: 'lock', selection: { ids: [agentId] } });
    expect(job.status, JSON.stringify(job.body)).toBe(202);
    await A.backend.jobs.idle();
    expect((await A.admin('GET', `/jobs/${job.body.id}`)).body.results).toMatchObject([{ agent_id: agentId, status: 'offline' }]);
    // The device answers over HTTP, through the balancer, to node B.
    const agentSession = await agentCall(B.apiUrl, 'GET', `initSession?user_token=${record.body.api_token}`);
    expect(agentSession.status).toBe(200);
    const pong = await agentCall(B.apiUrl, 'PUT', `PluginMdmAgent/${agentId}?session_token=${agentSession.body.session_token}`, {
      body: { input: { _pong: '!' } },
    });
    expect(pong.status, JSON.stringify(pong.body)).toBe(200);
    const deadline = Date.now() + 10_000;
    let detail = (await A.admin('GET', `/jobs/${job.body.id}`)).body;
    while (detail.counts.answered !== 1 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      detail = (await A.admin('GET', `/jobs/${job.body.id}`)).body;
    }
    expect(detail.counts).toMatchObject({ answered: 1, offline: 0 });
    expect(detail.results).toMatchObject([{ agent_id: agentId, status: 'answered' }]);
  });
});

describe('a ping', () => {
  it('sent from node A and answered to node B is recorded as its reply, seen on A', async () => {
    const invitation = await invite(A);
    const { session, created } = await enrollByHand(A.apiUrl, invitation, { serial: 'FEEDPING1' });
    const agentId = Number(created.body.id);
    const record = (await agentCall(A.apiUrl, 'GET', `PluginMdmAgent/${agentId}?session_token=${session}`)).body;
    // Connected to A's broker, so A may ping it.
    const device = await connectAgent(A, { serial: 'FEEDPING1', password: record.mqttpasswd });
    try {
      const stream = openStream(A);
      const onB = openStream(B);
      await Promise.all([stream.ready, onB.ready]);
      const ping = await A.admin('POST', `/agents/${agentId}/commands`, { command: 'ping' });
      expect(ping.status, JSON.stringify(ping.body)).toBe(202);
      // B has heard of it (a reply faster than the feed, a few milliseconds, would be a plain status).
      await onB.until((frame) => frame.agent_id === agentId && frame.type === 'agent.command');
      // The device answers over HTTP, and the balancer sends it to B.
      const agentSession = await agentCall(B.apiUrl, 'GET', `initSession?user_token=${record.api_token}`);
      const pong = await agentCall(
        B.apiUrl,
        'PUT',
        `PluginMdmAgent/${agentId}?session_token=${agentSession.body.session_token}`,
        {
          body: { input: { _pong: '!' } },
        },
      );
      expect(pong.status, JSON.stringify(pong.body)).toBe(200);
      // B knew of A's ping: the reply (what the console waits for), not an unexpected status.
      await stream.until((frame) => frame.agent_id === agentId && frame.type === 'agent.ping_reply');
      expect(stream.frames.filter((frame) => frame.agent_id === agentId && frame.type === 'agent.status')).toEqual([]);
    } finally {
      device.end(true);
    }
  });
});

describe('the alert rules', () => {
  it('are evaluated again shortly after a relevant event on another node', async () => {
    // One node evaluates them (it holds the duty alert-evaluation); the event comes from another.
    const deadline = Date.now() + 15_000;
    let holder: TestBackend | undefined;
    while (!(holder = [A, B, C].find((node) => node.backend.duties.holds('alert-evaluation'))) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(holder).toBeDefined();
    const evaluator = holder!;
    const other = evaluator === C ? B : C;
    const rule = await evaluator.admin('POST', '/alerts/rules', { kind: 'invitation_expiring', threshold: 48 });
    expect(rule.status, JSON.stringify(rule.body)).toBe(201);
    // Let the first evaluation (on the rule's creation) pass: the invitations so far last 7 days.
    await evaluator.admin('POST', '/alerts/evaluate');
    const open = async () => (await evaluator.admin('GET', '/alerts/incidents?state=open')).body.items as { subject: string }[];
    expect(await open()).toEqual([]);
    // An invitation expiring within the threshold, made on another node: the next minute is far, the event is not.
    const invitation = await other.admin('POST', '/invitations', { email: 'soon@example.com', days: 1, send_email: false });
    expect(invitation.status).toBe(201);
    const until = Date.now() + 10_000;
    while ((await open()).length === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await open()).toMatchObject([{ subject: 'Invitation of soon@example.com' }]);
  });
});
