import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startDevice, type SimulatedDevice } from '../../src-main/device/device.ts';
import { api, expect, shot, test } from './fixtures.ts';

const APK = readFileSync(fileURLToPath(new URL('../fixtures/field-app.apk', import.meta.url)));

test('from the console alone: upload an APK, deploy it to a fleet of three devices, watch all three take it live', async ({ page }, testInfo) => {
  const fleet = `Field ${Date.now()}`;
  const devices: SimulatedDevice[] = [];
  try {
    // The fleet, created on the Fleets page.
    await page.goto('/fleets');
    await page.getByLabel('New fleet').fill(fleet);
    await page.getByRole('button', { name: 'Create' }).click();
    const row = page.getByTestId('fleet-list').locator(`tr[data-fleet-name="${fleet}"]`);
    await expect(row).toBeVisible();
    await expect(row.getByTestId('fleet-device-count')).toHaveText('0');

    // Three simulated devices enroll into it: the count follows live.
    for (let i = 0; i < 3; i++) {
      const email = `field${i}.${Date.now()}@example.com`;
      const invitation = await api('POST', '/invitations', { email, fleet, send_email: false });
      devices.push(await startDevice({ deeplink: invitation.deeplink, email, mqtt: { backoff: { initialMs: 200, maxMs: 2000 } } }));
    }
    await expect(row.getByTestId('fleet-device-count')).toHaveText('3');

    // The APK, uploaded by drag and drop: its manifest is read and shown.
    await page.goto('/files?tab=packages');
    await page.getByTestId('package-dropzone').locator('input[type="file"]').setInputFiles({ name: 'field-app.apk', mimeType: 'application/vnd.android.package-archive', buffer: APK });
    const item = page.getByTestId('package-table').locator('tr[data-item-name="field-app.apk"]').first();
    await expect(item.getByTestId('package-info')).toContainText('org.example.fieldapp · version 4.2.0 (code 42)');
    await expect(item).toContainText('Field App');

    // Deploy to… the fleet.
    await item.getByRole('button', { name: 'Deploy field-app.apk' }).click();
    const dialog = page.getByRole('dialog', { name: 'Deploy field-app.apk' });
    await dialog.getByRole('combobox', { name: 'Fleet' }).click();
    await page.getByRole('option', { name: `${fleet} (3 devices)` }).click();
    await dialog.getByRole('button', { name: 'Deploy' }).click();
    await expect(dialog).toBeHidden();

    // The fleet's page: the progress bar reaches "3 of 3 done" by itself, and each device says done.
    await page.getByRole('link', { name: 'Fleets' }).click();
    await page.getByTestId('fleet-list').getByRole('link', { name: fleet }).click();
    const deployment = page.locator('[data-testid="deployment-list"] tr[data-item-name="field-app.apk"]').first();
    await expect(deployment.getByTestId('deployment-progress')).toHaveText('3 of 3 done', { timeout: 30_000 });
    await deployment.getByRole('button', { name: 'Show devices' }).click();
    const tasks = page.locator('[data-testid^="deployment-tasks-"]');
    await expect(tasks.locator('[data-status="done"]')).toHaveCount(3);
    await shot(page, 'fleet-deployment-done', testInfo, { fullPage: true });
    for (const device of devices) expect(device.policies.state.apps['org.example.fieldapp']?.versionCode).toBe(42);

    // A device's panel lists its task and its steps.
    await page.goto(`/devices?agent=${devices[0]!.enrollment.agentId}`);
    await expect(page.getByTestId('device-tasks')).toContainText('pending → received → in progress → done');
  } finally {
    await Promise.all(devices.map((device) => device.stop()));
  }
});
