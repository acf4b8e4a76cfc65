import { startDevice, type SimulatedDevice } from '../../src-main/device/device.ts';
import { admin, expect, shot, test } from './fixtures.ts';

test('from the console alone: apply the recommended baseline to a fleet of three devices and watch each policy reach its end live', async ({
  page,
}, testInfo) => {
  test.setTimeout(600_000); // 38 policies × 3 devices on a shared, busy machine: a bound, not a measure
  const fleet = `Baseline ${Date.now()}`;
  const devices: SimulatedDevice[] = [];
  try {
    const created = await admin.fleets.create(fleet);
    // Three simulated phones: a system agent on Android 13, an Android 4.4 phone, an Android 12 one.
    const kinds = [{ androidVersion: '13', system: true }, { androidVersion: '4.4' }, { androidVersion: '12' }];
    for (const [i, kind] of kinds.entries()) {
      const email = `baseline${i}.${Date.now()}@example.com`;
      const invitation = await admin.invitations.create({ email, fleet, send_email: false });
      devices.push(
        await startDevice({ deeplink: invitation.deeplink, email, ...kind, mqtt: { backoff: { initialMs: 200, maxMs: 2000 } } }),
      );
    }

    await page.goto(`/fleets/${created.id}`);
    const panel = page.getByTestId('fleet-policies');
    await expect(panel).toContainText(`0 of 38 policies set on ${fleet}.`);
    await panel.getByRole('button', { name: 'Apply the recommended baseline' }).click();
    await page.getByRole('button', { name: 'Apply baseline' }).click();
    await expect(panel).toContainText(`38 of 38 policies set on ${fleet}.`, { timeout: 300_000 });

    // Each policy's progress settles by itself: every device done, or incompatible where it cannot apply it.
    const camera = panel.locator('tr[data-policy="disableCamera"]');
    await expect(camera.getByTestId('deployment-progress')).toHaveText('3 of 3 done', { timeout: 120_000 });
    const roaming = panel.locator('tr[data-policy="disableRoaming"]');
    await expect(roaming.getByTestId('deployment-progress')).toHaveText('2 of 3 done, 1 incompatible', { timeout: 120_000 });
    const adb = panel.locator('tr[data-policy="disableUsbAdb"]');
    await expect(adb.getByTestId('deployment-progress')).toHaveText('1 of 3 done, 2 incompatible', { timeout: 120_000 });
    await roaming.getByRole('button', { name: 'Show devices' }).click();
    await expect(page.locator('[data-testid^="deployment-tasks-"]').locator('[data-status="incompatible"]')).toHaveCount(1);
    await shot(page, 'fleet-policies-baseline', testInfo);

    // Change one value from its form: the new value replaces the old one on every device.
    const length = panel.locator('tr[data-policy="passwordMinLength"]');
    await length.getByRole('textbox', { name: 'Minimum password length' }).fill('8');
    await length.getByRole('button', { name: 'Change' }).click();
    await expect(length).toContainText('In force: 8 characters', { timeout: 30_000 });
    await expect(length.getByTestId('deployment-progress')).toHaveText('3 of 3 done', { timeout: 120_000 });
    for (const device of devices) expect(device.policies.state.settings.passwordMinLength?.value).toBe(8);

    // A device's panel: its effective policies, where each comes from and its status.
    await page.goto(`/devices?agent=${devices[1]!.enrollment.agentId}`);
    const own = page.getByTestId('device-policies');
    await expect(own.locator('tr[data-policy="disableRoaming"]')).toContainText('Android 4.4 cannot apply disableRoaming');
    await expect(own.locator('tr[data-policy="disableCamera"]')).toContainText(`from fleet "${fleet}"`);
    await shot(own, 'device-policies', testInfo);

    // The dashboard's compliance per fleet: the system agent on Android 13 follows every policy.
    await page.goto('/');
    const summary = page.getByTestId('compliance-summary').locator(`tr[data-fleet-id="${created.id}"]`);
    await expect(summary).toContainText('1 of 3', { timeout: 120_000 });
    await expect(summary.locator('td').nth(3)).toHaveText('2');
  } finally {
    await Promise.all(devices.map((device) => device.stop()));
  }
});
