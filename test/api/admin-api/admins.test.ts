// Admins managing admins (issue 22, items 5 and 7): invite by email with a role (the mail worker
// sends a set-up link, expiring and used once; `no_email` answers the link instead), the invited
// person chooses a password and is signed in; list, role change, disable (sessions end, tokens
// refused), enable, delete; never yourself, never the last owner; each change audited with before
// and after. Real HTTP, a real SQLite file and a real SMTP server on loopback.
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { callFrom } from '../../helpers/from-address.ts';
import { sessionCookieOf, withBearer, withSession } from '../../helpers/console-session.ts';
import { eventually, startTestSmtp, type ReceivedMail, type TestSmtp } from '../../helpers/smtp.ts';

let smtp: TestSmtp;
let t: TestBackend;
let adminUrl: string;

beforeAll(async () => {
  smtp = await startTestSmtp();
  t = await startTestBackend({ ownerName: 'ana', smtpUrl: smtp.url(), mailFrom: 'IT Desk <it@example.org>' });
  adminUrl = t.backend.info.admin_url;
});
afterAll(async () => {
  await t?.stop();
  await smtp?.close();
});

const post = (path: string, body: unknown, extra: Record<string, string> = {}) =>
  callFrom('127.0.0.1', `${adminUrl}${path}`, {
    method: 'POST',
    headers: { 'sec-fetch-site': 'same-origin', 'content-type': 'application/json', ...extra },
    body: JSON.stringify(body),
  });
const cookieOf = sessionCookieOf;
const asCookie = (cookie: string, path: string, method = 'GET', body?: unknown) =>
  withSession(adminUrl, cookie, method, path, body);
const asBearer = (bearer: string, path: string, method = 'GET', body?: unknown) =>
  withBearer(adminUrl, bearer, path, method, body);
const mailTo = (address: string): Promise<ReceivedMail> =>
  eventually(() => smtp.received.find((m) => m.envelope.to.includes(address)), 20_000, `the email to ${address}`);
const linkIn = (mail: ReceivedMail) => /https?:\/\/\S+\/set-password\?token=[0-9a-f]{64}/.exec(mail.parsed.text ?? '')?.[0];
const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;
const audit = async (action: string) =>
  (await t.admin('GET', `/audit?action=${action}&limit=1000`)).body.items as {
    actor: string;
    role: string;
    target_kind: string;
    target_id: number;
    message: string;
  }[];
const events = async (type: string) =>
  ((await t.admin('GET', '/events?limit=1000')).body.items as { type: string; data: Record<string, unknown> }[]).filter(
    (e) => e.type === type,
  );
const account = async (email: string) =>
  ((await t.admin('GET', '/accounts')).body.items as { id: number; email: string; status: string; role: string }[]).find(
    (a) => a.email === email,
  )!;

/** Invites with no email and sets the password through the link: an active admin, signed in (its cookie). */
async function activeAdmin(email: string, role: string): Promise<{ id: number; cookie: string }> {
  const invited = await t.admin('POST', '/accounts', { email, role, no_email: true });
  expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  const done = await post('/auth/invitation', { token: tokenOf(invited.body.setup_url), password: 'a long enough password' });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  return { id: invited.body.account.id, cookie: cookieOf(done)! };
}

