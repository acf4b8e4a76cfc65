import { admin, expect, shot, test } from './fixtures.ts';

test('inviting an address with a pending invitation says so, and offers to resend it or create another', async ({
  page,
  consoleGuard,
}, testInfo) => {
  // The server refuses the second invitation with 409 ERROR_INVITATION_PENDING, which the dialog
  // turns into its offer; Chromium logs the refused request itself.
  consoleGuard.allow(
    /^Failed to load resource: the server responded with a status of 409 \(Conflict\) @ http:\/\/127\.0\.0\.1:\d+\/api\/invitations$/,
    'the pending invitation refused on purpose',
  );
  const email = `pending.${Date.now()}@example.com`;
  const first = await admin.invitations.create({ email, send_email: false });
  await page.goto('/invitations');
  await page.getByRole('button', { name: 'New invitation' }).click();
  const dialog = page.getByRole('dialog', { name: 'New invitation' });
  await dialog.getByLabel('Email address').fill(email.toUpperCase());
  await dialog.getByRole('button', { name: 'Create invitation' }).click();

  const alert = dialog.getByTestId('pending-invitation');
  await expect(alert).toContainText(`${email} already has a pending invitation (#${first.id})`);
  await shot(page, 'invitation-pending-alert', testInfo);
  expect((await admin.invitations.list({ q: email })).total).toBe(1);

  // Resend: the same invitation is emailed again (no SMTP here: to the outbox), and its page opens.
  await alert.getByRole('button', { name: `Resend invitation #${first.id}` }).click();
  await expect(page).toHaveURL(new RegExp(`/invitations/${first.id}$`), { timeout: 15_000 });
  await expect(page.getByTestId('delivery-state')).toHaveText('Email in outbox');
  expect((await admin.invitations.list({ q: email })).total).toBe(1);

  // A second device: asked for explicitly.
  await page.goto('/invitations');
  await page.getByRole('button', { name: 'New invitation' }).click();
  await dialog.getByLabel('Email address').fill(email);
  await dialog.getByRole('button', { name: 'Create invitation' }).click();
  await dialog.getByTestId('pending-invitation').getByRole('button', { name: 'Create another anyway' }).click();
  await expect(page).toHaveURL(/\/invitations\/\d+$/, { timeout: 15_000 });
  const second = Number(new URL(page.url()).pathname.split('/').pop());
  expect(second).not.toBe(first.id);
  expect((await admin.invitations.list({ q: email })).total).toBe(2);
});
