import type { Locator, Page } from '@playwright/test';
import { admin, expect, shot, test } from './fixtures.ts';

// What a new admin met at 1,280 px (issue 19, item 8): tables cut or scrolling sideways, a funnel
// that did not add up, cards printed for invitations that can no longer be used, a ping with no answer.

// Digits only: a unique tag whose width does not vary from run to run.
const tag = () => String(Date.now()).slice(-6);

/** The little of the DOM the checks below read (this project's TypeScript has no DOM library). */
export interface Boxed {
  tagName: string;
  className: unknown;
  textContent: string | null;
  scrollWidth: number;
  clientWidth: number;
  namespaceURI: string | null;
  querySelectorAll(selector: string): ArrayLike<Boxed>;
}

/** Elements inside `root` whose content is wider than their box: cut with an ellipsis, clipped, or scrolling. */
export async function cutElements(root: Locator): Promise<string[]> {
  return root.evaluate((element) => {
    const top = element as unknown as Boxed;
    const cut: string[] = [];
    for (const el of [top, ...Array.from(top.querySelectorAll('*'))]) {
      if (el.namespaceURI !== 'http://www.w3.org/1999/xhtml' || el.clientWidth === 0) continue;
      if (el.scrollWidth > el.clientWidth + 1) {
        cut.push(
          `<${el.tagName.toLowerCase()} class="${String(el.className)}"> "${(el.textContent ?? '').slice(0, 60)}" (${el.scrollWidth} > ${el.clientWidth})`,
        );
      }
    }
    return cut;
  });
}

async function enrolled(email: string, fleet?: string, { firstname = 'Maria', lastname = 'Gonzalez' } = {}) {
  const invitation = await admin.invitations.create({ body: { email, firstname, lastname, fleet, send_email: false } });
  const simulated = await admin.invitations.simulate({ params: { id: invitation.id } });
  expect(simulated.ok, simulated.error ?? '').toBe(true);
  return { invitation, agentId: simulated.agent_id as number };
}

async function at1280(page: Page) {
  await page.setViewportSize({ width: 1280, height: 800 });
}

test('devices at 1,280 px: no column, header or badge is cut', async ({ page }, testInfo) => {
  await at1280(page);
  const t = tag();
  const fleet = await admin.fleets.create({ body: { name: `Field sales ${t}` } });
  const first = await enrolled(`maria.gonzalez.${t}@example.com`, fleet.name);
  await admin.agents.command({ params: { id: first.agentId }, body: { command: 'lock' } });
  await enrolled(`j.smith.${t}@example.org`, undefined, { firstname: 'John', lastname: 'Smith' });
  // One waiting for approval: the longest status there is.
  const code = await admin.codes.create({ body: { name: `Hall ${t}`, approval: 'manual' } });
  const waiting = await admin.codes.simulate({ params: { id: code.id }, body: { email: `visitor.${t}@example.com` } });
  expect(waiting.ok, waiting.error ?? '').toBe(true);

  await page.goto('/devices');
  await page.getByLabel('Search devices').fill(t);
  const table = page.getByTestId('devices-table');
  await expect(table.locator('tbody tr')).toHaveCount(3);
  await expect(table.locator('tbody tr', { hasText: 'maria.gonzalez' }).getByTestId('device-locked')).toBeVisible();
  await expect(table.getByText('Waiting for approval')).toBeVisible();

  const scroll = page.getByTestId('devices-scroll');
  expect(await scroll.evaluate((el) => el.scrollWidth - el.clientWidth), 'the table scrolls sideways').toBeLessThanOrEqual(0);
  expect(await cutElements(table.locator('thead')), 'headers cut').toEqual([]);
  expect(await cutElements(table.locator('tbody')), 'cells cut').toEqual([]);
  await shot(page, 'devices-1280', testInfo);
});

