// Several nodes on one PostgreSQL database (issue 23, items 2 and 4): rate limits, sign-in
// throttles, one-time sign-in tickets, two-factor challenges and console sessions are the
// database's, so they hold across nodes. Three real backends (in this process, each with its own
// data dir and ports) on one real PostgreSQL database; the requests go to the nodes in turn, as a
// load balancer sends them. Before, each node kept these in its own memory: a limit of N a minute
// was N per node, a ticket made on A was unknown on B.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { sameOriginJson, sessionCookieOf, withSession } from '../../helpers/console-session.ts';
import { callFrom } from '../../helpers/from-address.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

let database: TestDatabase;
const nodes: TestBackend[] = [];
let clock = Date.parse('2026-11-26T09:00:00Z');
const EMAIL = 'ana.ruiz@example.org';
const PASSWORD = 'correct horse battery';
let ownerCookie = '';

const adminUrlOf = (node: TestBackend) => node.backend.info.admin_url;
/** The nodes in turn, from the `i`-th request: A, B, C, A, … */
const nodeAt = (i: number) => nodes[i % nodes.length]!;
const post = (node: TestBackend, path: string, body: unknown, address = '127.0.0.1') =>
  callFrom(address, `${adminUrlOf(node)}${path}`, sameOriginJson(body));
const signIn = (node: TestBackend, email: string, password: string, address = '127.0.0.1') =>
  post(node, '/auth/password', { email, password }, address);
const api = (node: TestBackend, cookie: string, method: string, path: string, body?: unknown) =>
  withSession(adminUrlOf(node), cookie, method, path, body);
const codeOf = (secret: string) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: clock });

beforeAll(async () => {
  database = await createTestDatabase('across_nodes');
  const options = {
    databaseUrl: database.url,
    ownerName: 'ana',
    // Each node runs its own embedded broker here (one process), which serve refuses beside other nodes.
    embeddedBrokerPerNode: true,
    now: () => clock,
    sessionLimits: { perToken: { burst: 4, perMinute: 1 }, perAddress: { burst: 5, perMinute: 1 } },
    signInFailures: { free: 3, firstDelayMs: 60_000 },
  };
  const first = await startTestBackend({ ...options, nodeName: 'node-a' });
  nodes.push(first);
  // The nodes share the admin token (an operator copies the first node's to the others).
  for (const nodeName of ['node-b', 'node-c']) {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-node-'));
    copyFileSync(join(first.dataDir, 'admin-token'), join(dataDir, 'admin-token'));
    nodes.push(await startTestBackend({ ...options, dataDir, nodeName }));
  }
}, 120_000);
afterAll(async () => {
  for (const node of nodes) await node.stop();
  for (const node of nodes.slice(1)) rmSync(node.dataDir, { recursive: true, force: true });
  await database?.drop();
});

describe('rate limits across nodes', () => {
  it('a limit of 4 sessions a minute per user token is 4 in all, hitting the nodes in turn', async () => {
    const invited = await nodes[0]!.admin('POST', '/invitations', { email: 'dev@example.com', send_email: false });
    expect(invited.status).toBe(201);
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++) {
      statuses.push((await agentCall(nodeAt(i).apiUrl, 'GET', `initSession?user_token=${invited.body.user_token}`)).status);
    }
    // Per node (before): A, B and C each allowed 4 of their 3, then 3, then 3 (all 9 passed).
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429, 429]);
    const refused = await agentCall(nodes[1]!.apiUrl, 'GET', `initSession?user_token=${invited.body.user_token}`);
    expect(refused.body).toEqual([
      'ERROR_TOO_MANY_REQUESTS',
      expect.stringMatching(/^Too many sessions opened with this token; retry in \d+ s$/),
    ]);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('unknown user tokens from one address: its allowance of 5 is 5 in all', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      statuses.push((await agentCall(nodeAt(i).apiUrl, 'GET', `initSession?user_token=${'0123456789'[i]!.repeat(40)}`)).status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
  });
});

