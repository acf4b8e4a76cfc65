import { admin, decodeQrOf, expect, shot, test } from './fixtures.ts';

test('an enrollment code: made in the console, three simulated people (two allowed domains, one refused), one approved, rows live', async ({
  page,
  context,
}, testInfo) => {
  const name = `Reception ${Date.now()}`;
  await page.goto('/codes');
  await page.getByRole('button', { name: 'New code' }).click();
  const dialog = page.getByRole('dialog', { name: 'New enrollment code' });
  await dialog.getByLabel('Name').fill(name);
  const domains = dialog.getByRole('combobox', { name: 'Allowed email domains' });
  await domains.fill('example.com');
  await domains.press('Enter');
  await domains.fill('example.org');
  await domains.press('Enter');
  await dialog.getByLabel('Maximum uses').fill('10');
  await dialog.getByLabel('Valid for (days)').fill('30');
  await dialog.getByText('An admin approves each device').click();
  await shot(page, 'code-new-dialog', testInfo);
  await dialog.getByRole('button', { name: 'Create code' }).click();

  await expect(page).toHaveURL(/\/codes\/\d+$/);
  const id = Number(new URL(page.url()).pathname.split('/').pop());
  const code = await admin.codes.get(id);
  expect(code).toMatchObject({
    name,
    domains: ['example.com', 'example.org'],
    max_uses: 10,
    approval: 'manual',
    status: 'active',
  });
  await expect(page.getByTestId('code-deeplink')).toHaveText(code.deeplink);
  const qr = page.getByTestId('code-qr');
  await expect(qr).toBeVisible();
  expect(await decodeQrOf(qr)).toBe(code.deeplink);

  // Three people enroll with the simulator.
  const simulate = async (email: string) => {
    await page.getByRole('button', { name: 'Simulate a device' }).click();
    const form = page.getByRole('dialog', { name: 'Simulate a person enrolling a device' });
    await expect(form.getByTestId('simulate-email')).toHaveValue(/@example\.(com|org)$/); // a made-up allowed address
    await form.getByTestId('simulate-email').fill(email);
    await form.getByRole('button', { name: 'Enroll' }).click();
    const result = page.getByRole('dialog', { name: 'Simulated device' });
    await expect(result).toBeVisible({ timeout: 30_000 });
    const text = (await result.textContent()) ?? '';
    await result.getByRole('button', { name: 'Close', exact: true }).click();
    await expect(result).toHaveCount(0);
    return text;
  };
  // A code that needs approval: the simulated devices say they wait (not a green "enrolled").
  for (const email of ['ann@example.com', 'bob@example.org']) {
    const said = await simulate(email);
    expect(said).toContain('Waiting for approval');
    expect(said).not.toContain('The simulated device enrolled');
  }
  expect(await simulate('eve@evil.test')).toContain('this code is for addresses at @example.com, @example.org');

  const uses = page.getByTestId('code-use-row');
  await expect(uses).toHaveCount(2);
  await expect(page.getByTestId('code-detail-uses')).toHaveText('2 / 10');
  await expect(uses.filter({ hasText: 'ann@example.com' }).getByTestId('enroll-status')).toHaveText('Waiting for approval');
  await expect(uses.filter({ hasText: 'bob@example.org' }).getByTestId('enroll-status')).toHaveText('Waiting for approval');
  const refused = page.getByTestId('code-refused-row');
  await expect(refused).toHaveCount(1);
  await expect(refused).toContainText('eve@evil.test');
  await shot(page, 'code-page', testInfo, { fullPage: true });

  // The queue, in a second tab: approve Ann there; the code page (first tab) follows live.
  const queue = await context.newPage();
  await queue.goto('/approvals');
  const rows = queue.getByTestId('approval-row');
  await expect(rows.filter({ hasText: 'ann@example.com' })).toHaveCount(1);
  await expect(rows.filter({ hasText: 'bob@example.org' })).toHaveCount(1);
  await expect(queue.getByTestId('nav-waiting')).toContainText(/\d/);
  await shot(queue, 'approval-queue', testInfo);
  await rows.filter({ hasText: 'ann@example.com' }).getByRole('checkbox').check();
  await queue.getByRole('button', { name: /Approve selected \(1\)/ }).click();
  await expect(rows.filter({ hasText: 'ann@example.com' })).toHaveCount(0);
  await expect(rows.filter({ hasText: 'bob@example.org' })).toHaveCount(1);

  await expect(uses.filter({ hasText: 'ann@example.com' }).getByTestId('enroll-status')).toHaveText('Enrolled');
  await expect(uses.filter({ hasText: 'bob@example.org' }).getByTestId('enroll-status')).toHaveText('Waiting for approval');
  const agents = await admin.agents.list();
  const ann = agents.items.find((a) => a.email === 'ann@example.com');
  expect(ann).toMatchObject({ enroll_status: 'enrolled', enrollment_code_id: id });
  // Approved, Ann's simulated device (which kept trying) comes online; Bob's still waits, offline.
  await expect.poll(async () => (await admin.agents.get(ann!.id)).is_online).toBe(true);
  expect((await admin.agents.list()).items.find((a) => a.email === 'bob@example.org')?.is_online).toBe(false);

  // Bob's device panel offers the decision too.
  const bob = agents.items.find((a) => a.email === 'bob@example.org');
  await queue.goto(`/devices?agent=${bob!.id}`);
  await expect(queue.getByTestId('drawer-enroll-status')).toHaveText('Waiting for approval');
  await expect(queue.getByTestId('drawer-approval').getByRole('button', { name: 'Approve' })).toBeVisible();
  await shot(queue, 'device-waiting-approval', testInfo);

  // The dashboard counts who is still waiting.
  await queue.goto('/');
  const waiting = Number(await queue.getByTestId('waiting-approval-count').textContent());
  expect(waiting).toBe((await admin.status()).counts.pending_approval);
  expect(waiting).toBeGreaterThanOrEqual(1);

  // Reject Bob from the code page: his row follows.
  await uses.filter({ hasText: 'bob@example.org' }).getByRole('button', { name: 'Reject' }).click();
  await expect(uses.filter({ hasText: 'bob@example.org' }).getByTestId('enroll-status')).toHaveText('Rejected');
  // …and the dashboard in the other tab counts one fewer, live.
  if (waiting > 1) await expect(queue.getByTestId('waiting-approval-count')).toHaveText(String(waiting - 1));
  else await expect(queue.getByTestId('waiting-approval')).toHaveCount(0);

  // The list: uses, expiry and status; then the poster, on Letter.
  await page.goto('/codes');
  const row = page.locator(`[data-code-id="${id}"]`);
  await expect(row.getByTestId('code-uses')).toContainText('2 / 10');
  await expect(row.getByTestId('code-status')).toHaveText('Active');
  await shot(page, 'codes-list', testInfo);
  await page.goto(`/codes/${id}/poster`);
  await page.getByText('Letter').click();
  const poster = page.getByTestId('code-poster');
  await expect(poster).toHaveAttribute('data-ready', 'true');
  await expect(poster).toHaveAttribute('data-paper', 'letter');
  await expect(poster).toContainText('@example.com or @example.org');
  await expect(poster).toContainText('Wait for your IT team to approve the device');
  expect(await decodeQrOf(poster.locator('img'))).toBe(code.deeplink);
  await shot(page, 'code-poster', testInfo, { fullPage: true });

  // Rotate: a new QR code, the old link dead.
  await page.goto(`/codes/${id}`);
  await page.getByRole('button', { name: 'Rotate' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Rotate' }).click();
  await expect(page.getByTestId('code-deeplink')).not.toHaveText(code.deeplink);
  await expect(page.getByText('no longer work')).toBeVisible();
  await queue.close();
});

test('"Simulate a device" on a code that needs approval: the dialog says it waits, Approve there, and it comes online live', async ({
  page,
}, testInfo) => {
  const code = await admin.codes.create({ name: `Front desk ${Date.now()}`, approval: 'manual' });
  await page.goto(`/codes/${code.id}`);
  await page.getByRole('button', { name: 'Simulate a device' }).click();
  const form = page.getByRole('dialog', { name: 'Simulate a person enrolling a device' });
  await form.getByTestId('simulate-email').fill('walk-in@example.com');
  await form.getByRole('button', { name: 'Enroll' }).click();
  const result = page.getByRole('dialog', { name: 'Simulated device' });
  const waiting = result.getByTestId('simulation-waiting');
  await expect(waiting).toContainText('Waiting for approval', { timeout: 30_000 });
  await expect(waiting).toContainText('it keeps trying and comes online once approved');
  await expect(result.getByText('The simulated device enrolled')).toHaveCount(0);
  await expect(
    page.getByText('walk-in@example.com enrolled a simulated android device: it is waiting for approval'),
  ).toBeVisible();
  const agent = (await admin.agents.list()).items.find((a) => a.email === 'walk-in@example.com')!;
  expect(agent).toMatchObject({ enroll_status: 'pending_approval', is_online: false });
  await shot(result, 'simulate-waiting-for-approval', testInfo);

  await waiting.getByRole('button', { name: 'Approve' }).click();
  await expect(result.getByTestId('simulation-approved')).toContainText('Approved: the simulated device is online');
  expect(await admin.agents.get(agent.id)).toMatchObject({ enroll_status: 'enrolled', is_online: true });
  await shot(result, 'simulate-approved-online', testInfo);
  await result.getByRole('button', { name: 'Close', exact: true }).click();
});
