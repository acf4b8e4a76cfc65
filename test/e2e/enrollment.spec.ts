import { spawn } from 'node:child_process';
import { admin, decodeQrOf, expect, server, shot, test } from './fixtures.ts';
import { CLI, ROOT } from './serve.ts';

test('the printed sign-in link was used once: it cannot sign anyone in again', async ({ browser }) => {
  const context = await browser.newContext({ storageState: undefined });
  const page = await context.newPage();
  await page.goto(server.console_url);
  // It lands on the sign-in page, which says why and what to do, and sets no cookie.
  await expect(page).toHaveURL(`${server.admin_url}/sign-in?link=used`);
  await expect(page.getByText('already been used')).toBeVisible();
  const apiResponse = await page.request.get(`${server.admin_url}/api/status`);
  expect(apiResponse.status()).toBe(401);
  await context.close();
});

test('dashboard: counts, funnel, server status and the loopback warning', async ({ page }, testInfo) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Dashboard' })).toBeVisible();
  await expect(page.getByTestId('live-state')).toHaveAttribute('data-state', 'live');
  await expect(page.getByTestId('loopback-warning')).toContainText('point at 127.0.0.1, an address of this computer only');
  const status = page.getByTestId('server-status');
  await expect(status).toContainText(server.api_url);
  await expect(status).toContainText(`port ${server.mqtt_port}`);
  // The feed shows the newest history (the other specs share this server, so "Server started" may
  // have scrolled out): the latest recorded event is there.
  const { items } = await admin.events({ query: { limit: 1 } });
  await expect(page.getByTestId('activity-feed')).toContainText(items[0]!.message);
  await shot(page, 'dashboard', testInfo, { fullPage: true });
});

