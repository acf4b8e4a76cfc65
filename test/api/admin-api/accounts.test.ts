// Admins as people (issue 22, item 1): the owner made on first start, set up once through the link
// `serve` prints, signing in by email and password (throttled per address and per account, every
// attempt recorded), the console session carrying the account, the data dir's admin token as the
// owner's API token, and personal API tokens with a role, an expiry, a last use, revocable.
// Real HTTP against a real backend and SQLite file; other clients come from 127.0.0.2 ….
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { callFrom } from '../../helpers/from-address.ts';
import { sameOriginJson, sessionCookieOf, withBearer } from '../../helpers/console-session.ts';

let t: TestBackend;
let adminUrl: string;
const EMAIL = 'ana.ruiz@example.org';
const PASSWORD = 'correct horse battery';

beforeAll(async () => {
  t = await startTestBackend({ ownerName: 'ana' });
  adminUrl = t.backend.info.admin_url;
});
afterAll(async () => {
  await t?.stop();
});

const json = sameOriginJson;
const cookieOf = sessionCookieOf;
const signIn = (email: string, password: string, address = '127.0.0.1') =>
  callFrom(address, `${adminUrl}/auth/password`, json({ email, password }));
const withCookie = (cookie: string, path: string) =>
  callFrom('127.0.0.1', `${adminUrl}/api${path}`, { headers: { cookie: `mdm_console=${cookie}` } });
const asBearer = (bearer: string, path: string, method = 'GET', body?: unknown) =>
  withBearer(adminUrl, bearer, path, method, body);
const events = async (type: string) =>
  (
    (await t.admin('GET', '/events?limit=1000')).body.items as { type: string; message: string; data: Record<string, unknown> }[]
  ).filter((e) => e.type === type);

describe('the owner', () => {
  it('is made on first start; the data dir admin token is its API token, used by the CLI and scripts', async () => {
    const me = await t.admin('GET', '/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      account: { id: 1, email: null, display_name: 'ana', role: 'owner', has_password: false },
      via: 'token',
      token: { name: 'admin token (data dir)', role: 'owner' },
      role: 'owner',
    });
    const tokens = (await t.admin('GET', '/tokens')).body.items;
    expect(tokens).toHaveLength(1);
    expect(tokens[0]).toMatchObject({ kind: 'data-dir', status: 'active', expires_at: null });
    expect(tokens[0].last_used_at).not.toBeNull();
    expect(JSON.stringify(tokens)).not.toContain(t.backend.info.admin_token);
    // It is replaced with the file, never revoked (the CLI would be locked out).
    expect((await t.admin('POST', `/tokens/${tokens[0].id}/revoke`)).status).toBe(409);
  });

  it('is set up once through the link serve prints: email, name, password; then signed in', async () => {
    const setupUrl = t.backend.info.setup_url!;
    expect(setupUrl).toMatch(/\/setup\?token=[0-9a-f]{48}$/);
    const token = new URL(setupUrl).searchParams.get('token')!;
    // (The link opens the console's set-up page: test/e2e/accounts.spec.ts.)

    const body = { token, email: EMAIL, display_name: 'Ana Ruiz', password: PASSWORD };
    // Another origin cannot use it; a wrong secret, a short password or a bad email changes nothing.
    const crossSite = await callFrom('127.0.0.1', `${adminUrl}/auth/setup`, json(body, { 'sec-fetch-site': 'cross-site' }));
    expect(crossSite.status).toBe(403);
    expect((await callFrom('127.0.0.1', `${adminUrl}/auth/setup`, json({ ...body, token: 'f'.repeat(48) }))).status).toBe(410);
    const short = await callFrom('127.0.0.1', `${adminUrl}/auth/setup`, json({ ...body, password: 'short' }));
    expect(short.status).toBe(400);
    expect((await callFrom('127.0.0.1', `${adminUrl}/auth/setup`, json({ ...body, email: 'not an email' }))).status).toBe(400);
    expect((await t.admin('GET', '/me')).body.account.has_password).toBe(false);

    const done = await callFrom('127.0.0.1', `${adminUrl}/auth/setup`, json(body));
    expect(done.status).toBe(200);
    expect(done.body.account).toMatchObject({ email: EMAIL, display_name: 'Ana Ruiz', role: 'owner', has_password: true });
    const cookie = cookieOf(done)!;
    expect((await withCookie(cookie, '/me')).body).toMatchObject({ via: 'session', account: { email: EMAIL }, token: null });

    // Used once: the same link, again, is refused and changes nothing.
    const again = await callFrom('127.0.0.1', `${adminUrl}/auth/setup`, json({ ...body, password: 'another password 123' }));
    expect(again.status).toBe(410);
    expect(again.body.error).toBe('ERROR_SETUP_USED');
    expect((await signIn(EMAIL, PASSWORD)).status).toBe(200);
    // Only a hash is kept: Argon2id.
    const stored = (await t.sql.value(`SELECT password_hash FROM admin_accounts WHERE id = 1`)) as string;
    expect(stored).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(stored).not.toContain(PASSWORD);
  });
});

