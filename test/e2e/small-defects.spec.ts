import { startTestSmtp } from '../helpers/smtp.ts';
import { admin, expect, shot, test } from './fixtures.ts';
import { startServe } from './serve.ts';

// Defects a first-time user met: the print sheet forgot its paper size; the devices table cut off
// "Last contact" at 1,280 px and did not show a locked or wiped device.

test('the print sheet remembers the paper size chosen last', async ({ page }) => {
  const invitation = await admin.invitations.create({ body: { email: `paper.${Date.now()}@example.com`, send_email: false } });
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

test('devices at 1,280 px: every column shows, "Last contact" included, with the lock and wipe state', async ({
  page,
}, testInfo) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  const invitation = await admin.invitations.create({ body: { email: `locked.${Date.now()}@example.com`, send_email: false } });
  const simulated = await admin.invitations.simulate({ params: { id: invitation.id } });
  expect(simulated.ok, simulated.error ?? '').toBe(true);
  const id = simulated.agent_id as number;
  await admin.agents.command({ params: { id }, body: { command: 'lock' } });

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

test('an invitation email refused for now (greylisting) reads "will retry at …" on its page and in the list', async ({
  browser,
}, testInfo) => {
  // A server of its own: its mail goes to a real SMTP server that answers 451 (greylisting) until
  // told otherwise, so no automatic retry can go through while the page is looked at.
  let greylisting = true;
  const smtp = await startTestSmtp({
    onRcptTo(_address, _session, callback) {
      if (!greylisting) return callback();
      const error = new Error('Greylisted, please try again later') as Error & { responseCode: number };
      error.responseCode = 451;
      callback(error);
    },
  });
  const serve = await startServe();
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${serve.info.admin_url}/api${path}`, {
      method,
      headers: { authorization: `Bearer ${serve.info.admin_token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(response.ok, `${method} ${path}: ${response.status}`).toBe(true);
    return (await response.json()) as any;
  };
  const context = await browser.newContext({ storageState: { cookies: [], origins: [] } });
  try {
    await call('PUT', '/mail/settings', { smtp_url: smtp.url() });
    const invitation = await call('POST', '/invitations', { email: `grey.${Date.now()}@example.com` });
    const page = await context.newPage();
    await page.goto(serve.info.console_url);
    await page.goto(`${serve.info.admin_url}/invitations/${invitation.id}`);
    await expect(page.getByTestId('delivery-state')).toHaveAttribute('data-state', 'retrying');
    await expect(page.getByTestId('delivery-state')).toHaveText(/Email will retry/i);
    await expect(page.getByTestId('delivery-retry')).toContainText('451 Greylisted');
    await expect(page.getByTestId('delivery-retry')).toContainText(/Will retry at \d{1,2}:\d\d:\d\d/);
    await shot(page, 'invitation-email-will-retry', testInfo);
    await page.goto(`${serve.info.admin_url}/invitations`);
    await expect(page.getByTestId('delivery-mark')).toHaveAttribute('aria-label', /^Email will retry at \d{1,2}:\d\d:\d\d/);
    // "Resend email" sends it now, once the server accepts.
    greylisting = false;
    await page.goto(`${serve.info.admin_url}/invitations/${invitation.id}`);
    await page.getByRole('button', { name: 'Resend email' }).click();
    await expect(page.getByTestId('delivery-state')).toHaveAttribute('data-state', 'sent');
  } finally {
    await context.close();
    await serve.stop();
    await smtp.close();
  }
});