describe('inviting an admin by email', () => {
  it('emails a set-up link; the person chooses a password through it, is signed in with the role, and the link works once', async () => {
    const invited = await t.admin('POST', '/accounts', {
      email: 'bo.diaz@example.org',
      role: 'operator',
      display_name: 'Bo Díaz',
    });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect(invited.body).toMatchObject({
      setup_url: null,
      email_queued: true,
      account: {
        email: 'bo.diaz@example.org',
        display_name: 'Bo Díaz',
        role: 'operator',
        status: 'invited',
        has_password: false,
      },
    });
    const days = (Date.parse(invited.body.account.invitation.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.9);
    expect(days).toBeLessThanOrEqual(7);

    // The mail worker sends it through the real SMTP server, after the commit.
    const mail = await mailTo('bo.diaz@example.org');
    expect(mail.parsed.from).toMatchObject({ address: 'it@example.org' });
    expect(mail.parsed.subject).toBe('ana invites you to MDM Console');
    expect(mail.parsed.text).toContain('as an operator');
    const link = linkIn(mail)!;
    expect(link.startsWith(`${adminUrl}/set-password?token=`)).toBe(true);
    expect(mail.parsed.html).toContain(`href="${link}"`);
    const listed = await eventually(async () => {
      const row = (await t.admin('GET', '/accounts')).body.items.find(
        (a: { email: string }) => a.email === 'bo.diaz@example.org',
      );
      return row.invitation?.delivery?.state === 'sent' ? row : null;
    });
    expect(listed).toMatchObject({ status: 'invited', last_sign_in_at: null, invitation: { expired: false } });
    // The secret is kept only until the message is out: its hash stays, not the link.
    expect(JSON.stringify(await t.sql.all(`SELECT * FROM admin_invites, admin_invite_deliveries`))).not.toContain(tokenOf(link));

    // The set-up page reads whom the link is for.
    const info = await callFrom('127.0.0.1', `${adminUrl}/auth/invitation?token=${tokenOf(link)}`);
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({
      email: 'bo.diaz@example.org',
      display_name: 'Bo Díaz',
      role: 'operator',
      invited_by: 'ana',
    });

    const body = { token: tokenOf(link), password: 'bo chooses a password' };
    expect((await post('/auth/invitation', body, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    const short = await post('/auth/invitation', { ...body, password: 'short' });
    expect(short.status).toBe(400);
    const done = await post('/auth/invitation', body);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.account).toMatchObject({ email: 'bo.diaz@example.org', role: 'operator', status: 'active' });
    const me = await asCookie(cookieOf(done)!, '/me');
    expect(me.body).toMatchObject({ via: 'session', role: 'operator', account: { email: 'bo.diaz@example.org' } });

    // Used once: the page and the form both say so, and the password stays.
    const again = await post('/auth/invitation', { ...body, password: 'somebody else’s password' });
    expect(again.status).toBe(410);
    expect(again.body).toMatchObject({ error: 'ERROR_SETUP_LINK_GONE', message: expect.stringContaining('used already') });
    expect((await callFrom('127.0.0.1', `${adminUrl}/auth/invitation?token=${tokenOf(link)}`)).status).toBe(410);
    const signIn = await post('/auth/password', { email: 'bo.diaz@example.org', password: 'bo chooses a password' });
    expect(signIn.status).toBe(200);

    // Audited: the invitation by the owner, the acceptance by Bo, from their address.
    const [invitedEntry] = await audit('account.invited');
    expect(invitedEntry).toMatchObject({
      actor: 'ana',
      role: 'owner',
      target_kind: 'account',
      target_id: invited.body.account.id,
    });
    const [accepted] = await audit('account.invitation_accepted');
    expect(accepted).toMatchObject({ actor: 'Bo Díaz', role: 'operator', target_id: invited.body.account.id });
  });

  it('with no_email answers the set-up link and queues no email; a new link replaces the old one', async () => {
    const before = smtp.received.length;
    const invited = await t.admin('POST', '/accounts', { email: 'cy@example.org', role: 'observer', no_email: true });
    expect(invited.status).toBe(201);
    expect(invited.body.email_queued).toBe(false);
    expect(invited.body.setup_url).toMatch(new RegExp(`^${adminUrl}/set-password\\?token=[0-9a-f]{64}$`));
    expect(invited.body.account.invitation.delivery).toBeNull();

    const again = await t.admin('POST', `/accounts/${invited.body.account.id}/invitation`, { no_email: true, days: 2 });
    expect(again.status).toBe(201);
    expect(again.body.setup_url).not.toBe(invited.body.setup_url);
    const replaced = await callFrom('127.0.0.1', `${adminUrl}/auth/invitation?token=${tokenOf(invited.body.setup_url)}`);
    expect(replaced.status).toBe(410);
    expect(replaced.body.message).toMatch(/replaced by a newer one/);
    expect((await callFrom('127.0.0.1', `${adminUrl}/auth/invitation?token=${tokenOf(again.body.setup_url)}`)).status).toBe(200);
    // Neither call emailed anything (an emailed invitation after them is the next message).
    await t.admin('POST', '/accounts', { email: 'marker@example.org', role: 'observer' });
    await mailTo('marker@example.org');
    expect(smtp.received.slice(before).map((m) => m.envelope.to[0])).toEqual(['marker@example.org']);
  });

  it('says so when the link has expired, or is unknown', async () => {
    const invited = await t.admin('POST', '/accounts', { email: 'late@example.org', role: 'operator', no_email: true });
    await t.sql.run(`UPDATE admin_invites SET expires_at = ? WHERE account_id = ?`, [
      new Date(Date.now() - 1000).toISOString(),
      invited.body.account.id,
    ]);
    const expired = await callFrom('127.0.0.1', `${adminUrl}/auth/invitation?token=${tokenOf(invited.body.setup_url)}`);
    expect(expired.status).toBe(410);
    expect(expired.body.message).toMatch(/^This set-up link expired on \d{4}-\d{2}-\d{2}: ask ana for a new one\.$/);
    const form = await post('/auth/invitation', { token: tokenOf(invited.body.setup_url), password: 'a long enough password' });
    expect(form.status).toBe(410);
    expect((await account('late@example.org')).status).toBe('invited');
    expect(
      ((await t.admin('GET', '/accounts')).body.items as { email: string; invitation: { expired: boolean } }[]).find(
        (a) => a.email === 'late@example.org',
      )!.invitation.expired,
    ).toBe(true);

    const unknown = await callFrom('127.0.0.1', `${adminUrl}/auth/invitation?token=${'0'.repeat(64)}`);
    expect(unknown.status).toBe(410);
    expect(unknown.body.message).toMatch(/not valid/);
    expect((await callFrom('127.0.0.1', `${adminUrl}/auth/invitation?token=x%3Cscript%3E`)).status).toBe(410);
    expect((await callFrom('127.0.0.1', `${adminUrl}/auth/invitation`)).status).toBe(400);
  });

  it('refuses an email already an admin, a bad email or role, and unknown fields; nothing is made', async () => {
    const count = (await t.admin('GET', '/accounts')).body.items.length;
    const taken = await t.admin('POST', '/accounts', { email: 'BO.DIAZ@example.org', role: 'admin' });
    expect(taken.status).toBe(409);
    expect(taken.body.message).toBe('BO.DIAZ@example.org is already an admin (active)');
    expect((await t.admin('POST', '/accounts', { email: 'cy@example.org', role: 'admin' })).body.message).toMatch(
      /already invited/,
    );
    expect((await t.admin('POST', '/accounts', { email: 'not an email', role: 'admin' })).status).toBe(400);
    expect((await t.admin('POST', '/accounts', { email: 'x@example.org', role: 'root' })).status).toBe(400);
    expect((await t.admin('POST', '/accounts', { email: 'x@example.org', role: 'admin', days: 31 })).status).toBe(400);
    expect((await t.admin('POST', '/accounts', { email: 'x@example.org', role: 'admin', extra: 1 })).status).toBe(400);
    expect((await t.admin('GET', '/accounts')).body.items).toHaveLength(count);
  });
});

describe('managing admins', () => {
  it('lists each admin’s last sign-in, whatever the way in (a one-time sign-in link too)', async () => {
    const before = (await t.admin('GET', '/accounts')).body.items.find((a: { id: number }) => a.id === 1);
    const ticket = (await t.admin('POST', '/console-tickets')).body.console_url as string;
    expect((await callFrom('127.0.0.1', ticket)).status).toBe(302);
    const after = (await t.admin('GET', '/accounts')).body.items.find((a: { id: number }) => a.id === 1);
    expect(after.last_sign_in_at).not.toBeNull();
    expect(after.last_sign_in_at).not.toBe(before.last_sign_in_at);
  });

  it('changes a role, audited with before and after', async () => {
    const dee = await activeAdmin('dee@example.org', 'observer');
    const changed = await t.admin('PATCH', `/accounts/${dee.id}`, { role: 'admin' });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ role: 'admin', status: 'active' });
    expect((await asCookie(dee.cookie, '/me')).body.role).toBe('admin');
    const [event] = await events('account.role_changed');
    expect(event!.data).toMatchObject({ account_id: dee.id, before: { role: 'observer' }, after: { role: 'admin' } });
    const [entry] = await audit('account.role_changed');
    expect(entry).toMatchObject({
      actor: 'ana',
      target_kind: 'account',
      target_id: dee.id,
      message: 'dee@example.org: role observer → admin',
    });
  });

  it('invites an operator scoped to fleets; an admin with fleets is refused and nothing is made; promoted, the scope goes', async () => {
    const fleet = (await t.admin('POST', '/fleets', { name: 'North office' })).body as { id: number };
    const invited = await t.admin('POST', '/accounts', {
      email: 'kim@example.org',
      role: 'operator',
      fleet_ids: [fleet.id],
      no_email: true,
    });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect(invited.body.account).toMatchObject({ role: 'operator', fleet_ids: [fleet.id] });
    const me = await post('/auth/invitation', { token: tokenOf(invited.body.setup_url), password: 'a long enough password' });
    expect((await asCookie(cookieOf(me)!, '/me')).body.fleets).toEqual([
      expect.objectContaining({ id: fleet.id, name: 'North office' }),
    ]);

    const count = (await t.admin('GET', '/accounts')).body.items.length;
    const admin = await t.admin('POST', '/accounts', { email: 'lee@example.org', role: 'admin', fleet_ids: [fleet.id] });
    expect(admin.status).toBe(400);
    expect(admin.body.message).toMatch(/cannot be scoped to fleets/);
    const unknown = await t.admin('POST', '/accounts', { email: 'lee@example.org', role: 'operator', fleet_ids: [9999] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toBe('No fleet #9999');
    expect((await t.admin('GET', '/accounts')).body.items).toHaveLength(count);
    expect(await account('lee@example.org')).toBeUndefined();

    const promoted = await t.admin('PATCH', `/accounts/${invited.body.account.id}`, { role: 'admin' });
    expect(promoted.body).toMatchObject({ role: 'admin', fleet_ids: [] });
    const [scope] = await events('account.scope_changed');
    expect(scope!.data).toMatchObject({ before: { fleet_ids: [fleet.id] }, after: { fleet_ids: [] } });
  });

  it('disables an admin: their sessions end and their API tokens are refused; enabled, the tokens work again', async () => {
    const eve = await activeAdmin('eve@example.org', 'admin');
    const token = (await asCookie(eve.cookie, '/tokens', 'POST', { name: 'eve script', role: 'operator' })).body.token as string;
    expect((await asBearer(token, '/me')).status).toBe(200);

    const disabled = await t.admin('POST', `/accounts/${eve.id}/disable`);
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ status: 'disabled', disabled: true });
    expect((await asCookie(eve.cookie, '/me')).status).toBe(401);
    expect((await asBearer(token, '/me')).status).toBe(401);
    expect(await t.sql.value(`SELECT count(*) FROM admin_sessions WHERE account_id = ?`, [eve.id])).toBe(0);
    expect((await post('/auth/password', { email: 'eve@example.org', password: 'a long enough password' })).status).toBe(401);
    const [event] = await events('account.disabled');
    expect(event!.data).toMatchObject({
      account_id: eve.id,
      sessions_ended: 1,
      before: { disabled: false },
      after: { disabled: true },
    });

    expect((await t.admin('POST', `/accounts/${eve.id}/enable`)).body.status).toBe('active');
    expect((await asBearer(token, '/me')).status).toBe(200);
    expect((await asCookie(eve.cookie, '/me')).status).toBe(401); // a session ended stays ended
    expect((await audit('account.enabled'))[0]).toMatchObject({ actor: 'ana', target_id: eve.id });
  });

  it('resets another admin’s two-factor sign-in (a lost phone), audited with before and after; not one’s own', async () => {
    const jo = await activeAdmin('jo@example.org', 'operator');
    const setup = await asCookie(jo.cookie, '/me/two-factor/setup', 'POST');
    expect(setup.status, JSON.stringify(setup.body)).toBe(200);
    const code = new TOTP({ secret: Secret.fromBase32(setup.body.secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate();
    expect((await asCookie(jo.cookie, '/me/two-factor/confirm', 'POST', { code })).status).toBe(200);
    expect((await account('jo@example.org')) as unknown).toMatchObject({ two_factor: true });

    const reset = await t.admin('POST', `/accounts/${jo.id}/two-factor/reset`);
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    expect(reset.body).toMatchObject({ email: 'jo@example.org', two_factor: false, status: 'active' });
    // Signed in with the password alone again.
    const again = await post('/auth/password', { email: 'jo@example.org', password: 'a long enough password' });
    expect(again.body).toMatchObject({ signed_in: true });
    const [event] = await events('account.two_factor_reset');
    expect(event!.data).toMatchObject({ account_id: jo.id, before: { two_factor: true }, after: { two_factor: false } });
    expect((await audit('account.two_factor_reset'))[0]).toMatchObject({
      actor: 'ana',
      target_kind: 'account',
      target_id: jo.id,
    });

    const own = await t.admin('POST', '/accounts/1/two-factor/reset');
    expect(own.status).toBe(409);
    expect((await asCookie(jo.cookie, `/accounts/${jo.id}/two-factor/reset`, 'POST')).status).toBe(403);
    expect((await t.admin('POST', '/accounts/9999/two-factor/reset')).status).toBe(404);
  });

  it('deletes an admin with their tokens; never yourself, never the last owner (409, nothing changed)', async () => {
    const fay = await activeAdmin('fay@example.org', 'owner');
    // Fay is an owner: she may manage admins, but not delete, disable or demote herself.
    for (const [method, path, body] of [
      ['DELETE', `/accounts/${fay.id}`, undefined],
      ['POST', `/accounts/${fay.id}/disable`, undefined],
      ['PATCH', `/accounts/${fay.id}`, { role: 'observer' }],
    ] as const) {
      const refused = await asCookie(fay.cookie, path, method, body);
      expect(refused.status, `${method} ${path}`).toBe(409);
      expect(refused.body.message).toMatch(/^You cannot (delete your own account|disable your own account|change your own role)/);
    }
    // The data dir's owner (the CLI's) stays.
    const owner = await asCookie(fay.cookie, '/accounts/1', 'DELETE');
    expect(owner.status).toBe(409);
    expect(owner.body.message).toMatch(/holds the data dir's admin token/);

    const token = (await asCookie(fay.cookie, '/tokens', 'POST', { name: 'fay script', role: 'admin' })).body.token as string;
    const deleted = await t.admin('DELETE', `/accounts/${fay.id}`);
    expect(deleted.status).toBe(204);
    expect(await account('fay@example.org')).toBeUndefined();
    expect((await asBearer(token, '/me')).status).toBe(401);
    expect((await asCookie(fay.cookie, '/me')).status).toBe(401);
    expect((await t.admin('DELETE', `/accounts/${fay.id}`)).status).toBe(404);
    const [event] = await events('account.deleted');
    expect(event!.data).toMatchObject({ account_id: fay.id, before: { email: 'fay@example.org', role: 'owner' }, after: null });
    expect((await audit('account.deleted'))[0]).toMatchObject({ actor: 'ana', target_id: fay.id });
  });

  it('keeps the owner who holds the data dir’s admin token (the CLI’s): never demoted, disabled or deleted', async () => {
    const gil = await activeAdmin('gil@example.org', 'owner');
    for (const [method, path, body, what] of [
      ['PATCH', '/accounts/1', { role: 'admin' }, 'change its role'],
      ['POST', '/accounts/1/disable', undefined, 'be disabled'],
      ['DELETE', '/accounts/1', undefined, 'be deleted'],
    ] as const) {
      const refused = await asCookie(gil.cookie, path, method, body);
      expect(refused.status, `${method} ${path}`).toBe(409);
      expect(refused.body.message).toBe(
        `ana holds the data dir's admin token (the CLI's and this machine's) and cannot ${what}.`,
      );
    }
    expect((await t.admin('GET', '/me')).body).toMatchObject({
      role: 'owner',
      account: { id: 1, role: 'owner', disabled: false },
    });
    // Another owner is managed like anyone: ana demotes Gil.
    expect((await t.admin('PATCH', `/accounts/${gil.id}`, { role: 'operator' })).body.role).toBe('operator');
  });

  it('is the owner’s: an admin or an operator token is refused (403), and bad ids get 404 or 400', async () => {
    const ivy = await activeAdmin('ivy@example.org', 'admin');
    const refused = await asCookie(ivy.cookie, '/accounts', 'POST', { email: 'z@example.org', role: 'observer' });
    expect(refused.status).toBe(403);
    expect(await account('z@example.org')).toBeUndefined();
    const operatorToken = (await t.admin('POST', '/tokens', { name: 'owner as operator', role: 'operator' })).body.token;
    expect((await asBearer(operatorToken, `/accounts/${ivy.id}/disable`, 'POST')).status).toBe(403);
    expect((await account('ivy@example.org')).status).toBe('active');
    expect((await t.admin('PATCH', '/accounts/9999', { role: 'admin' })).status).toBe(404);
    expect((await t.admin('PATCH', '/accounts/abc', { role: 'admin' })).status).toBe(400);
    expect((await t.admin('PATCH', `/accounts/${ivy.id}`, { role: 'admin', email: 'x' })).status).toBe(400);
    // A refused change leaves no audit entry.
    expect((await audit('account.disabled')).filter((e) => e.target_id === ivy.id)).toEqual([]);
  });
});