test('create an invitation, scan its QR code, and watch a simulated device enroll live', async ({ page }, testInfo) => {
  const email = `ada.${Date.now()}@example.com`;
  const fleetName = `Lab ${Date.now()}`;
  await admin.fleets.create({ body: { name: fleetName } });
  await page.goto('/invitations');
  await page.getByRole('button', { name: 'New invitation' }).click();
  const dialog = page.getByRole('dialog', { name: 'New invitation' });
  const field = dialog.getByLabel('Email address');
  await expect(field).toBeFocused();

  // Validated as it is typed.
  await field.pressSequentially('ada@example');
  await expect(dialog.getByText('needs a dot')).toBeVisible();
  await shot(page, 'invitation-new-dialog', testInfo);
  await field.fill(email);
  await expect(dialog.getByText('needs a dot')).toHaveCount(0);
  await dialog.getByLabel('First name').fill('Ada');
  await dialog.getByLabel('Last name').fill('Lovelace');
  await dialog.getByRole('button', { name: 'Create invitation' }).click();

  // Lands on the invitation's page.
  await expect(page).toHaveURL(/\/invitations\/\d+$/);
  const id = Number(new URL(page.url()).pathname.split('/').pop());
  const invitation = await admin.invitations.get({ params: { id } });
  expect(invitation.email).toBe(email);
  await expect(page.getByTestId('invitation-status')).toHaveText('Pending');
  await expect(page.getByTestId('invitation-deeplink')).toHaveText(invitation.deeplink);
  // Emailed (no SMTP here: to the outbox folder), and the page follows the delivery live.
  await expect(page.getByTestId('delivery-state')).toHaveText('Email in outbox');

  // The QR code on screen carries exactly the API's deeplink.
  const qr = page.getByTestId('invitation-qr');
  await expect(qr).toBeVisible();
  await expect
    .poll(() =>
      qr.evaluate(
        (img) =>
          (img as unknown as { complete: boolean; naturalWidth: number }).complete &&
          (img as unknown as { naturalWidth: number }).naturalWidth > 0,
      ),
    )
    .toBe(true);
  expect(await decodeQrOf(qr)).toBe(invitation.deeplink);
  await shot(page, 'invitation-page', testInfo, { fullPage: true });

  // The PNG and SVG downloads are served.
  const png = await page.request.get(`/api/invitations/${id}/qr.png?size=1024`);
  expect(png.headers()['content-type']).toBe('image/png');
  const svg = await page.request.get(`/api/invitations/${id}/qr.svg`);
  expect(svg.headers()['content-type']).toContain('image/svg+xml');

  // The devices page, open while a device enrolls: its row appears, enrolled and online, without a reload.
  await page.goto('/devices');
  await expect(page.getByRole('heading', { name: 'Devices' })).toBeVisible();
  await expect(page.getByTestId('live-state')).toHaveAttribute('data-state', 'live');
  await page.evaluate(() => ((globalThis as unknown as { __noReload: boolean }).__noReload = true));
  // The row comes from the events themselves: no fetch of the device's detail (200 events).
  const agentFetches: string[] = [];
  const noteAgentFetch = (request: { url(): string }) => {
    if (/^\/api\/agents\/\d+$/.test(new URL(request.url()).pathname)) agentFetches.push(request.url());
  };
  page.on('request', noteAgentFetch);
  const serial = `E2E${Date.now().toString(36).toUpperCase()}`;
  const agent = spawn(
    process.execPath,
    [CLI, 'agent', '--deeplink', invitation.deeplink, '--email', email, '--serial', serial, '--stay'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let agentOutput = '';
  agent.stdout!.on('data', (chunk) => (agentOutput += chunk));
  agent.stderr!.on('data', (chunk) => (agentOutput += chunk));
  try {
    const row = page.locator(`tr[data-agent-id]`, { hasText: serial });
    await expect(row, agentOutput).toBeVisible({ timeout: 15_000 });
    await expect(row.getByTestId('enroll-status')).toHaveText('Enrolled');
    await expect(row.getByTestId('online')).toHaveAttribute('data-online', 'true', { timeout: 15_000 });
    expect(await page.evaluate(() => (globalThis as unknown as { __noReload?: boolean }).__noReload)).toBe(true);
    page.off('request', noteAgentFetch);
    expect(agentFetches).toEqual([]);
    await shot(page, 'devices-live-enrolled', testInfo);

    // Its detail panel: the record, history and actions.
    await row.click();
    const drawer = page.getByRole('dialog', { name: 'Device' });
    await expect(drawer.getByTestId('agent-record')).toContainText(serial);
    await expect(drawer.getByTestId('agent-history')).toContainText('enrolled');
    await drawer.getByRole('button', { name: 'Ping' }).click();
    // The toast follows the ping until the device answers, then shows the answer and its latency.
    const pinged = page.getByRole('alert').filter({ hasText: `${serial} answered the ping` });
    await expect(pinged).toBeVisible();
    await expect(pinged).toContainText(/Round trip \d+ ms over MQTT \(reply “!”\)\./);
    await expect(drawer.getByTestId('agent-history')).toContainText(`Ping sent to ${serial}`);
    await shot(page, 'device-drawer', testInfo);

    // Lock asks first; then the device (still online) obeys.
    await drawer.getByRole('button', { name: 'Lock', exact: true }).click();
    const confirmLock = page.getByRole('dialog', { name: 'Lock this device?' });
    await expect(confirmLock.getByRole('button', { name: 'Lock' })).toBeFocused();
    await confirmLock.getByRole('button', { name: 'Lock' }).click();
    await expect(page.getByRole('alert').getByText(`Lock sent to ${serial}`)).toBeVisible();
    await expect(drawer.getByTestId('agent-record')).toContainText(/Lockedyes/);

    // Move to another fleet: the row follows.
    await drawer.getByRole('combobox', { name: 'Move to fleet' }).click();
    await page.getByRole('option', { name: fleetName }).click();
    await drawer.getByRole('button', { name: 'Move', exact: true }).click();
    await expect(page.getByRole('alert').getByText(`moved to ${fleetName}`)).toBeVisible();
    await page.keyboard.press('Escape');
    await expect(drawer).toBeHidden();
    await expect(row).toContainText(fleetName);

    // The invitation page shows it enrolled, and the device it enrolled (live as well).
    await page.goto(`/invitations/${id}`);
    await expect(page.getByTestId('invitation-status')).toHaveText('Enrolled');
    await expect(page.getByTestId('invitation-device')).toContainText(serial);
  } finally {
    agent.kill('SIGTERM');
  }
});

test('a created invitation is fetched once: its own event does not fetch it again', async ({ page }) => {
  await page.goto('/invitations');
  await expect(page.getByTestId('live-state')).toHaveAttribute('data-state', 'live');
  const fetches: string[] = [];
  page.on('request', (request) => {
    const { pathname } = new URL(request.url());
    if (request.method() === 'GET' && /^\/api\/invitations(\/\d+)?$/.test(pathname)) fetches.push(pathname);
  });
  await page.getByRole('button', { name: 'New invitation' }).click();
  const dialog = page.getByRole('dialog', { name: 'New invitation' });
  await dialog.getByLabel('Email address').fill(`once.${Date.now()}@example.com`);
  // No email: its delivery events would rightly refresh the page again.
  await dialog.getByLabel('Email the invitation to this address').uncheck();
  await dialog.getByRole('button', { name: 'Create invitation' }).click();
  await expect(page).toHaveURL(/\/invitations\/\d+$/);
  const path = `/api${new URL(page.url()).pathname}`;
  await expect(page.getByTestId('invitation-status')).toHaveText('Pending');
  await page.waitForTimeout(1000); // time for the invitation.created event to be applied
  expect(fetches.filter((fetched) => fetched === path)).toEqual([path]);
  expect(fetches.filter((fetched) => fetched === '/api/invitations').length).toBeLessThanOrEqual(1);
});

test('simulate a device from the invitation page, then see the refusal when it is tried again', async ({ page }, testInfo) => {
  const created = await admin.invitations.create({
    body: {
      email: `grace.${Date.now()}@example.com`,
      firstname: 'Grace',
      lastname: 'Hopper',
      send_email: false,
    },
  });
  await page.goto(`/invitations/${created.id}`);
  await page.getByRole('button', { name: 'Simulate a device' }).click();
  const dialog = page.getByRole('dialog', { name: 'Simulated device' });
  await expect(dialog.getByText('The simulated device enrolled')).toBeVisible({ timeout: 20_000 });
  await expect(dialog.getByTestId('simulation-log')).toContainText('5/5 GET PluginMdmAgent');
  await shot(page, 'invitation-simulated', testInfo);
  await dialog.getByRole('button', { name: 'Close', exact: true }).click();
  await expect(page.getByTestId('invitation-status')).toHaveText('Enrolled');

  // A second device with the same (used) invitation is refused, and the refusal is logged.
  await page.getByRole('button', { name: 'Choose the simulated device type' }).click();
  await page.getByRole('menuitem', { name: 'Apple device' }).click();
  await expect(dialog.getByText('Enrollment was refused')).toBeVisible({ timeout: 20_000 });
  await dialog.getByRole('button', { name: 'Close', exact: true }).click();
  await expect(page.getByTestId('refused-log')).toContainText('already been used');
  await shot(page, 'invitation-refused-log', testInfo, { fullPage: true });

  // The simulated device stays online and obeys policies: one set on it reaches done in its panel.
  const { agent } = await admin.invitations.get({ params: { id: created.id } });
  await admin.policies.set({ body: { policy: 'disableCamera', value: true, agent_id: agent!.id } });
  await page.goto(`/devices?agent=${agent!.id}`);
  const camera = page.getByTestId('device-policies').locator('tr[data-policy="disableCamera"] [data-status]');
  await expect(camera).toHaveAttribute('data-status', 'done', { timeout: 30_000 });
});

test('revoke and delete an invitation, with confirmation', async ({ page }) => {
  const created = await admin.invitations.create({ body: { email: `linus.${Date.now()}@example.com`, send_email: false } });
  await page.goto(`/invitations/${created.id}`);
  await page.getByRole('button', { name: 'Revoke' }).click();
  const confirm = page.getByRole('dialog', { name: 'Revoke this invitation?' });
  await confirm.getByRole('button', { name: 'Revoke' }).click();
  await expect(page.getByTestId('invitation-status')).toHaveText('Revoked');
  await expect(page.getByText('Code revoked')).toBeVisible();
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog', { name: 'Delete this invitation?' }).getByRole('button', { name: 'Delete' }).click();
  await expect(page).toHaveURL(/\/invitations$/);
  expect((await page.request.get(`/api/invitations/${created.id}`)).status()).toBe(404);
});

test('the console is served with a strict Content-Security-Policy and no inline script', async ({ page }) => {
  const response = await page.goto('/');
  const csp = response!.headers()['content-security-policy']!;
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("object-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toMatch(/unsafe-eval/);
  expect(response!.headers()['x-content-type-options']).toBe('nosniff');
  expect(await page.locator('script:not([src])').count()).toBe(0);
});
