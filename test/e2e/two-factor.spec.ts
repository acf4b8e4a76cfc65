import { test as base, expect, type Page } from '@playwright/test';
import { Secret, TOTP } from 'otpauth';
import { adminOf, shot } from './fixtures.ts';
import { startServe, type RunningServe } from './serve.ts';

// Two-factor sign-in (issue 22, item 3) in Chromium against a `serve` of its own: the owner enrols
// an authenticator app on their account page (the code computed here from the secret the page
// shows), signs out and in again in two steps (a wrong code refused), sees their sessions; then
// requires two-factor for everyone, and an invited admin is sent to enrol at sign-in before
// reaching the console. Signed-out pages answer 401 on purpose: no shared console guard here.

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
const BO = 'bo.berg@example.org';
const BO_PASSWORD = 'bo’s long password';

/** What an authenticator app holding `secret` shows `periods` × 30 s from now. */
const codeOf = (secret: string, periods = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: Date.now() + periods * 30_000,
  });
/** The secret as the page shows it (grouped by four), as someone would type it into an app. */
const shownSecret = async (page: Page) => ((await page.getByTestId('two-factor-secret').textContent()) ?? '').replace(/\s/g, '');

async function signInWithPassword(page: Page, email: string, password: string) {
  await page.getByTestId('sign-in-email').fill(email);
  await page.getByTestId('sign-in-password').fill(password);
  await page.getByTestId('sign-in-submit').click();
}

