import { startDevice, type SimulatedDevice } from '../../src-main/device/device.ts';
import { admin, expect, shot, test } from './fixtures.ts';

// Issue 25, item 2 in the console: the filter bar takes the filter language (docs/where.md), says
// what is wrong as one types, selects the devices the server finds; "Save as view" keeps it, and
// the sidebar shows the view with a live count; a click on it opens the Devices page filtered.

async function invite(fleet: string, tag: string) {
  const email = `${tag}.${Date.now()}@example.com`;
  const invitation = await admin.invitations.create({ body: { email, fleet, send_email: false } });
  return { deeplink: invitation.deeplink, email };
}

test('the filter bar, Save as view, and the view in the sidebar with its live count', async ({ page }, testInfo) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  const stamp = Date.now();
  const fleet = `Views ${stamp}`;
  const viewName = `Old Android ${stamp % 10000}`;
  const devices: SimulatedDevice[] = [];
  try {
    await admin.fleets.create({ body: { name: fleet } });
    const old = await startDevice({ ...(await invite(fleet, 'old')), androidVersion: '9' });
    devices.push(old);
    const modern = await startDevice({ ...(await invite(fleet, 'modern')), androidVersion: '13' });
    devices.push(modern);
    // Another Android 9, in another fleet for now.
    const elsewhere = `${fleet} (elsewhere)`;
    await admin.fleets.create({ body: { name: elsewhere } });
    const other = await startDevice({ ...(await invite(elsewhere, 'other')), androidVersion: '9' });
    devices.push(other);
    // Their inventories say which Android each runs (what the OS terms read).
    for (const device of devices)
      await admin.agents.command({ params: { id: Number(device.enrollment.agentId) }, body: { command: 'inventory' } });
    await expect
      .poll(async () => (await admin.agents.list({ query: { where: `fleet~"${fleet}" os>0` } })).items.length, {
        timeout: 30_000,
      })
      .toBe(3);
    const row = (device: SimulatedDevice) =>
      page.locator(`[data-testid="devices-table"] tr[data-agent-id="${device.enrollment.agentId}"]`);

    await page.goto('/devices');
    const input = page.getByRole('textbox', { name: 'Filter devices' });
    // A typo is named under the field, with its column, before anything is sent.
    await input.fill(`fleet="${fleet}" os<<10`);
    const error = `Column ${`fleet="${fleet}" os<`.length + 1}: os: expected an OS version like 10 or 10.1, not "<10"`;
    await expect(page.getByText(error)).toBeVisible();
    await expect(page.getByRole('button', { name: 'Save as view' })).toHaveCount(0);
    await shot(page, 'devices-filter-error', testInfo);
    await input.fill(`fleet="${fleet}" os<10`);
    await expect(page.getByText(error)).toHaveCount(0);
    await expect(row(old)).toBeVisible();
    await expect(row(modern)).toHaveCount(0);
    await expect(page.getByTestId('devices-count')).toHaveText(/^1 of \d+$/);
    await expect(page).toHaveURL(/\?where=fleet%3D%22Views/);
    await shot(page, 'devices-filter-bar', testInfo);

    await page.getByRole('button', { name: 'Save as view' }).click();
    await page.getByRole('textbox', { name: 'Name' }).fill(viewName);
    await page.getByRole('button', { name: 'Save view' }).click();
    const link = page.getByTestId('nav-views').getByRole('link', { name: new RegExp(`^${viewName}`) });
    await expect(link).toContainText('1');
    await expect(link).toHaveAttribute('aria-current', 'page');
    await expect(page.getByRole('heading', { name: `Devices: ${viewName}` })).toBeVisible();
    await shot(page, 'devices-saved-view', testInfo);

    // Live: the other Android 9 moves into the fleet: it joins the view, the count follows.
    await page.getByRole('link', { name: 'Devices', exact: true }).click();
    await expect(input).toHaveValue('');
    await expect(row(modern)).toBeVisible();
    await admin.agents.move({ params: { id: Number(other.enrollment.agentId) }, body: { fleet } });
    await expect(link).toContainText('2', { timeout: 30_000 });
    await link.click();
    await expect(input).toHaveValue(`fleet="${fleet}" os<10`);
    await expect(row(other)).toBeVisible();
    await expect(row(old)).toBeVisible();
    await expect(row(modern)).toHaveCount(0);
    await expect(page.getByTestId('devices-count')).toHaveText(/^2 of \d+$/);
    await shot(page, 'devices-view-live-count', testInfo);

    // A policy for the view's devices, from the console: its two devices take it on their own topic, the third does not.
    await page.getByRole('button', { name: 'Policies' }).click();
    const camera = page.getByTestId('view-policies').locator('tr[data-policy="disableCamera"]');
    const toggle = camera.getByRole('switch');
    if (!(await toggle.isChecked())) await toggle.click({ force: true });
    await camera.getByRole('button', { name: 'Apply' }).click();
    await expect(camera.getByTestId('view-policy-progress')).toHaveText('2 devices · 2 done', { timeout: 30_000 });
    await expect.poll(() => old.policies.state.settings.disableCamera?.value, { timeout: 30_000 }).toBe(true);
    await expect.poll(() => other.policies.state.settings.disableCamera?.value, { timeout: 30_000 }).toBe(true);
    expect(modern.policies.state.settings.disableCamera).toBeUndefined();
    await shot(page, 'devices-view-policies', testInfo);
    await camera.getByRole('button', { name: 'Unset Disable camera on the view' }).click();
    await expect(camera).toHaveAttribute('data-set', 'no');
    await expect.poll(() => old.policies.state.settings.disableCamera, { timeout: 30_000 }).toBeUndefined();
    await page.keyboard.press('Escape');
  } finally {
    await Promise.all(devices.map((device) => device.stop()));
    const view = (await admin.views.list()).items.find((v) => v.name === viewName);
    if (view) await admin.views.remove({ params: { id: view.id } });
  }
});
