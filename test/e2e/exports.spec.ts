import { readFile } from 'node:fs/promises';
import { parseCsv } from '../helpers/csv.ts';
import { seededFleet, seededType, seedDevices } from '../helpers/seed-devices.ts';
import { adminOf, expect, shot, test } from './fixtures.ts';
import { startServe, type RunningServe } from './serve.ts';

// Issue 25, item 3: the devices table's Export downloads what the filters in force show. A server
// of its own, with devices seeded over two fleets.
const COUNT = 600;
let serve: RunningServe;
test.beforeAll(async () => {
  serve = await startServe();
  await adminOf(serve.info).fleets.create({ body: { name: 'Warehouse' } });
  await seedDevices(serve.info.data_dir, { count: COUNT, fleets: ['Default fleet', 'Warehouse'], prefix: 'EXP' });
});
test.afterAll(async () => {
  await serve?.stop();
});

test('devices: the Export button downloads the filtered list (filter language, table filters, search) as CSV and as JSON lines; a job’s results too', async ({
  browser,
}, testInfo) => {
  const context = await browser.newContext({
    storageState: undefined,
    baseURL: serve.info.admin_url,
    viewport: { width: 1280, height: 900 },
    acceptDownloads: true,
  });
  const page = await context.newPage();
  await page.goto(serve.info.console_url);
  await page.goto('/devices');
  await expect(page.getByTestId('devices-count')).toHaveText('600 devices');

  // The filter language's fleet=Warehouse, the type filter's apple, and a search: the table
  // narrows, and so does the export.
  await page.getByTestId('where-input').fill('fleet=Warehouse');
  await page.getByRole('combobox', { name: 'Type' }).click();
  await page.getByRole('option', { name: 'apple' }).click();
  await page.getByRole('textbox', { name: 'Search devices' }).fill('exp0001');
  const expected = Array.from({ length: COUNT }, (_, i) => i)
    .filter((i) => seededFleet(i, 2) === 1 && seededType(i) === 'apple' && String(i).padStart(6, '0').startsWith('0001'))
    .map((i) => `EXP${String(i).padStart(6, '0')}`);
  expect(expected.length).toBeGreaterThan(3);
  await expect(page.getByTestId('devices-count')).toHaveText(`${expected.length} of 600`);

  await page.getByTestId('devices-export').click();
  await expect(page.getByText('The devices these filters match')).toBeVisible();
  await shot(page, 'devices-export-menu', testInfo);
  const downloading = page.waitForEvent('download');
  await page.getByTestId('devices-export-csv').click();
  const download = await downloading;
  expect(new URL(download.url()).searchParams.get('where')).toBe('fleet=Warehouse');
  expect(download.suggestedFilename()).toMatch(/^devices-\d{4}-\d{2}-\d{2}-\d{4}\.csv$/);
  const [header = [], ...rows] = parseCsv(await readFile((await download.path())!, 'utf8'));
  const cell = (row: string[], name: string) => row[header.indexOf(name)];
  expect(header).toEqual(
    expect.arrayContaining(['name', 'model', 'os_version', 'imei', 'installed_apps', 'fleet', 'compliance']),
  );
  // The rows the table shows (by id, whatever the table's sort): those devices, and only them.
  expect(rows.map((row) => cell(row, 'name')).sort()).toEqual(expected);
  expect(new Set(rows.map((row) => `${cell(row, 'fleet')} ${cell(row, 'type')}`))).toEqual(new Set(['Warehouse apple']));
  const shown = await page
    .locator('tbody tr[data-agent-id]')
    .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-agent-id')));
  expect(rows.map((row) => cell(row, 'id')).sort()).toEqual([...shown].sort());

  // JSON lines: the same devices, one object a line.
  await page.getByTestId('devices-export').click();
  const downloadingJson = page.waitForEvent('download');
  await page.getByTestId('devices-export-jsonl').click();
  const json = await downloadingJson;
  expect(json.suggestedFilename()).toMatch(/\.jsonl$/);
  const lines = (await readFile((await json.path())!, 'utf8'))
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as { name: string; online: boolean });
  expect(lines.map((line) => line.name).sort()).toEqual(expected);
  expect(lines.every((line) => typeof line.online === 'boolean')).toBe(true);

  // A bulk job's page exports its per-device results.
  const job = await adminOf(serve.info).jobs.create({ body: { action: 'lock', selection: { filter: { fleet: 'Warehouse' } } } });
  await page.goto(`/jobs/${job.id}`);
  await expect(page.getByTestId('job-processed')).toHaveText(`${job.total} of ${job.total} devices processed`);
  await page.getByTestId('job-export').click();
  const downloadingResults = page.waitForEvent('download');
  await page.getByTestId('job-export-csv').click();
  const results = await downloadingResults;
  expect(results.suggestedFilename()).toMatch(/^job-results-.*\.csv$/);
  const [resultHeader = [], ...resultRows] = parseCsv(await readFile((await results.path())!, 'utf8'));
  expect(resultRows).toHaveLength(job.total);
  expect(new Set(resultRows.map((row) => row[resultHeader.indexOf('job_id')]))).toEqual(new Set([String(job.id)]));
  expect(new Set(resultRows.map((row) => row[resultHeader.indexOf('fleet')]))).toEqual(new Set(['Warehouse']));
  await shot(page, 'job-export', testInfo);
  await context.close();
});
