// Console sessions and sign-in throttling (issue 22, item 3): sessions end after inactivity and at a
// maximum age (the owner's settings), are listed per admin ("signed in from … with … at …", the
// current one marked), end one by one or all others at once; changing the password ends the
// others; failed sign-ins are slowed per account and per address with growing delays, and every
// attempt is in the audit trail. Real HTTP and SQLite; time moves by the server's clock, which the
// test drives (no sleeps).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../../src-main/backend/accounts/passwords.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { callFrom } from '../../helpers/from-address.ts';
import { sameOriginJson, sessionCookieOf, withSession } from '../../helpers/console-session.ts';

let t: TestBackend;
let adminUrl: string;
let clock = Date.parse('2026-11-26T09:00:00Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const EMAIL = 'ana.ruiz@example.org';
const PASSWORD = 'correct horse battery';
const BO = 'bo.berg@example.org';
const BO_PASSWORD = 'bo’s long password';

const json = sameOriginJson;
const cookieOf = sessionCookieOf;
const signIn = (email: string, password: string, address = '127.0.0.1', userAgent = 'test') =>
  callFrom(address, `${adminUrl}/auth/password`, json({ email, password }, { 'user-agent': userAgent }));
const session = async (email: string, password: string, address = '127.0.0.1', userAgent = 'test') => {
  const answer = await signIn(email, password, address, userAgent);
  expect(answer.status).toBe(200);
  return cookieOf(answer)!;
};
const api = (cookie: string, method: string, path: string, body?: unknown) => withSession(adminUrl, cookie, method, path, body);
const alive = async (cookie: string) => (await api(cookie, 'GET', '/me')).status === 200;
const audit = async () =>
  (await t.admin('GET', '/audit?limit=1000')).body.items as {
    action: string;
    message: string;
    address: string | null;
    target_name: string | null;
  }[];

beforeAll(async () => {
  t = await startTestBackend({ ownerName: 'ana', now: () => clock });
  adminUrl = t.backend.info.admin_url;
  const token = new URL(t.backend.info.setup_url!).searchParams.get('token')!;
  await callFrom(
    '127.0.0.1',
    `${adminUrl}/auth/setup`,
    json({ token, email: EMAIL, display_name: 'Ana Ruiz', password: PASSWORD }),
  );
  await t.sql.run(
    `INSERT INTO admin_accounts (email, display_name, role, password_hash, created_at) VALUES (?, 'Bo Berg', 'admin', ?, ?)`,
    [BO, await hashPassword(BO_PASSWORD), new Date().toISOString()],
  );
});
afterAll(async () => {
  await t?.stop();
});

describe('an admin’s sessions', () => {
  it('are listed with address, browser, sign-in time and last use, the current one marked; never another admin’s', async () => {
    const laptop = await session(EMAIL, PASSWORD, '127.0.0.11', 'Mozilla/5.0 (X11; Linux) Firefox/140.0');
    clock += 5 * MINUTE;
    const phone = await session(EMAIL, PASSWORD, '127.0.0.12', 'Mozilla/5.0 (Android 16) Chrome/150.0');
    const bo = await session(BO, BO_PASSWORD, '127.0.0.13');
    clock += 2 * MINUTE;
    const listed = await api(laptop, 'GET', '/sessions');
    expect(listed.status).toBe(200);
    const mine = listed.body.items as {
      id: string;
      address: string;
      user_agent: string;
      created_at: string;
      last_used_at: string;
      expires_at: string;
      current: boolean;
    }[];
    const laptopRow = mine.find((s) => s.address === '127.0.0.11')!;
    const phoneRow = mine.find((s) => s.address === '127.0.0.12')!;
    expect(laptopRow).toMatchObject({ user_agent: 'Mozilla/5.0 (X11; Linux) Firefox/140.0', current: true });
    expect(phoneRow).toMatchObject({ user_agent: 'Mozilla/5.0 (Android 16) Chrome/150.0', current: false });
    expect(laptopRow.created_at).toBe('2026-11-26T09:00:00.000Z');
    expect(phoneRow.created_at).toBe('2026-11-26T09:05:00.000Z');
    // Used just now: it ends in twelve hours unless used again (the default idle time).
    expect(laptopRow.last_used_at).toBe('2026-11-26T09:07:00.000Z');
    expect(laptopRow.expires_at).toBe('2026-11-26T21:07:00.000Z');
    expect(mine.filter((s) => s.current)).toHaveLength(1);
    expect(mine.every((s) => /^[0-9a-f]{16}$/.test(s.id))).toBe(true);
    expect(JSON.stringify(mine)).not.toContain(laptop);
    expect(mine.some((s) => s.address === '127.0.0.13')).toBe(false);

    // Bo cannot end Ana's session; Ana ends her phone's.
    expect((await api(bo, 'DELETE', `/sessions/${phoneRow.id}`)).status).toBe(404);
    expect(await alive(phone)).toBe(true);
    const ended = await api(laptop, 'DELETE', `/sessions/${phoneRow.id}`);
    expect(ended.status).toBe(200);
    expect(ended.body).toEqual({ ended: 1 });
    expect(await alive(phone)).toBe(false);
    expect(await alive(laptop)).toBe(true);
    expect((await api(laptop, 'DELETE', `/sessions/${phoneRow.id}`)).status).toBe(404);
    expect((await api(laptop, 'DELETE', '/sessions/not-an-id')).status).toBe(400);
    expect(await alive(bo)).toBe(true);
  });

  it('end all at once but the current one', async () => {
    const here = await session(EMAIL, PASSWORD, '127.0.0.21');
    const others = [await session(EMAIL, PASSWORD, '127.0.0.22'), await session(EMAIL, PASSWORD, '127.0.0.23')];
    const bo = await session(BO, BO_PASSWORD, '127.0.0.24');
    const ended = await api(here, 'DELETE', '/sessions');
    expect(ended.status).toBe(200);
    expect(ended.body.ended).toBeGreaterThanOrEqual(2);
    for (const cookie of others) expect(await alive(cookie)).toBe(false);
    expect(await alive(here)).toBe(true);
    expect(await alive(bo)).toBe(true);
    expect((await api(here, 'GET', '/sessions')).body.items).toHaveLength(1);
  });

  it('other than the current one end when the password changes', async () => {
    const here = await session(BO, BO_PASSWORD, '127.0.0.31');
    const other = await session(BO, BO_PASSWORD, '127.0.0.32');
    const wrong = await api(here, 'POST', '/me/password', {
      current_password: 'not it at all',
      new_password: 'a new long password',
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('ERROR_WRONG_PASSWORD');
    expect((await api(here, 'POST', '/me/password', { current_password: BO_PASSWORD, new_password: 'short' })).status).toBe(400);
    expect(await alive(other)).toBe(true);

    const changed = await api(here, 'POST', '/me/password', {
      current_password: BO_PASSWORD,
      new_password: 'a new long password',
    });
    expect(changed.status).toBe(200);
    expect(changed.body.ended_sessions).toBeGreaterThanOrEqual(1);
    expect(await alive(other)).toBe(false);
    expect(await alive(here)).toBe(true);
    expect((await signIn(BO, BO_PASSWORD, '127.0.0.33')).status).toBe(401);
    expect((await signIn(BO, 'a new long password', '127.0.0.33')).status).toBe(200);
    expect((await audit()).some((e) => e.action === 'account.password_changed')).toBe(true);
    expect(JSON.stringify(await audit())).not.toContain('a new long password');
  });
});

describe('session expiry', () => {
  it('ends a session unused for the idle time, and a busy one at its maximum age', async () => {
    const idle = await session(EMAIL, PASSWORD, '127.0.0.41');
    const busy = await session(EMAIL, PASSWORD, '127.0.0.42');
    const start = clock;
    clock += 11 * HOUR;
    expect(await alive(busy)).toBe(true);
    clock += 1 * HOUR + MINUTE; // 12 h 1 min unused
    expect(await alive(idle)).toBe(false);
    expect(await alive(busy)).toBe(true);
    // Used every 11 hours, it lives through its seventh day, then ends.
    const seen: boolean[] = [];
    while (clock + 11 * HOUR < start + 7 * 24 * HOUR) {
      clock += 11 * HOUR;
      seen.push(await alive(busy));
    }
    expect(seen.length).toBeGreaterThan(10);
    expect(seen).toEqual(seen.map(() => true));
    clock = start + 7 * 24 * HOUR + MINUTE;
    expect(await alive(busy)).toBe(false);
    expect(await t.sql.value(`SELECT count(*) FROM admin_sessions WHERE address = '127.0.0.42'`)).toBe(0);
  });

  it('follows the owner’s sign-in settings, which say the limits and are refused out of range', async () => {
    const owner = await session(EMAIL, PASSWORD);
    expect((await api(owner, 'GET', '/sign-in-settings')).body).toEqual({
      require_two_factor: false,
      session_idle_minutes: 720,
      session_max_age_hours: 168,
    });
    expect((await api(owner, 'PATCH', '/sign-in-settings', { session_idle_minutes: 1 })).status).toBe(400);
    expect((await api(owner, 'PATCH', '/sign-in-settings', { session_max_age_hours: 0 })).status).toBe(400);
    expect((await api(owner, 'PATCH', '/sign-in-settings', {})).status).toBe(400);
    expect((await api(owner, 'PATCH', '/sign-in-settings', { nope: 1 })).status).toBe(400);
    const tooLong = await api(owner, 'PATCH', '/sign-in-settings', { session_idle_minutes: 3000, session_max_age_hours: 24 });
    expect(tooLong.status).toBe(400);
    const set = await api(owner, 'PATCH', '/sign-in-settings', { session_idle_minutes: 30, session_max_age_hours: 2 });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ session_idle_minutes: 30, session_max_age_hours: 2 });
    // Recorded with before and after values.
    const history = (await t.admin('GET', '/events?limit=50')).body.items as { type: string; data: Record<string, unknown> }[];
    expect(history.find((e) => e.type === 'settings.sign_in_updated')!.data).toEqual({
      keys: ['session_idle_minutes', 'session_max_age_hours'],
      before: { session_idle_minutes: 720, session_max_age_hours: 168 },
      after: { session_idle_minutes: 30, session_max_age_hours: 2 },
    });

    const fresh = await session(EMAIL, PASSWORD, '127.0.0.51');
    clock += 29 * MINUTE;
    expect(await alive(fresh)).toBe(true);
    expect(await alive(owner)).toBe(true);
    clock += 31 * MINUTE;
    expect(await alive(fresh)).toBe(false);
    // The owner's session, used every 29 minutes, ends two hours after its sign-in (lowered since it began).
    const ownerAlive: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      clock += 29 * MINUTE;
      ownerAlive.push(await alive(owner));
    }
    expect(ownerAlive).toContain(false);
    await t.admin('PATCH', '/sign-in-settings', { session_idle_minutes: 720, session_max_age_hours: 168 });
  });
});