test('fleets at 1,280 px: the deployments card shows its progress bars and device rows whole', async ({ page }, testInfo) => {
  await at1280(page);
  const t = tag();
  const fleet = await admin.fleets.create({ body: { name: `Warehouse scanners ${t}` } });
  for (const who of ['ana', 'benedict.worthington-smythe']) await enrolled(`${who}.${t}@example-corporation.com`, fleet.name);
  const file = await admin.files.upload({
    body: new Blob([new Uint8Array(2048)]).stream(),
    query: { name: `scanner-configuration-profile-${t}.json` },
    headers: { 'content-length': '2048' },
  });
  await admin.deployments.create({ body: { kind: 'file', item_id: file.id, fleet_id: fleet.id } });

  await page.goto(`/fleets/${fleet.id}`);
  const card = page.getByTestId('fleet-deployments');
  await expect(card.getByTestId('deployment-list')).toBeVisible();
  await card.getByRole('button', { name: 'Show devices' }).click();
  await expect(card.locator('[data-testid^="deployment-tasks-"] tr')).toHaveCount(2);
  expect(await cutElements(card), 'clipped or scrolling inside the deployments card').toEqual([]);
  const cardBox = (await card.boundingBox())!;
  for (const bar of await card.locator('.mantine-Progress-root').all()) {
    const box = (await bar.boundingBox())!;
    expect(box.x + box.width, 'a progress bar runs past the card').toBeLessThanOrEqual(cardBox.x + cardBox.width);
  }
  // The fleet's devices: each online badge whole beside a long address.
  expect(await cutElements(page.getByTestId('fleet-devices')), 'cut in the fleet devices card').toEqual([]);
  await shot(page, 'fleets-1280-deployments', testInfo);
});

test('dashboard at 1,280 px: the funnel counts code enrollments and says what each number means; the agent-app badge whole', async ({
  page,
}, testInfo) => {
  await at1280(page);
  const t = tag();
  await enrolled(`invited.${t}@example.com`);
  const code = await admin.codes.create({ body: { name: `Front desk ${t}` } });
  for (const who of ['desk1', 'desk2']) {
    const simulated = await admin.codes.simulate({ params: { id: code.id }, body: { email: `${who}.${t}@example.com` } });
    expect(simulated.ok, simulated.error ?? '').toBe(true);
  }
  const { counts } = await admin.status();
  expect(counts.code_enrolled).toBeGreaterThanOrEqual(2);

  await page.goto('/');
  const enrolledStep = page.getByTestId('funnel-enrolled');
  // Every enrolled device, by invitation or by code (it counted used invitations only).
  await expect(enrolledStep.getByTestId('funnel-value')).toHaveText(counts.enrolled.toLocaleString('en-GB'));
  await expect(enrolledStep.getByTestId('funnel-means')).toHaveText(
    new RegExp(`${counts.enrolled - counts.code_enrolled} with an invitation, ${counts.code_enrolled} with a code`),
  );
  await expect(page.getByTestId('funnel-invited').getByTestId('funnel-means')).toContainText(
    `${counts.code_devices} devices came with an enrollment code`,
  );
  await expect(page.getByTestId('funnel-online').getByTestId('funnel-means')).toHaveText(/connected to the broker right now/);
  await expect(page.getByTestId('agent-app-note')).toBeVisible();
  expect(await cutElements(page.getByTestId('agent-app-note')), 'the agent-app badge is cut').toEqual([]);
  await shot(page, 'dashboard-1280', testInfo, { fullPage: true });
});

