// Two-factor sign-in (issue 22, item 3): an admin enrols an authenticator app from the QR code (or
// the secret) on their own page, confirms with a code and gets ten single-use recovery codes; then
// signing in asks for a code (each accepted once) or a recovery code (used up); the owner can
// require two-factor for everyone, and an admin without it enrols at sign-in before anything else.
// Real HTTP and SQLite; the codes are computed here from the secret the server showed, at the
// server's clock, which the test drives.
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../../src-main/backend/accounts/passwords.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { callFrom } from '../../helpers/from-address.ts';
import { sameOriginJson, sessionCookieOf, withSession } from '../../helpers/console-session.ts';
import { decodeQrPng } from '../../helpers/qr.ts';

let t: TestBackend;
let adminUrl: string;
let clock = Date.parse('2026-11-26T09:00:00Z');
const EMAIL = 'ana.ruiz@example.org';
const PASSWORD = 'correct horse battery';
const BO = 'bo.berg@example.org';
const BO_PASSWORD = 'bo’s long password';
let ownerCookie = '';
let boId = 0;

const json = sameOriginJson;
const cookieOf = sessionCookieOf;
const post = (path: string, body: unknown, address = '127.0.0.1') => callFrom(address, `${adminUrl}${path}`, json(body));
const signIn = (email: string, password: string, address = '127.0.0.1') => post('/auth/password', { email, password }, address);
/** An admin API call with a console session's cookie (from the console's own origin). */
const api = (cookie: string, method: string, path: string, body?: unknown) => withSession(adminUrl, cookie, method, path, body);
/** The code an authenticator app holding `secret` shows at the server's clock (plus `periods` × 30 s). */
const codeOf = (secret: string, periods = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: clock + periods * 30_000,
  });
const audit = async () =>
  (await t.admin('GET', '/audit?limit=1000')).body.items as { action: string; message: string; target_name: string | null }[];

beforeAll(async () => {
  t = await startTestBackend({ ownerName: 'ana', now: () => clock });
  adminUrl = t.backend.info.admin_url;
  const token = new URL(t.backend.info.setup_url!).searchParams.get('token')!;
  const done = await post('/auth/setup', { token, email: EMAIL, display_name: 'Ana Ruiz', password: PASSWORD });
  ownerCookie = cookieOf(done)!;
  // A second admin (inviting admins is another item's: made here in its table).
  t.db
    .prepare(
      `INSERT INTO admin_accounts (email, display_name, role, password_hash, created_at) VALUES (?, 'Bo Berg', 'admin', ?, ?)`,
    )
    .run(BO, await hashPassword(BO_PASSWORD), new Date().toISOString());
  boId = t.db.prepare(`SELECT id FROM admin_accounts WHERE email = ?`).pluck().get(BO) as number;
});
afterAll(async () => {
  await t?.stop();
});

let secret = '';
let recovery: string[] = [];

describe('enrolling an authenticator app on one’s own page', () => {
  it('shows a QR code and the secret; a wrong code is refused; the right one turns it on with ten recovery codes, once', async () => {
    expect((await api(ownerCookie, 'GET', '/me/two-factor')).body).toEqual({
      enabled: false,
      enabled_at: null,
      recovery_codes_left: 0,
      required: false,
    });
    const setup = await api(ownerCookie, 'POST', '/me/two-factor/setup');
    expect(setup.status).toBe(200);
    secret = setup.body.secret;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const url = new URL(setup.body.otpauth_url);
    expect(url.protocol).toBe('otpauth:');
    expect(url.searchParams.get('secret')).toBe(secret);
    expect(url.searchParams.get('issuer')).toBe('MDM Console');
    expect(decodeURIComponent(url.pathname)).toContain(EMAIL);
    // The QR code carries the same otpauth URL.
    const png = Buffer.from(setup.body.qr_data_url.replace(/^data:image\/png;base64,/, ''), 'base64');
    expect(decodeQrPng(png)).toBe(setup.body.otpauth_url);

    // A wrong code, or one for another secret: refused, and two-factor stays off.
    const wrong = await api(ownerCookie, 'POST', '/me/two-factor/confirm', { code: codeOf('JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP') });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('ERROR_TWO_FACTOR_CODE');
    expect((await api(ownerCookie, 'POST', '/me/two-factor/confirm', { code: 'abc' })).status).toBe(400);
    expect((await api(ownerCookie, 'GET', '/me/two-factor')).body.enabled).toBe(false);

    const confirmed = await api(ownerCookie, 'POST', '/me/two-factor/confirm', { code: codeOf(secret) });
    expect(confirmed.status).toBe(200);
    recovery = confirmed.body.recovery_codes;
    expect(recovery).toHaveLength(10);
    expect(new Set(recovery).size).toBe(10);
    for (const code of recovery) expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    const status = (await api(ownerCookie, 'GET', '/me/two-factor')).body;
    expect(status).toMatchObject({ enabled: true, recovery_codes_left: 10, required: false });
    expect((await api(ownerCookie, 'GET', '/me')).body.account.two_factor).toBe(true);
    // Shown once: no second enrolment while it is on, and neither the secret nor a code is in any answer, the audit or the history.
    expect((await api(ownerCookie, 'POST', '/me/two-factor/setup')).status).toBe(409);
    const everywhere = JSON.stringify([
      (await api(ownerCookie, 'GET', '/me')).body,
      (await api(ownerCookie, 'GET', '/me/two-factor')).body,
      (await t.admin('GET', '/audit?limit=1000')).body,
      (await t.admin('GET', '/events?limit=1000')).body,
    ]);
    expect(everywhere).not.toContain(secret);
    for (const code of recovery) expect(everywhere).not.toContain(code);
    // Recovery codes are kept as hashes only.
    const stored = JSON.stringify(t.db.prepare(`SELECT * FROM admin_recovery_codes`).all());
    for (const code of recovery) expect(stored).not.toContain(code.replace('-', ''));
    expect((await audit()).some((e) => e.action === 'account.two_factor_enabled')).toBe(true);
  });
});

