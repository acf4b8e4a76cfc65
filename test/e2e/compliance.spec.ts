import type { Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { enrollSilently } from '../../src-main/device/agent.ts';
import { startDevice, type SimulatedDevice } from '../../src-main/device/device.ts';
import { admin, expect, server, shot, test } from './fixtures.ts';

const APK = readFileSync(fileURLToPath(new URL('../fixtures/field-app.apk', import.meta.url)));

// axe runs inside the page: the console's strict CSP would refuse the injected script.
test.use({ bypassCSP: true });

/** axe-core's serious and critical findings (as in axe.spec.ts): the compliance colours must read. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.waitForTimeout(400);
  await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
  const found = await page.evaluate(async () => {
    const scope = globalThis as unknown as {
      axe: {
        run(
          context: unknown,
          options: unknown,
        ): Promise<{ violations: { id: string; impact: string | null; nodes: { target: string[] }[] }[] }>;
      };
      document: unknown;
    };
    return (await scope.axe.run(scope.document, { resultTypes: ['violations'] })).violations;
  });
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

async function invite(fleet: string, tag: string) {
  const email = `${tag}.${Date.now()}@example.com`;
  const invitation = await admin.invitations.create({ body: { email, fleet, send_email: false } });
  return { deeplink: invitation.deeplink, email };
}

test('the devices table: a compliance column, filterable, live; a device panel sets and unsets its own value', async ({
  page,
}, testInfo) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  const fleet = `Compliance ${Date.now()}`;
  const devices: SimulatedDevice[] = [];
  try {
    await admin.fleets.create({ body: { name: fleet } });
    // A phone that applies everything, an Android 4.4 one, and one enrolled but never connected.
    const modern = await startDevice({ ...(await invite(fleet, 'modern')), androidVersion: '13' });
    devices.push(modern);
    const old = await startDevice({ ...(await invite(fleet, 'old')), androidVersion: '4.4' });
    devices.push(old);
    const silent = await enrollSilently(await invite(fleet, 'silent'));
    const row = (agentId: string | number) => page.locator(`[data-testid="devices-table"] tr[data-agent-id="${agentId}"]`);
    const cell = (agentId: string | number) => row(agentId).getByTestId('device-compliance');

    await page.goto('/devices');
    await page.getByRole('combobox', { name: 'Fleet' }).click();
    await page.getByRole('option', { name: fleet }).click();
    await expect(cell(modern.enrollment.agentId)).toHaveText('no policy');

    // Two policies on the fleet: the column follows each device live.
    await admin.policies.set({ body: { policy: 'disableCamera', value: true, fleet } });
    await admin.policies.set({ body: { policy: 'disableRoaming', value: true, fleet } });
    await expect(cell(modern.enrollment.agentId)).toHaveText('all 2 done', { timeout: 30_000 });
    await expect(cell(modern.enrollment.agentId)).toHaveAttribute('data-compliance', 'compliant');
    await expect(cell(old.enrollment.agentId)).toHaveText('1 incompatible', { timeout: 30_000 });
    await expect(cell(old.enrollment.agentId)).toHaveAttribute('data-compliance', 'failing');
    await expect(cell(silent.agentId)).toHaveText('2 pending');
    await shot(page, 'devices-compliance-column', testInfo);
    expect(await seriousViolations(page), 'axe, the devices table with every compliance state').toEqual([]);

    // The filter: only the failing one, then only the pending one.
    await page.getByRole('combobox', { name: 'Compliance' }).click();
    await page.getByRole('option', { name: 'Failed or incompatible' }).click();
    await expect(row(old.enrollment.agentId)).toBeVisible();
    await expect(row(modern.enrollment.agentId)).toHaveCount(0);
    await expect(row(silent.agentId)).toHaveCount(0);
    await expect(page.getByTestId('devices-count')).toHaveText(/^1 of \d+$/);
    await page.getByRole('combobox', { name: 'Compliance' }).click();
    await page.getByRole('option', { name: 'Pending' }).click();
    await expect(row(silent.agentId)).toBeVisible();
    await expect(row(old.enrollment.agentId)).toHaveCount(0);
    await page.getByRole('combobox', { name: 'Compliance' }).click();
    await page.getByRole('option', { name: 'Pending' }).click(); // chosen again: cleared
    await expect(row(modern.enrollment.agentId)).toBeVisible();

    // The modern phone's panel: its own value of disableCamera beats the fleet's, then is unset.
    await row(modern.enrollment.agentId).click();
    const form = page.getByTestId('device-policy-form');
    await form.getByRole('combobox', { name: 'Policy' }).fill('camera');
    await page.getByRole('option', { name: 'Disable camera' }).click();
    await expect(form.getByTestId('device-policy-current')).toHaveText(`In force: Yes, from fleet "${fleet}" (done)`);
    await form.getByRole('switch', { name: 'Disable camera' }).click({ force: true });
    await form.getByRole('button', { name: 'Set for this device' }).click();
    await expect(form.getByTestId('device-policy-current')).toHaveText('In force: No, from this device (done)', {
      timeout: 30_000,
    });
    const own = page.getByTestId('device-policies').locator('tr[data-policy="disableCamera"]');
    await expect(own.filter({ hasText: 'from this device' })).toHaveAttribute('data-effective', 'true');
    await expect(own.filter({ hasText: `from fleet "${fleet}"` })).toContainText('overriden');
    await expect.poll(() => modern.policies.state.settings.disableCamera?.value, { timeout: 30_000 }).toBe(false);
    await shot(page.getByTestId('device-policy-form'), 'device-policy-form', testInfo);
    await shot(page, 'device-panel-own-value', testInfo);
    await page.getByRole('button', { name: "Unset the device's Disable camera" }).click();
    await expect(form.getByTestId('device-policy-current')).toHaveText(`In force: Yes, from fleet "${fleet}" (done)`, {
      timeout: 30_000,
    });
    await expect.poll(() => modern.policies.state.settings.disableCamera?.value, { timeout: 30_000 }).toBe(true);
  } finally {
    await Promise.all(devices.map((device) => device.stop()));
  }
});

test('package installs verified by the inventory: asked for from the task row, verified or not found, live', async ({
  page,
}, testInfo) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  const fleet = `Verified ${Date.now()}`;
  const devices: SimulatedDevice[] = [];
  try {
    const created = await admin.fleets.create({ body: { name: fleet } });
    const honest = await startDevice({ ...(await invite(fleet, 'honest')) });
    devices.push(honest);
    // Reports the install done, but installs nothing.
    const liar = await startDevice({ ...(await invite(fleet, 'liar')), install: false });
    devices.push(liar);
    const uploaded = await fetch(`${server.admin_url}/api/packages?name=field-app.apk`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.admin_token}`, 'content-type': 'application/octet-stream' },
      body: APK,
    });
    expect(uploaded.status).toBe(201);
    const pkg = (await uploaded.json()) as { id: number };
    await admin.deployments.create({ body: { kind: 'package', item_id: pkg.id, fleet } });

    await page.goto(`/fleets/${created.id}`);
    const deployment = page.locator('[data-testid="deployment-list"] tr[data-item-name="field-app.apk"]').first();
    await expect(deployment.getByTestId('deployment-progress')).toHaveText('2 of 2 done', { timeout: 30_000 });
    await deployment.getByRole('button', { name: 'Show devices' }).click();
    const task = (device: SimulatedDevice) =>
      page.locator(`[data-testid^="deployment-tasks-"] tr[data-agent-id="${device.enrollment.agentId}"]`);
    for (const device of devices) await expect(task(device).getByTestId('task-verification')).toHaveText('awaiting inventory');

    for (const device of devices)
      await task(device)
        .getByRole('button', { name: `Ask ${String(device.enrollment.agent.name)} for an inventory` })
        .click();
    await expect(task(honest).getByTestId('task-verification')).toContainText('verified', { timeout: 30_000 });
    await expect(task(honest).getByTestId('task-verification')).toContainText('inventory');
    await expect(task(liar).getByTestId('task-verification')).toContainText('not found in inventory', { timeout: 30_000 });
    await expect(task(liar).locator('[data-status="done"]')).toBeVisible(); // the agent said done; the inventory says otherwise
    await page.mouse.move(0, 0); // no tooltip over the rows
    await shot(page.getByTestId('deployment-list').first(), 'deployment-verified-by-inventory', testInfo);
  } finally {
    await Promise.all(devices.map((device) => device.stop()));
  }
});
