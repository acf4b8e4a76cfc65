import { seededFleet, seededType, seedDevices } from '../helpers/seed-devices.ts';
import { adminOf, expect, shot, test } from './fixtures.ts';
import { startServe, type RunningServe } from './serve.ts';

// A server of its own: ten thousand devices would crowd the other tests' pages.
let serve: RunningServe;
test.beforeAll(async () => {
  serve = await startServe();
  await adminOf(serve.info).fleets.create({ body: { name: 'Warehouse' } });
  await seedDevices(serve.info.data_dir, { count: 10_000, fleets: ['Default fleet', 'Warehouse', 'Field sales'], prefix: 'BIG' });
});
test.afterAll(async () => {
  await serve?.stop();
});

test('devices: 10,000 rows, virtualized, sorted, filtered, searched, and a new enrollment appears live', async ({
  browser,
}, testInfo) => {
  const context = await browser.newContext({
    storageState: undefined,
    baseURL: serve.info.admin_url,
    viewport: { width: 1400, height: 900 },
  });
  const page = await context.newPage();
  await page.goto(serve.info.console_url);
  await page.goto('/devices');
  await expect(page.getByTestId('devices-count')).toHaveText('10,000 devices', { timeout: 20_000 });
  const rows = page.locator('tbody tr[data-agent-id]');
  // Only what is on screen is in the DOM.
  expect(await rows.count()).toBeLessThan(60);
  await shot(page, 'devices-10k', testInfo);

  // Scrolling to the end shows the last row.
  const scroller = page.getByTestId('devices-scroll');
  await scroller.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
  await expect(page.locator('tbody tr[aria-rowindex="10001"]')).toBeVisible();
  expect(await rows.count()).toBeLessThan(60);

  // Sort by device (named by its serial here), both ways.
  await scroller.evaluate((el) => el.scrollTo({ top: 0 }));
  await page.getByRole('button', { name: 'Device' }).click();
  await expect(rows.first()).toContainText('BIG000000');
  await page.getByRole('button', { name: 'Device' }).click();
  await expect(rows.first()).toContainText('BIG009999');

  // Filter and search.
  await page.getByRole('textbox', { name: 'Search devices' }).fill('BIG00012');
  await expect(page.getByTestId('devices-count')).toHaveText('10 of 10,000');
  await page.getByRole('textbox', { name: 'Search devices' }).fill('');
  await page.getByRole('combobox', { name: 'Type' }).click();
  await page.getByRole('option', { name: 'apple' }).click();
  const apple = Array.from({ length: 10_000 }, (_, i) => i).filter((i) => seededType(i) === 'apple');
  await expect(page.getByTestId('devices-count')).toHaveText(`${apple.length.toLocaleString('en-US')} of 10,000`);
  await page.getByRole('combobox', { name: 'Fleet' }).click();
  await page.getByRole('option', { name: 'Warehouse' }).click();
  const appleInWarehouse = apple.filter((i) => seededFleet(i, 3) === 1).length;
  await expect(page.getByTestId('devices-count')).toHaveText(`${appleInWarehouse.toLocaleString('en-US')} of 10,000`);
  await shot(page, 'devices-10k-filtered', testInfo);
  await page.getByRole('button', { name: 'Clear filters' }).click();

  // Keyboard: a row opens with Enter, arrows move.
  await rows.first().focus();
  await page.keyboard.press('ArrowDown');
  await expect(page.locator('tbody tr[aria-rowindex="3"]')).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('dialog', { name: 'Device' }).getByTestId('agent-record')).toBeVisible();
  await page.keyboard.press('Escape');

  // A device enrolling now shows up (enrolled) within a second, without refetching the 10,000.
  const listRequests: string[] = [];
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/api/agents') listRequests.push(request.url());
  });
  await page.getByRole('button', { name: 'Device' }).click(); // back to unsorted: newest first
  const invitation = await adminOf(serve.info).invitations.create({
    body: { email: `live.${Date.now()}@example.com`, send_email: false },
  });
  const result = await adminOf(serve.info).invitations.simulate({ params: { id: invitation.id } });
  expect(result.ok).toBe(true);
  const started = Date.now();
  const fresh = page.locator(`tbody tr[data-agent-id="${result.agent_id}"]`);
  await expect(fresh).toBeVisible({ timeout: 5_000 });
  const elapsed = Date.now() - started;
  await expect(fresh.getByTestId('enroll-status')).toHaveText('Enrolled');
  await expect(page.getByTestId('devices-count')).toHaveText('10,001 devices');
  expect(listRequests).toEqual([]);
  testInfo.annotations.push({ type: 'appeared after', description: `${elapsed} ms` });
  console.log(`the new device's row appeared ${elapsed} ms after its enrollment returned (10,000 rows loaded)`);
  await context.close();
});