describe('signing in with two-factor on', () => {
  it('asks for a code after the password; a wrong code is refused and recorded; the right one signs in, once', async () => {
    const first = await signIn(EMAIL, PASSWORD);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ signed_in: false, second_step: 'code' });
    expect(cookieOf(first)).toBeUndefined();
    const { challenge } = first.body;

    const wrong = await post('/auth/two-factor', { challenge, code: codeOf(secret, 20) });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('ERROR_SIGN_IN');
    expect(cookieOf(wrong)).toBeUndefined();
    expect(
      (await audit()).some((e) => e.action === 'admin.sign_in_failed' && e.message === `Wrong two-factor code for ${EMAIL}`),
    ).toBe(true);

    clock += 30_000; // the code used to enrol is spent: the app shows the next one
    const code = codeOf(secret);
    const good = await post('/auth/two-factor', { challenge, code });
    expect(good.status).toBe(200);
    expect(good.body).toMatchObject({ signed_in: true, account: { email: EMAIL, two_factor: true } });
    const cookie = cookieOf(good)!;
    expect((await api(cookie, 'GET', '/me')).status).toBe(200);
    // The challenge is used up, and the same code does not open another session (replay).
    expect((await post('/auth/two-factor', { challenge, code })).status).toBe(410);
    const again = await signIn(EMAIL, PASSWORD);
    expect((await post('/auth/two-factor', { challenge: again.body.challenge, code })).status).toBe(401);
    const signedIn = (await audit()).filter((e) => e.action === 'admin.signed_in');
    expect(signedIn[0]!.message).toBe(`${EMAIL} signed in with email, password and a two-factor code`);
    expect((await audit()).some((e) => e.action === 'admin.sign_in_password_accepted')).toBe(true);
  });

  it('takes a recovery code instead, once', async () => {
    const [code] = recovery;
    const first = await signIn(EMAIL, PASSWORD);
    const used = await post('/auth/two-factor', { challenge: first.body.challenge, code: ` ${code!.toUpperCase()} ` });
    expect(used.status).toBe(200);
    expect(cookieOf(used)).toBeDefined();
    expect((await api(cookieOf(used)!, 'GET', '/me/two-factor')).body.recovery_codes_left).toBe(9);

    const second = await signIn(EMAIL, PASSWORD);
    const reused = await post('/auth/two-factor', { challenge: second.body.challenge, code });
    expect(reused.status).toBe(401);
    expect(cookieOf(reused)).toBeUndefined();
    expect((await audit()).find((e) => e.action === 'admin.signed_in')!.message).toBe(
      `${EMAIL} signed in with email, password and a recovery code`,
    );
    const history = (await t.admin('GET', '/events?limit=1000')).body.items as { type: string; message: string }[];
    expect(history.find((e) => e.type === 'account.recovery_code_used')!.message).toBe(
      `A recovery code was used to sign in as ${EMAIL} (9 left)`,
    );
  });

  it('gives a challenge five tries, then the password must be given again', async () => {
    const { challenge } = (await signIn(EMAIL, PASSWORD, '127.0.0.9')).body;
    const statuses = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await post('/auth/two-factor', { challenge, code: '000000' }, '127.0.0.9')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 410]);
    expect((await post('/auth/two-factor', { challenge: 'f'.repeat(48), code: '000000' })).status).toBe(410);
    // A challenge dies after five minutes.
    const late = (await signIn(EMAIL, PASSWORD, '127.0.0.9')).body.challenge;
    clock += 5 * 60_000 + 1000;
    expect((await post('/auth/two-factor', { challenge: late, code: codeOf(secret) }, '127.0.0.9')).status).toBe(410);
    // Bad input is a 400, never a 500.
    expect((await post('/auth/two-factor', { challenge: late })).status).toBe(400);
    expect((await post('/auth/two-factor', { challenge: late, code: 'x'.repeat(100) })).status).toBe(400);
  });
});

