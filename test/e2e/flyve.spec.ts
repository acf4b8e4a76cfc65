import { admin, expect, shot, test } from './fixtures.ts';

// The agent app setting in the console, a simulated Flyve agent (rc.7, HTTP reports) enrolled from the
// invitation page, and what its inventory and position look like in the device panel.
test('agent app "Flyve MDM": settings, dashboard, invitation dialog, a simulated Flyve device and its inventory', async ({
  page,
}, testInfo) => {
  await page.goto('/settings');
  const select = page.getByTestId('agent-app');
  await select.click();
  await page.getByRole('option', { name: 'Flyve MDM agent (Android/iOS)' }).click();
  await page.getByRole('button', { name: 'Save changes' }).click();
  await expect.poll(async () => (await admin.settings.get()).agent_app).toBe('flyve');
  try {
    await page.goto('/');
    await expect(page.getByTestId('server-status').getByTestId('agent-app-note')).toContainText('Flyve MDM agent');

    await page.goto('/invitations');
    await page.getByRole('button', { name: 'New invitation' }).click();
    const dialog = page.getByRole('dialog', { name: 'New invitation' });
    await expect(dialog.getByTestId('agent-app-note')).toContainText('flyve://register');
    await shot(page, 'flyve-invitation-dialog', testInfo);
    const email = `flyve.${Date.now()}@example.com`;
    await dialog.getByLabel('Email address').fill(email);
    await dialog.getByRole('button', { name: 'Create invitation' }).click();
    await expect(page).toHaveURL(/\/invitations\/\d+$/);
    const id = Number(new URL(page.url()).pathname.split('/').pop());
    expect((await admin.invitations.get({ params: { id } })).app_link).toMatch(/^flyve:\/\/register\?data=/);

    // "Simulate a device" follows the setting: a Flyve agent, Flyve resource names.
    await page.getByRole('button', { name: 'Simulate a device' }).click();
    const simulated = page.getByRole('dialog', { name: 'Simulated device' });
    await expect(simulated.getByText('The simulated device enrolled')).toBeVisible({ timeout: 20_000 });
    await expect(simulated.getByTestId('simulation-log')).toContainText('POST PluginFlyvemdmAgent');
    await simulated.getByRole('button', { name: 'Close', exact: true }).click();
    const agentId = (await admin.invitations.get({ params: { id } })).agent!.id;

    await page.goto('/devices');
    const row = page.locator(`tr[data-agent-id="${agentId}"]`);
    await expect(row).toContainText('Android', { timeout: 15_000 });
    await expect(row.getByTestId('online')).toHaveAttribute('data-online', 'true', { timeout: 15_000 });
    await row.click();
    const drawer = page.getByRole('dialog', { name: 'Device' });
    const inventory = drawer.getByTestId('agent-inventory');
    await expect(inventory).toContainText('at enrollment');
    await drawer.getByRole('button', { name: 'Inventory', exact: true }).click();
    await expect(inventory).toContainText('over HTTP', { timeout: 15_000 });
    await expect(inventory).toContainText('IMEI');
    await expect(inventory).toContainText('Battery');
    await drawer.getByRole('button', { name: 'Geolocate' }).click();
    await expect(inventory.getByText('Position')).toBeVisible({ timeout: 15_000 });
    await inventory.getByText(/Installed applications/).click();
    await expect(inventory.getByTestId('agent-applications')).toContainText('org.flyve.mdm.agent');
    await shot(page, 'flyve-device-inventory', testInfo);
  } finally {
    await admin.settings.update({ body: { agent_app: 'spec' } });
  }
});
