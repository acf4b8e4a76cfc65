import { test as base, expect } from '@playwright/test';
import { adminOf, SCREENSHOTS, shot } from './fixtures.ts';
import { startServe, type RunningServe } from './serve.ts';

// Admins as people (issue 22, item 1), in Chromium against a fresh `serve` of its own: the
// one-time set-up link serve prints, the owner's email and password chosen there, signing out and
// in again with them, and a personal API token made, shown once, used and revoked on its page.
// Signed-out pages answer 401 on purpose, so this spec does not use the shared fixture that fails on them.
void SCREENSHOTS;

const test = base.extend<Record<never, never>, { serve: RunningServe }>({
  serve: [
    async ({}, use) => {
      const serve = await startServe();
      await use(serve);
      await serve.stop();
    },
    { scope: 'worker' },
  ],
});

const EMAIL = 'ana.ruiz@example.org';
const PASSWORD = 'correct horse battery';

test('the set-up link makes the owner; email and password sign in; an API token is made, shown once and revoked', async ({
  browser,
  serve,
}, testInfo) => {
  const base = serve.info.admin_url;
  // serve printed the link, as it prints the console's.
  const setupUrl = serve.info.setup_url!;
  expect(serve.output()).toContain(`Set up the owner:      ${setupUrl}`);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(setupUrl);
  await expect(page.getByRole('heading', { name: 'Set up the owner', level: 1 })).toBeVisible();
  await page.getByTestId('setup-email').fill(EMAIL);
  await page.getByTestId('setup-name').fill('Ana Ruiz');
  await page.getByTestId('setup-password').fill(PASSWORD);
  await page.getByTestId('setup-password-again').fill('something else');
  await page.getByTestId('setup-submit').click();
  await expect(page.getByText('The two passwords differ.')).toBeVisible();
  await page.getByTestId('setup-password-again').fill(PASSWORD);
  await shot(page, 'owner-setup', testInfo);
  await page.getByTestId('setup-submit').click();
  await expect(page.getByRole('heading', { name: 'Dashboard', level: 1 })).toBeVisible();
  await expect(page.getByTestId('signed-in-as')).toContainText('Ana Ruiz');
  await expect(page.getByTestId('signed-in-as')).toContainText('owner');

  // The link worked once: opened again (another browser), its form is refused with the reason.
  const other = await browser.newContext();
  const late = await other.newPage();
  await late.goto(setupUrl);
  await late.getByTestId('setup-email').fill('mallory@example.org');
  await late.getByTestId('setup-name').fill('Mallory');
  await late.getByTestId('setup-password').fill('a long enough password');
  await late.getByTestId('setup-password-again').fill('a long enough password');
  await late.getByTestId('setup-submit').click();
  await expect(late.getByText('This set-up link was used already')).toBeVisible();
  await other.close();

  // Signed out, then in again with the email and password; a wrong password says so.
  await page.getByTestId('sign-out').click();
  await expect(page.getByRole('heading', { name: 'You are signed out', level: 1 })).toBeVisible();
  await page.getByTestId('sign-in-email').fill(EMAIL);
  await page.getByTestId('sign-in-password').fill('not the password');
  await page.getByTestId('sign-in-submit').click();
  await expect(page.getByText('Wrong email or password.')).toBeVisible();
  await shot(page, 'sign-in-password', testInfo);
  await page.getByTestId('sign-in-password').fill(PASSWORD);
  await page.getByTestId('sign-in-submit').click();
  await expect(page.getByRole('heading', { name: 'Dashboard', level: 1 })).toBeVisible();
  await expect(page.getByTestId('signed-in-as')).toContainText('Ana Ruiz');

  // API tokens: the data dir's (the CLI's) is listed, a new one is shown once, works, and is revoked.
  await page.goto(`${base}/tokens`);
  await expect(page.getByRole('heading', { name: 'API tokens', level: 1 })).toBeVisible();
  await expect(page.getByText('admin token (data dir)')).toBeVisible();
  await page.getByTestId('new-token-button').click();
  await page.getByTestId('token-name').fill('nightly export');
  await page.getByTestId('token-role').click();
  await page.getByRole('option', { name: 'observer: read only' }).click();
  await page.getByTestId('token-days').fill('30');
  await page.getByTestId('token-create').click();
  const token = (await page.getByTestId('new-token').innerText()).trim();
  expect(token).toMatch(/^mdm_[0-9a-f]{64}$/);
  await shot(page, 'api-token-created', testInfo);
  await page.getByRole('button', { name: 'Done' }).click();
  const me = await adminOf({ admin_url: base, admin_token: token }).me();
  expect(me).toMatchObject({ via: 'token', role: 'observer', account: { email: EMAIL } });

  const row = page.getByRole('row').filter({ hasText: 'nightly export' });
  await expect(row.getByTestId('token-status')).toHaveText('active');
  await shot(page, 'api-tokens', testInfo);
  await row.getByRole('button', { name: 'Revoke nightly export' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
  await expect(row.getByTestId('token-status')).toHaveText('revoked');
  expect((await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);

  // The Audit page answers who did it, when and from where; filtered, and live.
  await page.goto(`${base}/audit`);
  await expect(page.getByRole('heading', { name: 'Audit', level: 1 })).toBeVisible();
  const table = page.getByTestId('audit-table');
  await expect(table.getByRole('row').filter({ hasText: 'account.token_revoked' })).toContainText('Ana Ruiz');
  await expect(table.getByRole('row').filter({ hasText: 'account.token_revoked' })).toContainText('127.0.0.1');
  await expect(table.getByRole('row').filter({ hasText: 'admin.signed_in' }).first()).toBeVisible();
  await page.getByTestId('audit-action').fill('admin.sign_in_failed');
  // The header, the wrong password, and the revoked token tried above.
  await expect(table.getByRole('row')).toHaveCount(3);
  await expect(table).toContainText(`Wrong email or password for ${EMAIL}`);
  await expect(table).toContainText('Admin API call with a wrong or revoked token');
  await page.getByTestId('audit-action').fill('fleet.');
  await expect(page.getByText('Nothing matches these filters')).toBeVisible();
  // A change made elsewhere (a script with the admin token) shows up without a reload.
  await adminOf(serve.info).fleets.create('Sales');
  await expect(page.getByTestId('audit-table')).toContainText('Fleet "Sales" created');
  await page.getByTestId('audit-action').fill('');
  await shot(page, 'audit', testInfo);
  await context.close();
});