test('the print sheet leaves out used and revoked invitations, and prints them only when asked', async ({ page }, testInfo) => {
  const t = tag();
  const pending = await admin.invitations.create({ body: { email: `card.pending.${t}@example.com`, send_email: false } });
  const used = (await enrolled(`card.used.${t}@example.com`)).invitation;
  const revoked = await admin.invitations.create({ body: { email: `card.revoked.${t}@example.com`, send_email: false } });
  await admin.invitations.revoke({ params: { id: revoked.id } });

  await page.goto(`/print?ids=${used.id},${pending.id},${revoked.id}`);
  const sheet = page.getByTestId('print-sheet');
  await expect(sheet).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  await expect(page.getByTestId('sheet-card')).toHaveCount(1);
  await expect(page.getByTestId('sheet-card')).toHaveAttribute('data-invitation-id', String(pending.id));
  const note = page.getByTestId('print-unusable');
  await expect(note).toContainText('2 selected invitations were used, revoked or expired');
  await expect(note).toContainText('left out');
  await shot(page, 'print-sheet-left-out', testInfo);

  await note.getByRole('button', { name: 'Print them too' }).click();
  await expect(page).toHaveURL(/all=1/);
  await expect(page.getByTestId('sheet-card')).toHaveCount(3);
  await expect(sheet).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  await note.getByRole('button', { name: 'Leave them out' }).click();
  await expect(page.getByTestId('sheet-card')).toHaveCount(1);
  await expect(page.getByTestId('print-sheet')).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });

  // Only cards that cannot be used: none printed, and the page says why.
  await page.goto(`/print?ids=${used.id},${revoked.id}`);
  await expect(page.getByText('None of these invitations can enroll a device any more')).toBeVisible();
  await expect(page.getByTestId('sheet-card')).toHaveCount(0);
});

test('the console speaks in words: no raw field names or internal names on the device panel and the files page', async ({
  page,
}, testInfo) => {
  const t = tag();
  const code = await admin.codes.create({ body: { name: `Words ${t}` } });
  const simulated = await admin.codes.simulate({ params: { id: code.id }, body: { email: `words.${t}@example.com` } });
  expect(simulated.ok, simulated.error ?? '').toBe(true);

  await page.goto(`/devices?agent=${simulated.agent_id}`);
  const record = page.getByRole('dialog', { name: 'Device' }).getByTestId('agent-record');
  await expect(record).toBeVisible();
  const labels = await record.locator('th').allInnerTexts();
  expect(
    labels.filter((label) => /[a-z]_[a-z]/.test(label)),
    'snake_case labels',
  ).toEqual([]);
  expect(labels).toEqual(expect.arrayContaining(['OS version', 'Enrollment code', 'Status']));
  // The code is named and linked; the wire name stays at hand on hover.
  await expect(record.locator('tr[data-field="enrollment_code_id"] a')).toHaveText(`“Words ${t}”`);
  await expect(record.locator('tr[data-field="os_version"] th')).toHaveAttribute('title', 'os_version in the admin API');
  await expect(record.locator('tr[data-field="serial"]').getByRole('button', { name: /Copy the serial number/ })).toBeVisible();
  await shot(page, 'device-record-words', testInfo);

  await page.goto('/files');
  await expect(page.getByRole('heading', { name: 'Files & packages' })).toBeVisible();
  await expect(page.locator('body')).not.toContainText(/PluginMdm|api token/);
});

test('keyboard: a skip link to the main content, and few Tab stops to the first device row', async ({ page }, testInfo) => {
  await enrolled(`keys.${tag()}@example.com`);
  await page.goto('/devices');
  await expect(page.getByTestId('devices-table').locator('tbody tr').first()).toBeVisible();

  // The first Tab stop of the page: a link past the header and the navigation.
  await page.keyboard.press('Tab');
  const skip = page.getByRole('link', { name: 'Skip to main content' });
  await expect(skip).toBeFocused();
  await expect(skip).toBeInViewport();
  await shot(page, 'skip-link', testInfo);
  await page.keyboard.press('Enter');
  await expect(page.locator('main')).toBeFocused();

  // From there: the filter expression, the search, Export, the five filters (one toolbar stop), the select-all box and
  // column headers (one stop), then the rows (one stop): 6.
  const firstRow = page.locator('tbody tr[data-index="0"]');
  let presses = 0;
  while (
    presses < 20 &&
    !(await firstRow.evaluate((row) => row === (row.ownerDocument as unknown as { activeElement: unknown }).activeElement))
  ) {
    await page.keyboard.press('Tab');
    presses++;
  }
  expect(presses, 'Tab presses from the main content to the first device row').toBeLessThanOrEqual(8);
  // The rows are one stop: the next Tab leaves the table, ↓ moves to the next row.
  await page.keyboard.press('ArrowDown');
  const second = page.locator('tbody tr[data-index="1"]');
  if ((await second.count()) > 0) await expect(second).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(page.locator('tbody tr:focus')).toHaveCount(0);
});