describe('signing in with email and password', () => {
  it('opens a session carrying the account; a wrong password is refused and recorded; sign-in and sign-out recorded', async () => {
    const wrong = await signIn(EMAIL, 'not the password', '127.0.0.5');
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('ERROR_SIGN_IN');
    expect(cookieOf(wrong)).toBeUndefined();
    const unknown = await signIn('nobody@example.org', PASSWORD, '127.0.0.5');
    expect(unknown.status).toBe(401);
    expect(unknown.body.message).toBe(wrong.body.message); // no telling which emails exist
    const failed = await events('admin.sign_in_failed');
    // (Newest first.)
    expect(failed.filter((e) => e.data.address === '127.0.0.5').map((e) => [e.data.with, e.data.email])).toEqual([
      ['password', 'nobody@example.org'],
      ['password', EMAIL],
    ]);

    // Case and spaces of the email do not matter.
    const good = await signIn(`  ${EMAIL.toUpperCase()} `, PASSWORD, '127.0.0.6');
    expect(good.status).toBe(200);
    const cookie = cookieOf(good)!;
    const me = await withCookie(cookie, '/me');
    expect(me.body).toMatchObject({ via: 'session', role: 'owner', account: { id: 1, email: EMAIL } });
    expect(me.body.account.last_sign_in_at).not.toBeNull();
    const stored = await t.sql.all(`SELECT account_id, address FROM admin_sessions WHERE account_id IS NOT NULL`);
    expect(stored).toContainEqual({ account_id: 1, address: '127.0.0.6' });
    const signedIn = await events('admin.signed_in');
    expect(signedIn.some((e) => e.data.address === '127.0.0.6' && e.data.with === 'password' && e.data.account_id === 1)).toBe(
      true,
    );

    const out = await callFrom('127.0.0.1', `${adminUrl}/auth/sign-out`, {
      method: 'POST',
      headers: { 'sec-fetch-site': 'same-origin', cookie: `mdm_console=${cookie}` },
    });
    expect(out.status).toBe(200);
    expect((await withCookie(cookie, '/me')).status).toBe(401);
    expect((await events('admin.signed_out')).some((e) => e.data.account_id === 1)).toBe(true);
  });

  it('with the admin token or a sign-in link, signs in as the owner', async () => {
    const ticket = await t.admin('POST', '/console-tickets');
    const link = await callFrom('127.0.0.1', ticket.body.console_url);
    expect(link.status).toBe(302);
    expect((await withCookie(cookieOf(link)!, '/me')).body).toMatchObject({ via: 'session', account: { id: 1, role: 'owner' } });
  });
});

