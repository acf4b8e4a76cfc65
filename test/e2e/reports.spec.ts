import { readFile } from 'node:fs/promises';
import { parseCsv } from '../helpers/csv.ts';
import { admin, expect, shot, test } from './fixtures.ts';

// The Reports page (issue 25, item 4), as the owner in Chromium at 1,280 px: a new fleet's empty
// charts say what will appear and when; a device enrolled by the simulator shows on today's bar as
// it enrolls, without a reload; the day range switches between 7, 30 and 90 days; "Download PNG"
// saves the chart as a real PNG and "Download CSV" its data, one line per day under the series'
// labels.

const tag = () => String(Date.now()).slice(-6);
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

test('reports: enrollments counted as they happen, 7/30/90 days, a chart as PNG and its data as CSV, empty states', async ({
  page,
}, testInfo) => {
  const t = tag();
  const fleetName = `Reported ${t}`;
  await admin.fleets.create({ body: { name: fleetName } });
  const today = new Date().toISOString().slice(0, 10);

  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto('/');
  await page.getByRole('link', { name: 'Reports' }).click();
  await expect(page.getByRole('heading', { name: 'Reports', level: 1 })).toBeVisible();

  // A new fleet: nothing enrolled yet, and the page says what will appear and when.
  await page.getByTestId('reports-fleet').click();
  await page.getByRole('option', { name: fleetName }).click();
  const enrollments = page.getByTestId('report-enrollments');
  await expect(enrollments).toContainText('No device enrolled in these 30 days');
  await expect(enrollments).toContainText('counted on the day it enrolls');
  await expect(page.getByTestId('report-enrollments-png')).toBeDisabled();

  // A device enrolls (the simulator, through the agent API): today's bar appears, without a reload.
  const invitation = await admin.invitations.create({
    body: { email: `reported.${t}@example.com`, fleet: fleetName, send_email: false },
  });
  const simulated = await admin.invitations.simulate({ params: { id: invitation.id } });
  expect(simulated.ok, simulated.error ?? '').toBe(true);
  await expect(enrollments.getByTestId('report-enrollments-chart').locator('svg.recharts-surface')).toBeVisible();
  await expect(enrollments.getByTestId('report-enrollments-legend')).toHaveText('Enrolled');
  for (const days of ['7 days', '90 days', '30 days']) await page.getByTestId('reports-days').getByText(days).click();

  // Download PNG: a real PNG (its signature) and not empty.
  const pngDownload = page.waitForEvent('download');
  await enrollments.getByTestId('report-enrollments-png').click();
  const png = await pngDownload;
  expect(png.suggestedFilename()).toBe(
    `enrollments-${fleetName.toLowerCase().replace(' ', '-')}-${new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10)}-to-${today}.png`,
  );
  const pngBytes = await readFile((await png.path())!);
  expect(pngBytes.length).toBeGreaterThan(1000);
  expect(pngBytes.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  // Its size: the chart at twice its size, under the title (IHDR width and height).
  expect(pngBytes.readUInt32BE(16)).toBeGreaterThan(400);
  expect(pngBytes.readUInt32BE(20)).toBeGreaterThan(400);
  await testInfo.attach('reports-enrollments.png', { body: pngBytes, contentType: 'image/png' });

  // Download CSV: a header of the series' labels and a line per day; today holds the enrollment.
  const csvDownload = page.waitForEvent('download');
  await enrollments.getByTestId('report-enrollments-csv').click();
  const csv = await csvDownload;
  expect(csv.suggestedFilename()).toMatch(/^enrollments-.*\.csv$/);
  const rows = parseCsv(await readFile((await csv.path())!, 'utf8'));
  expect(rows[0]).toEqual(['day', 'Enrolled']);
  expect(rows.slice(1)).toHaveLength(30);
  expect(rows.at(-1)).toEqual([today, '1']);
  expect(rows.slice(1, -1).every((row) => row[1] === '0')).toBe(true);
  await shot(page, 'reports-page', testInfo, { fullPage: true });

  // Deployments of that fleet: none yet, and the page says what will appear and when.
  await expect(page.getByTestId('report-deployments')).toContainText('No deployment finished in these 30 days');
  await expect(page.getByTestId('report-deployments')).toContainText('Deploy an app or a file');
  await expect(page.getByTestId('report-deployments-png')).toBeDisabled();
});
