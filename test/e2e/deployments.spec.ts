import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startDevice, type SimulatedDevice } from '../../src-main/device/device.ts';
import { admin, expect, shot, test } from './fixtures.ts';

const APK = readFileSync(fileURLToPath(new URL('../fixtures/field-app.apk', import.meta.url)));

test('from the console alone: upload an APK, deploy it to a fleet of three devices, watch all three take it live', async ({
  page,
}, testInfo) => {
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
      const invitation = await admin.invitations.create({ body: { email, fleet, send_email: false } });
      devices.push(
        await startDevice({ deeplink: invitation.deeplink, email, mqtt: { backoff: { initialMs: 200, maxMs: 2000 } } }),
      );
    }
    await expect(row.getByTestId('fleet-device-count')).toHaveText('3');

    // The APK, uploaded by drag and drop: its manifest is read and shown.
    await page.goto('/files?tab=packages');
    await page
      .getByTestId('package-dropzone')
      .locator('input[type="file"]')
      .setInputFiles({ name: 'field-app.apk', mimeType: 'application/vnd.android.package-archive', buffer: APK });
    const item = page.getByTestId('package-table').locator('tr[data-item-name="field-app.apk"]').first();
    await expect(item.getByTestId('package-info')).toContainText('org.example.fieldapp · version 4.2.0 (code 42)');
    await expect(item).toContainText('Field App');
    await shot(page, 'packages-apk-manifest', testInfo);

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
    await shot(page.getByTestId('device-tasks'), 'device-tasks', testInfo);
  } finally {
    await Promise.all(devices.map((device) => device.stop()));
  }
});

test('bulk import creates the fleets a CSV names when asked', async ({ page }) => {
  const stamp = Date.now();
  const fleet = `Imported ${stamp}`;
  const csv = [
    'email,firstname,lastname,fleet',
    `ann.${stamp}@example.com,Ann,Lee,${fleet}`,
    `bo.${stamp}@example.com,Bo,Kim,${fleet}`,
  ].join('\r\n');
  await page.goto('/invitations');
  await page.getByRole('button', { name: 'Invite many' }).click();
  const dialog = page.getByRole('dialog', { name: 'Invite many people' });
  await dialog.getByRole('tab', { name: 'CSV file' }).click();
  await dialog
    .locator('input[type="file"]')
    .setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
  const preview = dialog.getByTestId('bulk-preview');
  await expect(preview.locator('tbody tr[data-valid="false"]')).toHaveCount(2);
  await expect(preview).toContainText(`unknown fleet "${fleet}"`);

  await dialog.getByTestId('create-fleets').check();
  await expect(preview.locator('tbody tr[data-valid="false"]')).toHaveCount(0);
  await dialog.getByRole('button', { name: 'Create 2 invitations' }).click();
  await expect(dialog.getByTestId('bulk-summary')).toContainText('2 created');
  const fleets = (await admin.fleets.list()).items;
  const created = fleets.find((f) => f.name === fleet);
  expect(created).toBeDefined();
  const listed = await admin.invitations.list({ query: { q: String(stamp) } });
  expect(listed.items.map((i) => i.fleet)).toEqual([fleet, fleet]);
});

test('a package with no manifest read gets its package name from the admin, then can be deployed', async ({ page }) => {
  const name = `tool-${Date.now()}.ipa`;
  await page.goto('/files?tab=packages');
  await page
    .getByTestId('package-dropzone')
    .locator('input[type="file"]')
    .setInputFiles({ name, mimeType: 'application/octet-stream', buffer: Buffer.from('not an apk') });
  const item = page.getByTestId('package-table').locator(`tr[data-item-name="${name}"]`);
  await expect(item.getByTestId('package-info')).toContainText('no package name');
  await expect(item.getByRole('button', { name: `Deploy ${name}` })).toBeDisabled();
  await item.getByRole('button', { name: `Set the package name of ${name}` }).click();
  const dialog = page.getByRole('dialog', { name: `Install details of ${name}` });
  await dialog.getByLabel('Package name').fill('no dots');
  await expect(dialog.getByText('Dot-separated names, e.g. com.example.app')).toBeVisible();
  await dialog.getByLabel('Package name').fill('com.example.tool');
  await dialog.getByLabel('Version code').fill('7');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await expect(dialog).toBeHidden();
  await expect(item.getByTestId('package-info')).toContainText('com.example.tool');
  await expect(item.getByTestId('package-info')).toContainText('(code 7)');
  await expect(item.getByRole('button', { name: `Deploy ${name}` })).toBeEnabled();
});