describe('personal API tokens', () => {
  it('have a role no higher than their account, an expiry and a last use; shown once; revoked at once', async () => {
    const created = await t.admin('POST', '/tokens', { name: 'backup script', role: 'observer', days: 30 });
    expect(created.status).toBe(201);
    const { token, id } = created.body;
    expect(token).toMatch(/^mdm_[0-9a-f]{64}$/);
    expect(created.body).toMatchObject({
      name: 'backup script',
      role: 'observer',
      kind: 'personal',
      status: 'active',
      last_used_at: null,
    });
    const days = (Date.parse(created.body.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);

    const me = await asBearer(token, '/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ via: 'token', role: 'observer', token: { id, name: 'backup script' }, account: { id: 1 } });
    const listed = (await t.admin('GET', '/tokens')).body.items;
    const row = listed.find((x: { id: number }) => x.id === id);
    expect(row.last_used_at).not.toBeNull();
    expect(row.token).toBeUndefined();
    expect(JSON.stringify(listed)).not.toContain(token);
    // Only its hash is stored.
    expect(JSON.stringify(await t.sql.all(`SELECT * FROM api_tokens`))).not.toContain(token.slice(4));

    const revoked = await t.admin('POST', `/tokens/${id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    expect((await asBearer(token, '/me')).status).toBe(401);
    expect((await events('account.token_revoked')).some((e) => e.data.token_id === id)).toBe(true);
    expect((await t.admin('POST', '/tokens/9999/revoke')).status).toBe(404);
  });

  it('stop working once expired', async () => {
    const { token, id } = (await t.admin('POST', '/tokens', { name: 'short-lived', role: 'admin', days: 1 })).body;
    expect((await asBearer(token, '/status')).status).toBe(200);
    await t.sql.run(`UPDATE api_tokens SET expires_at = ? WHERE id = ?`, [new Date(Date.now() - 1000).toISOString(), id]);
    expect((await asBearer(token, '/status')).status).toBe(401);
    const row = (await t.admin('GET', '/tokens')).body.items.find((x: { id: number }) => x.id === id);
    expect(row.status).toBe('expired');
  });

  it('are refused a role above their maker, and bad input gets a 400', async () => {
    const operator = (await t.admin('POST', '/tokens', { name: 'helpdesk', role: 'operator' })).body.token;
    // A token acts with its own role: an operator token of the owner makes no admin token.
    const escalate = await asBearer(operator, '/tokens', 'POST', { name: 'up', role: 'admin' });
    expect(escalate.status).toBe(403);
    expect(escalate.body.message).toBe('An operator cannot make a token with the role admin');
    expect((await t.admin('POST', '/tokens', { name: 'x', role: 'root' })).status).toBe(400);
    expect((await t.admin('POST', '/tokens', { name: ' ', role: 'admin' })).status).toBe(400);
    expect((await t.admin('POST', '/tokens', { name: 'x', role: 'admin', days: 0 })).status).toBe(400);
    expect((await t.admin('POST', '/tokens', { name: 'x', role: 'admin', extra: 1 })).status).toBe(400);
    // An admin account (made here in its table: inviting admins is a later step) cannot mint an owner token.
    await t.sql.run(
      `INSERT INTO admin_accounts (email, display_name, role, created_at) VALUES ('bo@example.org', 'Bo', 'admin', ?)`,
      [new Date().toISOString()],
    );
    const boId = (await t.sql.value(`SELECT id FROM admin_accounts WHERE email = 'bo@example.org'`)) as number;
    const bo = 'mdm_' + 'b'.repeat(64);
    const { createHash } = await import('node:crypto');
    await t.sql.run(`INSERT INTO api_tokens (account_id, name, role, token_hash, created_at) VALUES (?, 'bo', 'admin', ?, ?)`, [
      boId,
      createHash('sha256').update(bo).digest('hex'),
      new Date().toISOString(),
    ]);
    const refused = await asBearer(bo, '/tokens', 'POST', { name: 'escalate', role: 'owner' });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('An admin cannot make a token with the role owner');
    expect((await asBearer(bo, '/tokens', 'POST', { name: 'mine', role: 'operator' })).status).toBe(201);
    // Bo sees Bo's tokens only, and cannot revoke the owner's.
    const bos = (await asBearer(bo, '/tokens')).body.items as { account_id: number }[];
    expect(bos.every((x) => x.account_id === boId)).toBe(true);
    const ownerToken = (await t.admin('GET', '/tokens')).body.items.find((x: { name: string }) => x.name === 'helpdesk');
    expect((await asBearer(bo, `/tokens/${ownerToken.id}/revoke`, 'POST')).status).toBe(404);
    expect((await asBearer(operator, '/me')).status).toBe(200);
  });
});

describe('sign-in throttling', () => {
  it('slows guessing per account across addresses, and per address; each refusal recorded', async () => {
    const statuses: number[] = [];
    // Ten wrong passwords for one account from ten addresses (the one above was forgotten when it
    // signed in): then that account is slowed from everywhere (growing delays: sign-in-sessions.test.ts).
    for (let i = 0; i < 12; i++) statuses.push((await signIn(EMAIL, `guess ${i}`, `127.0.1.${i + 1}`)).status);
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
    const slowed = await signIn(EMAIL, PASSWORD, '127.0.2.1');
    expect(slowed.status).toBe(429);
    expect(Number(slowed.headers['retry-after'])).toBeGreaterThan(0);
    // Other accounts from other addresses are not: the data dir's token still works (the CLI).
    expect((await t.admin('GET', '/me')).status).toBe(200);
    const throttled = await events('admin.sign_in_throttled');
    expect(throttled.some((e) => e.data.email === EMAIL)).toBe(true);
  });
});