test('an admin enrols an authenticator app, then signs in with a code; the owner requires it for everyone', async ({
  browser,
  serve,
}, testInfo) => {
  const base = serve.info.admin_url;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(serve.info.setup_url!);
  await page.getByTestId('setup-email').fill(EMAIL);
  await page.getByTestId('setup-name').fill('Ana Ruiz');
  await page.getByTestId('setup-password').fill(PASSWORD);
  await page.getByTestId('setup-password-again').fill(PASSWORD);
  await page.getByTestId('setup-submit').click();
  await expect(page.getByRole('heading', { name: 'Dashboard', level: 1 })).toBeVisible();

  // Her own page, from her name in the header: two-factor is off; set it up.
  await page.getByTestId('signed-in-as').click();
  await expect(page.getByRole('heading', { name: 'My account', level: 1 })).toBeVisible();
  await expect(page.getByTestId('two-factor-state')).toHaveText('Off');
  await page.getByTestId('two-factor-start').click();
  await expect(page.getByTestId('two-factor-qr')).toBeVisible();
  const secret = await shownSecret(page);
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  await shot(page, 'two-factor-enrol', testInfo);
  // A wrong code is refused, and says so.
  await page.getByTestId('two-factor-enrol-code').fill('000000');
  await page.getByTestId('two-factor-enrol-confirm').click();
  await expect(page.getByText('That code does not match')).toBeVisible();
  await page.getByTestId('two-factor-enrol-code').fill(codeOf(secret));
  await page.getByTestId('two-factor-enrol-confirm').click();
  await expect(page.getByTestId('recovery-code')).toHaveCount(10);
  const recovery = await page.getByTestId('recovery-code').allTextContents();
  await shot(page, 'two-factor-recovery-codes', testInfo);
  await page.getByTestId('recovery-codes-done').click();
  await expect(page.getByTestId('two-factor-state')).toHaveText('On');
  await expect(page.getByText('10 of 10 recovery codes left')).toBeVisible();

  // Signed out, then in again: the password, then a code (a wrong one refused first).
  await page.getByTestId('sign-out').click();
  await signInWithPassword(page, EMAIL, PASSWORD);
  await expect(page.getByTestId('two-factor-sign-in')).toBeVisible();
  await page.getByTestId('two-factor-code').fill('123456');
  await page.getByTestId('two-factor-submit').click();
  await expect(page.getByText('That code is not right')).toBeVisible();
  await shot(page, 'two-factor-sign-in', testInfo);
  // (The enrolment's code is spent: the app's next one.)
  await page.getByTestId('two-factor-code').fill(codeOf(secret, 1));
  await page.getByTestId('two-factor-submit').click();
  await expect(page.getByRole('heading', { name: 'Dashboard', level: 1 })).toBeVisible();

  // A second browser signs in with a recovery code; her page lists both sessions and ends the other.
  const phone = await browser.newContext({ userAgent: 'Mozilla/5.0 (Linux; Android 16) AppleWebKit/537.36 Chrome/150.0 Mobile' });
  const phonePage = await phone.newPage();
  await phonePage.goto(`${base}/sign-in`);
  await signInWithPassword(phonePage, EMAIL, PASSWORD);
  await phonePage.getByTestId('two-factor-code').fill(recovery[0]!);
  await phonePage.getByTestId('two-factor-submit').click();
  await expect(phonePage.getByRole('heading', { name: 'Dashboard', level: 1 })).toBeVisible();
  await page.goto(`${base}/account`);
  await expect(page.getByTestId('session-row')).toHaveCount(2);
  await expect(page.locator('[data-testid="session-row"][data-current="true"]')).toContainText('This browser');
  await expect(page.locator('[data-testid="session-row"][data-current="false"]')).toContainText('Chrome 150 on Android');
  await expect(page.getByText('9 of 10 recovery codes left')).toBeVisible();
  await shot(page, 'account-page', testInfo, { fullPage: true });
  await page.getByTestId('end-other-sessions').click();
  await page.getByRole('button', { name: 'Sign out the others' }).click();
  await expect(page.getByTestId('session-row')).toHaveCount(1);
  await phonePage.reload();
  await expect(phonePage.getByRole('heading', { name: 'You are signed out', level: 1 })).toBeVisible();
  await phone.close();

  // The owner requires two-factor for everyone (Settings → Sign-in).
  await page.goto(`${base}/settings#sign-in`);
  await page.getByTestId('require-two-factor').check();
  await page.getByRole('button', { name: 'Save sign-in settings' }).click();
  await expect(page.getByText('Sign-in settings saved.')).toBeVisible();
  await shot(page.getByTestId('sign-in-settings'), 'sign-in-settings', testInfo);

  // Bo, an admin without two-factor, is sent to enrol at sign-in before reaching anything else.
  const invited = await adminOf(serve.info).accounts.invite({
    body: { email: BO, role: 'admin', display_name: 'Bo Berg', no_email: true },
  });
  const token = new URL(invited.setup_url!).searchParams.get('token')!;
  const boContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const accepted = await boContext.request.post(`${base}/auth/invitation`, {
    headers: { 'sec-fetch-site': 'same-origin' },
    data: { token, password: BO_PASSWORD },
  });
  expect(await accepted.json()).toMatchObject({ signed_in: false, second_step: 'enrol' });
  const bo = await boContext.newPage();
  await bo.goto(`${base}/devices`);
  await expect(bo.getByRole('heading', { name: 'You are signed out', level: 1 })).toBeVisible();
  await signInWithPassword(bo, BO, BO_PASSWORD);
  await expect(bo.getByRole('heading', { name: 'Set up two-factor sign-in', level: 1 })).toBeVisible();
  await expect(bo.getByTestId('two-factor-required')).toBeVisible();
  const bosSecret = await shownSecret(bo);
  await shot(bo, 'two-factor-required-enrol', testInfo);
  await bo.getByTestId('two-factor-enrol-code').fill(codeOf(bosSecret));
  await bo.getByTestId('two-factor-enrol-confirm').click();
  await expect(bo.getByTestId('recovery-code')).toHaveCount(10);
  await bo.getByTestId('recovery-codes-done').click();
  // Then the page asked for at first.
  await expect(bo.getByRole('heading', { name: 'Devices', level: 1 })).toBeVisible();
  await expect(bo.getByTestId('signed-in-as')).toContainText('Bo Berg');
  await boContext.close();

  // Cy, invited now, sets up two-factor right after choosing a password on the set-password page.
  const cy = await adminOf(serve.info).accounts.invite({
    body: { email: 'cy@example.org', role: 'observer', display_name: 'Cy', no_email: true },
  });
  const cyContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const cyPage = await cyContext.newPage();
  await cyPage.goto(cy.setup_url!);
  await cyPage.getByTestId('set-password-password').fill('cy’s long password');
  await cyPage.getByTestId('set-password-again').fill('cy’s long password');
  await cyPage.getByTestId('set-password-submit').click();
  await expect(cyPage.getByRole('heading', { name: 'Set up two-factor sign-in', level: 1 })).toBeVisible();
  await cyPage.getByTestId('two-factor-enrol-code').fill(codeOf(await shownSecret(cyPage)));
  await cyPage.getByTestId('two-factor-enrol-confirm').click();
  await expect(cyPage.getByTestId('recovery-code')).toHaveCount(10);
  await cyPage.getByTestId('recovery-codes-done').click();
  await expect(cyPage.getByRole('heading', { name: 'Dashboard', level: 1 })).toBeVisible();
  await expect(cyPage.getByTestId('signed-in-as')).toContainText('Cy');
  await cyContext.close();
  await context.close();
});
