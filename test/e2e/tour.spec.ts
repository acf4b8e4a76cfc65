import { admin, expect, shot, test } from './fixtures.ts';

// Every page in the dark theme and on a narrow window, for the screenshots a reviewer looks at.
test.describe('dark theme', () => {
  test.use({ colorScheme: 'dark' });
  test('every page renders in the dark theme', async ({ page }, testInfo) => {
    const invitation = await admin.invitations.create({
      email: `dark.${Date.now()}@example.com`,
      firstname: 'Dark',
      lastname: 'Mode',
      send_email: false,
    });
    for (const [path, name, heading] of [
      ['/', 'dark-dashboard', 'Dashboard'],
      ['/invitations', 'dark-invitations', 'Invitations'],
      [`/invitations/${invitation.id}`, 'dark-invitation-page', 'Dark Mode'],
      ['/devices', 'dark-devices', 'Devices'],
      ['/files', 'dark-files', 'Files & packages'],
      ['/settings', 'dark-settings', 'Settings'],
      [`/print?ids=${invitation.id}`, 'dark-print-sheet', 'Print sheet'],
    ] as const) {
      await page.goto(path);
      await expect(page.getByRole('heading', { name: heading, exact: true })).toBeVisible();
      await page.waitForTimeout(400);
      await shot(page, name, testInfo);
    }
  });
});

test.describe('narrow window', () => {
  test.use({ viewport: { width: 420, height: 860 } });
  test('the navigation folds into a menu', async ({ page }, testInfo) => {
    await page.goto('/');
    await expect(page.getByRole('heading', { name: 'Dashboard' })).toBeVisible();
    await shot(page, 'narrow-dashboard', testInfo);
    await page.getByRole('button', { name: 'Toggle navigation' }).click();
    await page.getByRole('link', { name: 'Invitations' }).click();
    await expect(page.getByRole('heading', { name: 'Invitations' })).toBeVisible();
    await shot(page, 'narrow-invitations', testInfo);
  });
});

test('an unknown address shows a way back', async ({ page, consoleGuard }, testInfo) => {
  // The console asks for the invitation, the server answers 404, and the page says so.
  consoleGuard.allow(
    /^Failed to load resource: the server responded with a status of 404 \(Not Found\) @ http:\/\/127\.0\.0\.1:\d+\/api\/invitations\/999999$/,
    'an invitation that does not exist, asked for on purpose',
  );
  await page.goto('/no/such/page');
  await expect(page.getByText('There is no page here')).toBeVisible();
  await page.goto('/invitations/999999');
  await expect(page.getByText('This invitation does not exist')).toBeVisible();
  await shot(page, 'not-found', testInfo);
});

test('the dashboard once there is activity', async ({ page }, testInfo) => {
  await page.goto('/');
  await expect(page.getByTestId('activity-feed')).toBeVisible();
  await expect(page.getByTestId('stat-invitations')).not.toHaveText('0');
  await shot(page, 'dashboard-with-data', testInfo, { fullPage: true });
  await page.goto('/invitations');
  await expect(page.getByTestId('invitations-table')).toBeVisible();
  await shot(page, 'invitations-with-data', testInfo);
});
