import { api, expect, shot, test } from './fixtures.ts';

// Defects a first-time user met: the print sheet forgot its paper size; the devices table cut off
// "Last contact" at 1,280 px and did not show a locked or wiped device.

test('the print sheet remembers the paper size chosen last', async ({ page }) => {
  const invitation = await api('POST', '/invitations', { email: `paper.${Date.now()}@example.com`, send_email: false });
  await page.goto(`/print?ids=${invitation.id}`);
  await expect(page.getByTestId('print-sheet')).toBeVisible();
  await page.getByText('Letter', { exact: true }).click();
  await expect(page.getByTestId('print-sheet')).toHaveAttribute('data-paper', 'letter');
  // A new visit without the paper in the address: Letter again.
  await page.goto(`/print?ids=${invitation.id}`.replace(/&paper=\w+/, ''));
  await expect(page.getByTestId('print-sheet')).toHaveAttribute('data-paper', 'letter');
  await page.getByText('A4', { exact: true }).click();
  await page.goto(`/print?ids=${invitation.id}`);
  await expect(page.getByTestId('print-sheet')).toHaveAttribute('data-paper', 'a4');
});

test('devices at 1,280 px: every column shows, "Last contact" included, with the lock and wipe state', async ({ page }, testInfo) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  const invitation = await api('POST', '/invitations', { email: `locked.${Date.now()}@example.com`, send_email: false });
  const simulated = await api('POST', `/invitations/${invitation.id}/simulate`);
  expect(simulated.ok, simulated.error ?? '').toBe(true);
  const id = simulated.agent_id as number;
  await api('POST', `/agents/${id}/commands`, { command: 'lock' });

  await page.goto('/devices');
  const scroll = page.getByTestId('devices-scroll');
  await expect(page.getByRole('columnheader', { name: /Last contact/ })).toBeVisible();
  // Nothing to scroll sideways: the whole table fits.
  const overflow = await scroll.evaluate((el) => el.scrollWidth - el.clientWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  const header = await page.getByRole('columnheader', { name: /Last contact/ }).boundingBox();
  const box = await scroll.boundingBox();
  expect(header!.x + header!.width).toBeLessThanOrEqual(box!.x + box!.width + 1);

  const row = page.locator('tbody tr', { hasText: invitation.email });
  await expect(row.getByTestId('device-locked')).toBeVisible();
  await expect(row.getByTestId('device-locked')).toHaveAttribute('aria-label', 'Locked');
  await expect(row.getByTestId('device-wiped')).toHaveCount(0);
  await shot(page, 'devices-1280-locked', testInfo);
});