describe('two-factor required for everyone', () => {
  it('sends an admin without it to enrol at sign-in before anything else; then asks for a code', async () => {
    // Only the owner's setting; the answer says what it is now.
    const set = await api(ownerCookie, 'PATCH', '/sign-in-settings', { require_two_factor: true });
    expect(set.status).toBe(200);
    expect(set.body.require_two_factor).toBe(true);
    expect((await api(ownerCookie, 'GET', '/me/two-factor')).body.required).toBe(true);

    const first = await signIn(BO, BO_PASSWORD, '127.0.0.20');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ signed_in: false, second_step: 'enrol' });
    expect(cookieOf(first)).toBeUndefined();
    const { challenge } = first.body;
    // A code-step challenge is not an enrolment's, and the other way round.
    expect((await post('/auth/two-factor', { challenge, code: '123456' }, '127.0.0.20')).status).toBe(410);

    const setup = await post('/auth/two-factor/enrol', { challenge }, '127.0.0.20');
    expect(setup.status).toBe(200);
    const bosSecret = setup.body.secret as string;
    expect(decodeQrPng(Buffer.from(setup.body.qr_data_url.split(',')[1], 'base64'))).toBe(setup.body.otpauth_url);
    const wrong = await post('/auth/two-factor/enrol/confirm', { challenge, code: codeOf(bosSecret, 10) }, '127.0.0.20');
    expect(wrong.status).toBe(400);
    expect(cookieOf(wrong)).toBeUndefined();
    const done = await post('/auth/two-factor/enrol/confirm', { challenge, code: codeOf(bosSecret) }, '127.0.0.20');
    expect(done.status).toBe(200);
    expect(done.body.recovery_codes).toHaveLength(10);
    expect(done.body.account).toMatchObject({ email: BO, two_factor: true });
    const cookie = cookieOf(done)!;
    expect((await api(cookie, 'GET', '/me')).body.account.email).toBe(BO);
    // Required: it cannot be turned off by its admin.
    clock += 30_000;
    const off = await api(cookie, 'POST', '/me/two-factor/disable', { code: codeOf(bosSecret) });
    expect(off.status).toBe(409);
    expect(off.body.error).toBe('ERROR_TWO_FACTOR_REQUIRED');

    // Next time: the code step.
    const next = await signIn(BO, BO_PASSWORD, '127.0.0.20');
    expect(next.body.second_step).toBe('code');
    expect(
      (await post('/auth/two-factor', { challenge: next.body.challenge, code: codeOf(bosSecret) }, '127.0.0.20')).status,
    ).toBe(200);

    // Reset by another admin (a lost phone): enrolment at the next sign-in again.
    await t.backend.services.accounts.resetTwoFactor(boId);
    expect(t.db.prepare(`SELECT totp_secret FROM admin_accounts WHERE id = ?`).pluck().get(boId)).toBeNull();
    expect(t.db.prepare(`SELECT count(*) FROM admin_recovery_codes WHERE account_id = ?`).pluck().get(boId)).toBe(0);
    expect((await signIn(BO, BO_PASSWORD, '127.0.0.20')).body.second_step).toBe('enrol');
    await expect(t.backend.services.accounts.resetTwoFactor(9999)).rejects.toThrow(/No admin 9999/);

    // An invited admin choosing a password through their set-up link enrols before being signed in, too.
    const invited = await api(ownerCookie, 'POST', '/accounts', { email: 'cy@example.org', role: 'observer', no_email: true });
    expect(invited.status).toBe(201);
    const setupToken = new URL(invited.body.setup_url).searchParams.get('token')!;
    const accepted = await post('/auth/invitation', { token: setupToken, password: 'cy’s long password' }, '127.0.0.21');
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ signed_in: false, second_step: 'enrol' });
    expect(cookieOf(accepted)).toBeUndefined();
    const cySetup = await post('/auth/two-factor/enrol', { challenge: accepted.body.challenge }, '127.0.0.21');
    const cyDone = await post(
      '/auth/two-factor/enrol/confirm',
      { challenge: accepted.body.challenge, code: codeOf(cySetup.body.secret) },
      '127.0.0.21',
    );
    expect(cyDone.status).toBe(200);
    expect(cyDone.body.account).toMatchObject({ email: 'cy@example.org', two_factor: true });

    await api(ownerCookie, 'PATCH', '/sign-in-settings', { require_two_factor: false });
    const free = await signIn(BO, BO_PASSWORD, '127.0.0.20');
    expect(free.body).toMatchObject({ signed_in: true });
  });

  it('lets an admin turn their own two-factor off with a code when it is not required', async () => {
    clock += 30_000;
    const wrong = await api(ownerCookie, 'POST', '/me/two-factor/disable', { code: '000000' });
    expect(wrong.status).toBe(400);
    const off = await api(ownerCookie, 'POST', '/me/two-factor/disable', { code: codeOf(secret) });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, recovery_codes_left: 0 });
    expect((await signIn(EMAIL, PASSWORD)).body.signed_in).toBe(true);
  });
});