describe('console sign-in across nodes', () => {
  it("the owner's set-up link printed by node A works on node C, once: then no node's link works", async () => {
    const tokenOf = (node: TestBackend) => new URL(node.backend.info.setup_url!).searchParams.get('token')!;
    const form = (node: TestBackend, token: string) =>
      post(node, '/auth/setup', { token, email: EMAIL, display_name: 'Ana Ruiz', password: PASSWORD });
    const done = await form(nodes[2]!, tokenOf(nodes[0]!));
    expect(done.status).toBe(200);
    ownerCookie = sessionCookieOf(done)!;
    for (const node of nodes) {
      for (const printedBy of nodes) {
        const again = await form(node, tokenOf(printedBy));
        expect(again.status).toBe(410);
        expect(again.body.error).toBe('ERROR_SETUP_USED');
      }
    }
    expect((await api(nodes[1]!, ownerCookie, 'GET', '/me')).status).toBe(200);
  });

  it('failed sign-ins from one address are counted on every node: throttled on the next node', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await signIn(nodeAt(i), 'nobody@example.org', 'guess', '127.0.5.1')).status);
    // Three free failures in all (one on each node), then the address waits a minute on every node.
    expect(statuses).toEqual([401, 401, 401, 429]);
    for (const node of nodes) {
      const slowed = await signIn(node, EMAIL, PASSWORD, '127.0.5.1');
      expect(slowed.status).toBe(429);
      expect(slowed.body.error).toBe('ERROR_TOO_MANY_SIGN_INS');
      expect(Number(slowed.headers['retry-after'])).toBeGreaterThan(0);
    }
    // Another address is not slowed.
    expect((await signIn(nodes[2]!, EMAIL, PASSWORD, '127.0.5.2')).status).toBe(200);
  });

  it('failed sign-ins of one account are counted on every node, whichever addresses they come from', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await signIn(nodeAt(i), EMAIL, `guess ${i}`, `127.0.6.${i + 1}`)).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await signIn(nodes[1]!, EMAIL, PASSWORD, '127.0.6.9')).status).toBe(429);
    clock += 61_000; // the wait is over, everywhere
    expect((await signIn(nodes[1]!, EMAIL, PASSWORD, '127.0.6.9')).status).toBe(200);
  });

  it('a sign-in link made on node A signs in on node B, once: a second use anywhere is refused', async () => {
    const made = await nodes[0]!.admin('POST', '/console-tickets');
    expect(made.status).toBe(201);
    const ticket = new URL(made.body.console_url as string).searchParams.get('ticket')!;
    const onB = await callFrom('127.0.7.1', `${adminUrlOf(nodes[1]!)}/auth?ticket=${ticket}`);
    expect(onB.status).toBe(302);
    const cookie = sessionCookieOf(onB)!;
    expect(cookie).toMatch(/^[0-9a-f]{64}$/);
    expect((await api(nodes[2]!, cookie, 'GET', '/me')).status).toBe(200);
    for (const node of nodes) {
      const again = await callFrom('127.0.7.1', `${adminUrlOf(node)}/auth?ticket=${ticket}`);
      expect(again.status).toBe(302);
      expect(again.headers.location).toBe('/sign-in?link=used');
      expect(sessionCookieOf(again)).toBeUndefined();
    }
    // Pasted on the sign-in page, too: refused on every node.
    expect((await post(nodes[2]!, '/auth/sign-in', { credential: made.body.console_url }, '127.0.7.2')).status).toBe(401);
  });

  it('the same link used on two nodes at once signs in once', async () => {
    const made = await nodes[1]!.admin('POST', '/console-tickets');
    const ticket = new URL(made.body.console_url as string).searchParams.get('ticket')!;
    const answers = await Promise.all(
      nodes.flatMap((node) => [1, 2].map(() => callFrom('127.0.7.3', `${adminUrlOf(node)}/auth?ticket=${ticket}`))),
    );
    expect(answers.filter((answer) => sessionCookieOf(answer) !== undefined)).toHaveLength(1);
  });

  it('a two-factor sign-in started on node A is completed on node B; its challenge is then used up everywhere', async () => {
    const setup = await api(nodes[0]!, ownerCookie, 'POST', '/me/two-factor/setup');
    expect(setup.status).toBe(200);
    const secret = setup.body.secret as string;
    // Confirmed on another node than the one that drew the secret.
    expect((await api(nodes[2]!, ownerCookie, 'POST', '/me/two-factor/confirm', { code: codeOf(secret) })).status).toBe(200);
    clock += 30_000; // the code used to enrol is spent: the app shows the next one

    const first = await signIn(nodes[0]!, EMAIL, PASSWORD, '127.0.8.1');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ signed_in: false, second_step: 'code' });
    const { challenge } = first.body;
    const done = await post(nodes[1]!, '/auth/two-factor', { challenge, code: codeOf(secret) }, '127.0.8.1');
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ signed_in: true, account: { email: EMAIL, two_factor: true } });
    const cookie = sessionCookieOf(done)!;
    expect((await api(nodes[0]!, cookie, 'GET', '/me')).status).toBe(200);
    for (const node of nodes) {
      expect((await post(node, '/auth/two-factor', { challenge, code: codeOf(secret) }, '127.0.8.1')).status).toBe(410);
    }

    // Wrong codes for one challenge are counted in all: five, on the nodes in turn, end it (each is
    // a failure of the account too: past its free ones, the next waits its Retry-After).
    clock += 30_000;
    const second = await signIn(nodes[2]!, EMAIL, PASSWORD, '127.0.8.2');
    const wrong: number[] = [];
    for (let i = 0; wrong.length < 5; i++) {
      const node = nodeAt(wrong.length);
      const answer = await post(
        node,
        '/auth/two-factor',
        { challenge: second.body.challenge, code: '000000' },
        `127.0.8.${10 + i}`,
      );
      if (answer.status === 429) clock += Number(answer.headers['retry-after']) * 1000;
      else wrong.push(answer.status);
    }
    expect(wrong).toEqual([401, 401, 401, 401, 401]);
    const ended = await post(
      nodes[0]!,
      '/auth/two-factor',
      { challenge: second.body.challenge, code: codeOf(secret) },
      '127.0.8.20',
    );
    expect(ended.status).toBe(410);
  });

  it('a console session made on node A works on node B; signing out on node B ends it on node A', async () => {
    const made = await nodes[0]!.admin('POST', '/console-tickets');
    const onA = await callFrom('127.0.9.1', made.body.console_url as string);
    const cookie = sessionCookieOf(onA)!;
    for (const node of nodes) expect((await api(node, cookie, 'GET', '/status')).status).toBe(200);
    const out = await callFrom('127.0.9.1', `${adminUrlOf(nodes[1]!)}/auth/sign-out`, {
      method: 'POST',
      headers: { cookie: `mdm_console=${cookie}`, 'sec-fetch-site': 'same-origin' },
    });
    expect(out.status).toBe(200);
    for (const node of nodes) expect((await api(node, cookie, 'GET', '/status')).status).toBe(401);
  });
});
