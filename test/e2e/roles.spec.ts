import type { Page } from '@playwright/test';
import { createRequire } from 'node:module';
import { admin, expect, server, shot, test } from './fixtures.ts';

// Roles in the console (issue 22, item 2): an operator — invited by the owner through the API, their
// set-up link used, so signed in with a session of their own — sees what the helpdesk may not do
// disabled with the reason (wipe, unenroll, delete, the settings, uploads) and does what it may (lock),
// while the owner's own console keeps every control.

const tag = () => String(Date.now()).slice(-6);

/** axe-core's serious and critical findings on the page as it is (as in axe.spec.ts). */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.waitForTimeout(400);
  await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
  const found = await page.evaluate(async () => {
    const scope = globalThis as unknown as {
      axe: { run(context: unknown, options: unknown): Promise<{ violations: { id: string; impact: string | null }[] }> };
      document: unknown;
    };
    return (await scope.axe.run(scope.document, { resultTypes: ['violations'] })).violations;
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}`);
}

test('an operator: wipe, delete and settings disabled with the reason; lock works', async ({ browser, page }, testInfo) => {
  const t = tag();
  const invitation = await admin.invitations.create({ body: { email: `helpdesk.phone.${t}@example.com`, send_email: false } });
  const simulated = await admin.invitations.simulate({ params: { id: invitation.id } });
  expect(simulated.ok, simulated.error ?? '').toBe(true);
  const agentId = simulated.agent_id as number;

  // The owner invites an operator; the set-up link is used from the operator's own browser.
  const email = `sam.operator.${t}@example.org`;
  const invited = await admin.accounts.invite({
    body: { email, role: 'operator', display_name: 'Sam Operator', no_email: true },
  });
  const token = new URL(invited.setup_url!).searchParams.get('token')!;
  // (CSP bypassed only so that axe can be injected below.)
  const context = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    baseURL: server.admin_url,
    bypassCSP: true,
  });
  const accepted = await context.request.post('/auth/invitation', {
    headers: { origin: server.admin_url },
    data: { token, password: 'a helpdesk password' },
  });
  expect(accepted.status(), await accepted.text()).toBe(200);
  const operator = await context.newPage();

  await operator.goto(`/devices?agent=${agentId}`);
  await expect(operator.getByTestId('signed-in-as')).toContainText('operator');
  // Pages the role cannot use are not offered: Accounts is the owner's.
  await expect(
    operator.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Devices', exact: true }),
  ).toBeVisible();
  await expect(operator.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Accounts' })).toHaveCount(0);
  const drawer = operator.getByRole('dialog', { name: 'Device' });
  for (const [name, reason] of [
    ['Wipe', 'Your role (operator) cannot wipe devices'],
    ['Unenroll', 'Your role (operator) cannot unenroll devices'],
    ['Delete device', 'Your role (operator) cannot delete devices'],
  ] as const) {
    await expect(drawer.getByRole('button', { name, exact: true })).toBeDisabled();
    await expect(drawer.getByLabel(reason)).toBeVisible();
  }
  // The reason shows on hover.
  await drawer.getByLabel('Your role (operator) cannot wipe devices').hover();
  await expect(operator.getByRole('tooltip')).toHaveText('Your role (operator) cannot wipe devices');
  await shot(operator, 'operator-device-drawer', testInfo);
  expect(await seriousViolations(operator), 'axe, the operator’s device drawer').toEqual([]);

  // Lock is the helpdesk's: it goes through.
  await drawer.getByRole('button', { name: 'Lock', exact: true }).click();
  await operator.getByRole('dialog', { name: 'Lock this device?' }).getByRole('button', { name: 'Lock' }).click();
  await expect(operator.getByRole('alert').getByText(/^Lock (sent to|is waiting for)/)).toBeVisible();
  await expect.poll(async () => (await admin.agents.get({ params: { id: agentId } })).lock).toBe(1);
  await expect(drawer.getByRole('button', { name: 'Ping', exact: true })).toBeEnabled();

  // Settings: read, not changed.
  await operator.goto('/settings');
  await expect(operator.getByText('Your role (operator) cannot change settings').first()).toBeVisible();
  await expect(operator.getByTestId('helpdesk-name')).toBeDisabled();
  await expect(operator.getByRole('button', { name: 'Save changes' })).toBeDisabled();
  await expect(operator.getByRole('button', { name: 'Add fleet' })).toBeDisabled();
  await shot(operator, 'operator-settings', testInfo);
  expect(await seriousViolations(operator), 'axe, the operator’s settings').toEqual([]);

  // Files: no upload; invitations: the helpdesk invites.
  await operator.goto('/files');
  await expect(
    operator.getByText('Your role (operator) cannot upload, change or delete files and packages').first(),
  ).toBeVisible();
  await expect(operator.getByTestId('file-dropzone')).toHaveCount(0);
  await operator.goto('/invitations');
  await expect(operator.getByRole('button', { name: 'New invitation' })).toBeEnabled();
  // The dashboard names the agent app without offering to change it.
  await operator.goto('/');
  await expect(operator.getByTestId('agent-app-note').first()).toBeVisible();
  await expect(operator.getByTestId('agent-app-note').getByRole('link', { name: 'Change' })).toHaveCount(0);

  // The owner makes them an observer: their open console follows at once (the live stream), no reload.
  await operator.goto(`/devices?agent=${agentId}`);
  await expect(drawer.getByRole('button', { name: 'Lock', exact: true })).toBeEnabled();
  await admin.accounts.update({ params: { id: invited.account.id }, body: { role: 'observer' } });
  await expect(operator.getByTestId('signed-in-as')).toContainText('observer');
  await expect(drawer.getByRole('button', { name: 'Lock', exact: true })).toBeDisabled();
  await expect(drawer.getByLabel('Your role (observer) cannot lock or unlock devices')).toHaveCount(2); // lock, unlock
  await context.close();

  // The owner (this suite's session) keeps every control.
  await page.goto(`/devices?agent=${agentId}`);
  await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Accounts' })).toBeVisible();
  const ownerDrawer = page.getByRole('dialog', { name: 'Device' });
  await expect(ownerDrawer.getByRole('button', { name: 'Wipe', exact: true })).toBeEnabled();
  await expect(ownerDrawer.getByRole('button', { name: 'Delete device' })).toBeEnabled();
  await expect(ownerDrawer.getByLabel(/^Your role/)).toHaveCount(0);
});

test('an admin: everything but the owner’s settings, which show why', async ({ browser }, testInfo) => {
  const t = tag();
  const invited = await admin.accounts.invite({
    body: { email: `alex.admin.${t}@example.org`, role: 'admin', display_name: 'Alex Admin', no_email: true },
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: server.admin_url });
  const accepted = await context.request.post('/auth/invitation', {
    headers: { origin: server.admin_url },
    data: { token: new URL(invited.setup_url!).searchParams.get('token')!, password: 'an admin password' },
  });
  expect(accepted.status(), await accepted.text()).toBe(200);
  const page = await context.newPage();
  await page.goto('/settings');
  await expect(page.getByTestId('signed-in-as')).toContainText('admin');
  await expect(
    page
      .getByText('Your role (admin) cannot change the server settings: the public host, the MQTT TLS port', { exact: false })
      .first(),
  ).toBeVisible();
  await expect(page.getByTestId('public-host-select')).toBeDisabled();
  await expect(page.getByRole('switch', { name: 'Send devices to the MQTT TLS port' })).toBeDisabled();
  await expect(page.getByTestId('helpdesk-name')).toBeEnabled();
  await expect(page.getByRole('textbox', { name: 'Host', exact: true })).toBeDisabled();
  await expect(page.getByRole('textbox', { name: 'From name' })).toBeEnabled();
  await page.getByTestId('helpdesk-name').fill(`Desk ${t}`);
  await page.getByRole('button', { name: 'Save changes' }).click();
  await expect.poll(async () => (await admin.settings.get()).helpdesk_name).toBe(`Desk ${t}`);
  await shot(page, 'admin-settings', testInfo);
  await context.close();
});
