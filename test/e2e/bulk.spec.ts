// Bulk actions in the console (issue 25): rows selected with their checkboxes (a shift-click range),
// "select all N matching this filter" over 10,000 devices sending the filter (not 10,000 ids), one
// confirmation naming the count (typed for a destructive action), the job's page with its live
// progress and each device's result, and the Jobs history. Real serve, SQLite, broker (simulated
// devices answering) and Chromium, at 1,280 px.
import type { Request } from '@playwright/test';
import { startDevice, type SimulatedDevice } from '../../src-main/device/device.ts';
import { seededFleet, seededType, seedDevices } from '../helpers/seed-devices.ts';
import { adminOf, expect, shot, test } from './fixtures.ts';
import { startServe, type RunningServe } from './serve.ts';

let serve: RunningServe;
const couriers: SimulatedDevice[] = [];
test.beforeAll(async () => {
  serve = await startServe();
  const admin = adminOf(serve.info);
  await admin.fleets.create({ body: { name: 'Warehouse' } });
  await admin.fleets.create({ body: { name: 'Couriers' } });
  await seedDevices(serve.info.data_dir, { count: 10_000, fleets: ['Default fleet', 'Warehouse', 'Field sales'], prefix: 'BIG' });
  // Three real (simulated) devices, connected to the broker: they answer.
  for (let i = 0; i < 3; i++) {
    const email = `courier${i}@example.com`;
    const invitation = await admin.invitations.create({ body: { email, fleet: 'Couriers', send_email: false } });
    couriers.push(await startDevice({ deeplink: invitation.deeplink, email }));
  }
});
test.afterAll(async () => {
  await Promise.all(couriers.map((device) => device.stop()));
  await serve?.stop();
});

