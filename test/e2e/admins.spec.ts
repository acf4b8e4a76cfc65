import { expect } from '@playwright/test';
import { shot, test } from './fixtures.ts';
import { startServe } from './serve.ts';
import { eventually, startTestSmtp } from '../helpers/smtp.ts';

// Admins managing admins (issue 22, items 5 and 7), in Chromium against a `serve` of its own whose
// mail goes to a real SMTP server: the owner invites an operator on the Accounts page, the email
// arrives, its link opens the set-password page, the operator chooses a password and is signed in,
// signs out and in again with it; the owner sees them active with their last sign-in, disables
// them (their session ends), and the used link reads as used.

test('invite on the Accounts page -> email -> set password -> sign in as that admin; disabled, they are out', async ({
  browser,
  consoleGuard,
}, testInfo) => {
  const smtp = await startTestSmtp();
  const serve = await startServe();
  const base = serve.info.admin_url;
  const ownerContext = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    storageState: { cookies: [], origins: [] },
  });
  const invitedContext = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    storageState: { cookies: [], origins: [] },
  });
  try {
    const settings = await fetch(`${base}/api/mail/settings`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${serve.info.admin_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ smtp_url: smtp.url() }),
    });
    expect(settings.status).toBe(200);

    // The owner invites Bo as an operator.
    const owner = await ownerContext.newPage();
    await owner.goto(serve.info.console_url);
    await owner.getByRole('link', { name: 'Accounts' }).click();
    await expect(owner.getByRole('heading', { name: 'Accounts', level: 1 })).toBeVisible();
    await owner.getByTestId('invite-admin-button').click();
    await owner.getByTestId('invite-admin-email').fill('bo.diaz@example.org');
    await owner.getByTestId('invite-admin-name').fill('Bo Díaz');
    await owner.getByTestId('invite-admin-role').click();
    await owner.getByRole('option', { name: /^Operator:/ }).click();
    // Scoped to the default fleet: Bo sees that fleet's devices, invitations and codes only.
    await owner.getByTestId('invite-admin-fleets').click();
    await owner.getByRole('option', { name: 'Default fleet' }).click();
    await owner.getByTestId('invite-admin-name').click();
    await owner.getByTestId('invite-admin-submit').click();
    const row = owner.getByRole('row').filter({ hasText: 'bo.diaz@example.org' });
    await expect(row.getByTestId('account-status')).toHaveText('invited');
    await expect(row).toContainText('email sent');

    // The email arrives with the link to the set-password page.
    const mail = await eventually(
      () => smtp.received.find((m) => m.envelope.to.includes('bo.diaz@example.org')),
      20_000,
      'the email',
    );
    const link = /http:\/\/\S+\/set-password\?token=[0-9a-f]{64}/.exec(mail.parsed.text ?? '')?.[0];
    expect(link, mail.parsed.text).toBeDefined();

    // Bo opens it in another browser, chooses a password, and is in as an operator.
    const bo = await invitedContext.newPage();
    await bo.goto(link!);
    await expect(bo.getByRole('heading', { name: 'Welcome to MDM Console', level: 1 })).toBeVisible();
    await expect(bo.getByTestId('set-password-email')).toHaveValue('bo.diaz@example.org');
    await expect(bo.getByText(/invited you as an operator/)).toBeVisible();
    await bo.getByTestId('set-password-password').fill('bo chooses a password');
    await bo.getByTestId('set-password-again').fill('bo chooses another');
    await bo.getByTestId('set-password-submit').click();
    await expect(bo.getByText('The two passwords differ.')).toBeVisible();
    await bo.getByTestId('set-password-again').fill('bo chooses a password');
    await shot(bo, 'admin-set-password', testInfo);
    await bo.getByTestId('set-password-submit').click();
    await expect(bo.getByRole('heading', { name: 'Dashboard', level: 1 })).toBeVisible();
    await expect(bo.getByTestId('signed-in-as')).toContainText('Bo Díaz');
    await expect(bo.getByTestId('signed-in-as')).toContainText('operator');

    // Signed out, and in again with the email and the password chosen.
    consoleGuard.allow(
      /status of 401 .* @ .*\/api\/(status|me|events|views)/,
      "Bo signs out, and is later disabled, on purpose: his calls are refused (the sidebar's saved views too)",
    );
    await bo.getByTestId('sign-out').click();
    await bo.getByTestId('sign-in-email').fill('bo.diaz@example.org');
    await bo.getByTestId('sign-in-password').fill('bo chooses a password');
    await bo.getByTestId('sign-in-submit').click();
    await expect(bo.getByTestId('signed-in-as')).toContainText('Bo Díaz');

    // As an operator, the Accounts page says managing admins is the owner's, and offers nothing.
    await bo.goto(`${base}/accounts`);
    await expect(bo.getByTestId('accounts-not-allowed')).toContainText('operator, which cannot manage accounts');
    await expect(bo.getByTestId('invite-admin-button')).toHaveCount(0);

    // The owner's page shows Bo active, with a last sign-in, live.
    await expect(row.getByTestId('account-status')).toHaveText('active');
    await expect(row).toContainText('just now');
    await expect(row.getByTestId('account-role')).toHaveText('operator');
    await expect(row.getByTestId('account-fleets')).toHaveText('fleets: Default fleet');
    await shot(owner, 'accounts', testInfo);

    // The link worked once: opened again, it says so.
    consoleGuard.allow(/status of 410/, 'the used link is read on purpose: the page says it no longer works');
    const again = await invitedContext.newPage();
    await again.goto(link!);
    await expect(again.getByRole('heading', { name: 'This link no longer works', level: 1 })).toBeVisible();
    await expect(again.getByText('This set-up link was used already')).toBeVisible();
    await again.close();

    // Disabled by the owner: Bo's session ends (the next call is refused: the sign-in page).
    await row.getByTestId('account-actions').click();
    await owner.getByRole('menuitem', { name: 'Disable…' }).click();
    await owner.getByRole('dialog').getByRole('button', { name: 'Disable' }).click();
    await expect(row.getByTestId('account-status')).toHaveText('disabled');
    await bo.reload();
    await expect(bo.getByRole('heading', { name: 'You are signed out', level: 1 })).toBeVisible();
    // The owner's own row offers nothing to change.
    await expect(owner.getByRole('row').filter({ hasText: '(you)' }).getByTestId('account-locked')).toBeVisible();
  } finally {
    await ownerContext.close();
    await invitedContext.close();
    await serve.stop();
    await smtp.close();
  }
});