describe('failed sign-ins', () => {
  it('are slowed per account with growing delays, from any address; each attempt, refused or not, is in the audit trail', async () => {
    clock += 7 * HOUR; // earlier failures forgotten
    const before = (await audit()).length;
    const statuses: number[] = [];
    // Ten wrong passwords from ten addresses: then the account waits 10 s.
    for (let i = 0; i < 10; i++) statuses.push((await signIn(EMAIL, `guess ${i}`, `127.0.1.${i + 1}`)).status);
    expect(statuses).toEqual(Array<number>(10).fill(401));
    const waits: string[] = [];
    for (const step of [0, 10, 20, 40]) {
      clock += step * 1000;
      const refused = await signIn(EMAIL, 'another guess', '127.0.2.1');
      // Right after each failure past the tenth, even the right password is not looked at.
      if (refused.status === 401) {
        const slowed = await signIn(EMAIL, PASSWORD, '127.0.2.2');
        expect(slowed.status).toBe(429);
        waits.push(slowed.headers['retry-after'] as string);
      } else {
        expect(refused.status).toBe(429);
        waits.push(refused.headers['retry-after'] as string);
      }
    }
    // 10 s after the tenth failure, then 20, 40, 80: each wait twice the last.
    expect(waits).toEqual(['10', '20', '40', '80']);
    const slowed = await signIn(EMAIL, PASSWORD, '127.0.2.3');
    expect(slowed.status).toBe(429);
    expect(slowed.body.error).toBe('ERROR_TOO_MANY_SIGN_INS');
    // Another account is not slowed by these.
    expect((await signIn(BO, 'a new long password', '127.0.2.4')).status).toBe(200);

    // Every attempt is in the audit trail, with its address; never a password.
    const entries = (await audit()).slice(0, (await audit()).length - before);
    const attempts = entries.filter((e) => e.action.startsWith('admin.sign_in') || e.action === 'admin.signed_in');
    expect(attempts.filter((e) => e.action === 'admin.sign_in_failed' && e.target_name === EMAIL)).toHaveLength(13);
    expect(attempts.filter((e) => e.action === 'admin.sign_in_throttled' && e.target_name === EMAIL)).toHaveLength(5);
    expect(attempts.some((e) => e.action === 'admin.signed_in' && e.address === '127.0.2.4')).toBe(true);
    expect(JSON.stringify(entries)).not.toMatch(/guess|correct horse/);

    // Once the wait is over and the right password given, the account starts afresh.
    clock += 80_000;
    expect((await signIn(EMAIL, PASSWORD, '127.0.2.5')).status).toBe(200);
    expect((await signIn(EMAIL, 'one slip', '127.0.2.5')).status).toBe(401);
    expect((await signIn(EMAIL, PASSWORD, '127.0.2.5')).status).toBe(200);
  });

  it('are slowed per address with growing delays, whichever accounts are tried', async () => {
    clock += 7 * HOUR;
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await signIn(`nobody${i}@example.org`, 'guess', '127.0.3.1')).status);
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
    clock += 10_000;
    expect((await signIn('someone@example.org', 'guess', '127.0.3.1')).status).toBe(401);
    const next = await signIn(EMAIL, PASSWORD, '127.0.3.1');
    expect(next.status).toBe(429);
    expect(next.headers['retry-after']).toBe('20');
    // The same account from another address is not slowed.
    expect((await signIn(EMAIL, PASSWORD, '127.0.3.2')).status).toBe(200);
  });
});