const jobBodies = (requests: Request[]) =>
  requests
    .filter((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/api/jobs')
    .map((request) => request.postDataJSON() as { action: string; selection: { ids?: number[]; filter?: object } });

test('bulk actions: select all matching 10,000, a live ping, a typed count for delete, the job and its history', async ({
  browser,
}, testInfo) => {
  test.setTimeout(180_000);
  const context = await browser.newContext({ baseURL: serve.info.admin_url, viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const requests: Request[] = [];
  page.on('request', (request) => requests.push(request));
  await page.goto(serve.info.console_url);
  await page.goto('/devices');
  await expect(page.getByTestId('devices-count')).toHaveText('10,003 devices', { timeout: 30_000 });

  // Filter: apple devices of Warehouse.
  await page.getByRole('combobox', { name: 'Type' }).click();
  await page.getByRole('option', { name: 'apple' }).click();
  await page.getByRole('combobox', { name: 'Fleet' }).click();
  await page.getByRole('option', { name: 'Warehouse' }).click();
  const matching = Array.from({ length: 10_000 }, (_, i) => i).filter(
    (i) => seededType(i) === 'apple' && seededFleet(i, 3) === 1,
  ).length;
  const n = matching.toLocaleString('en-US');
  await expect(page.getByTestId('devices-count')).toHaveText(`${n} of 10,003`);

  // A row, then a shift-click three rows down: a range of four.
  const boxes = page.getByTestId('select-row');
  await boxes.nth(0).click();
  await expect(page.getByTestId('bulk-count')).toHaveText('1 device selected');
  await boxes.nth(3).click({ modifiers: ['Shift'] });
  await expect(page.getByTestId('bulk-count')).toHaveText('4 devices selected');
  await page.getByTestId('select-all-matching').click();
  await expect(page.getByTestId('bulk-count')).toHaveText(`All ${n} devices matching selected`);
  await shot(page, 'bulk-selected-all-matching', testInfo);

  // Lock them: one confirmation naming the count; the request carries the filter, not the ids.
  await page.getByTestId('bulk-bar').getByRole('button', { name: 'Lock', exact: true }).click();
  const confirm = page.getByRole('dialog', { name: `Lock: ${n} devices?` });
  await expect(confirm).toContainText('Every device matching fleet Warehouse, apple');
  await confirm.getByTestId('bulk-confirm-go').click();
  await expect(page).toHaveURL(/\/jobs\/\d+$/);
  const [lockBody] = jobBodies(requests);
  expect(lockBody).toEqual({ action: 'lock', selection: { filter: { type: 'apple', fleet: 'Warehouse' } } });
  // Seeded devices are not connected: each is recorded offline, its lock kept for when it connects.
  await expect(page.getByTestId('job-processed')).toHaveText(`${n} of ${n} devices processed`, { timeout: 30_000 });
  await expect(page.getByTestId('job-state')).toHaveText('Done');
  await expect(page.getByTestId('job-tally')).toHaveText(`${n} offline`);
  await expect(page.getByTestId('job-result').first()).toContainText('Not connected: kept until it connects');
  expect(await page.getByTestId('job-result').count()).toBeLessThan(40); // virtualised
  await shot(page, 'bulk-job-lock', testInfo);

  // The connected couriers: every one of them answers a ping, live on the job's page.
  await page.goto('/devices');
  await page.getByRole('combobox', { name: 'Fleet' }).click();
  await page.getByRole('option', { name: 'Couriers' }).click();
  await expect(page.getByTestId('devices-count')).toHaveText('3 of 10,003');
  await page.getByTestId('select-all').click();
  await expect(page.getByTestId('bulk-count')).toHaveText('All 3 devices matching selected');
  await page.getByTestId('bulk-bar').getByRole('button', { name: 'Ping', exact: true }).click();
  await page.getByRole('dialog', { name: 'Ping: 3 devices?' }).getByTestId('bulk-confirm-go').click();
  await expect(page.getByTestId('job-tally')).toHaveText('3 answered', { timeout: 20_000 });
  await expect(page.getByTestId('job-result-status')).toHaveText(['answered', 'answered', 'answered']);
  await shot(page, 'bulk-job-ping-answered', testInfo);

  // Delete ten: the count must be typed; the button waits for it.
  await page.goto('/devices');
  await page.getByRole('textbox', { name: 'Search devices' }).fill('BIG00012');
  await expect(page.getByTestId('devices-count')).toHaveText('10 of 10,003');
  await page.getByTestId('select-all').click();
  await page.getByRole('button', { name: 'More actions' }).click();
  await page.getByRole('menuitem', { name: 'Delete…' }).click();
  const deleting = page.getByRole('dialog', { name: 'Delete: 10 devices?' });
  await expect(deleting).toContainText('This cannot be undone');
  await expect(deleting.getByTestId('bulk-confirm-go')).toBeDisabled();
  await deleting.getByTestId('bulk-confirm-count').fill('9');
  await expect(deleting.getByTestId('bulk-confirm-go')).toBeDisabled();
  await deleting.getByTestId('bulk-confirm-count').fill('10');
  await shot(page, 'bulk-confirm-delete', testInfo);
  await deleting.getByTestId('bulk-confirm-go').click();
  await expect(page.getByTestId('job-tally')).toHaveText('10 done', { timeout: 20_000 });
  expect(jobBodies(requests).at(-1)).toEqual({
    action: 'delete',
    selection: { filter: { search: 'BIG00012' } },
    expected_count: 10,
  });

  // The history lists the three jobs, newest first; the table lost the ten.
  await page.getByRole('link', { name: 'Jobs', exact: true }).click();
  await expect(page.getByTestId('job-row')).toHaveCount(3);
  await expect(page.getByTestId('job-row').first()).toContainText('Delete');
  await shot(page, 'bulk-jobs-history', testInfo);
  await page.goto('/devices');
  await expect(page.getByTestId('devices-count')).toHaveText('9,993 devices', { timeout: 20_000 });
  await context.close();
});
