import { readFile } from 'node:fs/promises';
import { parseCsv } from '../helpers/csv.ts';
import { admin, adminOf, expect, server, shot, test } from './fixtures.ts';

// The Audit page (issue 22, item 4), as the owner in Chromium: a device locked and a fleet renamed
// in the console; the page filtered by action and by actor shows the entry with its fields before
// and after; an action taken meanwhile by a script with a personal API token appears without a
// reload; the CSV download holds the filtered rows only, under its header; and the device's
// history says who locked it.

const tag = () => String(Date.now()).slice(-6);

test('the audit trail: filtered by action and actor, before and after, live, CSV of the filter, and who locked the device', async ({
  page,
}, testInfo) => {
  const t = tag();
  const me = await (await page.request.get('/api/me')).json();
  const owner = me.account.display_name as string;
  expect(owner).toBeTruthy();

  // A device (the simulator enrols one), a fleet, and a script's personal API token of the owner.
  const invitation = await admin.invitations.create({ body: { email: `audited.${t}@example.com`, send_email: false } });
  const simulated = await admin.invitations.simulate({ params: { id: invitation.id } });
  expect(simulated.ok, simulated.error ?? '').toBe(true);
  const agentId = simulated.agent_id as number;
  const fleetName = `Audited ${t}`;
  await admin.fleets.create({ body: { name: fleetName } });
  const botName = `audit-bot-${t}`;
  const bot = await admin.tokens.create({ body: { name: botName, role: 'admin' } });

  // The owner locks the device in its drawer.
  await page.goto(`/devices?agent=${agentId}`);
  const drawer = page.getByTestId('device-drawer').getByRole('dialog', { name: 'Device' });
  await drawer.getByRole('button', { name: 'Lock', exact: true }).click();
  const confirm = page.getByRole('dialog', { name: 'Lock this device?' });
  await confirm.getByRole('button', { name: 'Lock' }).click();
  await expect(confirm).toBeHidden();
  await expect(page.getByRole('alert').getByText(/^Lock (sent to|is waiting for)/)).toBeVisible();
  // The device's history says who did it.
  await expect(drawer.getByTestId('agent-history').getByTestId('history-actor').first()).toHaveText(`Locked by ${owner}`);
  await drawer.getByTestId('agent-history').scrollIntoViewIfNeeded();
  await shot(drawer.getByTestId('agent-history'), 'audit-device-history-who', testInfo);

  // The owner renames the fleet on the Fleets page.
  await page.goto('/fleets');
  await page.getByRole('button', { name: `Rename ${fleetName}` }).click();
  const renameDialog = page.getByRole('dialog', { name: `Rename "${fleetName}"` });
  await renameDialog.getByLabel('New name').fill(`${fleetName} renamed`);
  await renameDialog.getByRole('button', { name: 'Rename' }).click();
  await expect(page.getByTestId('fleet-list')).toContainText(`${fleetName} renamed`);

  // The Audit page, filtered by action: the rename, with the name before and after.
  await page.goto('/audit');
  await expect(page.getByRole('heading', { name: 'Audit', level: 1 })).toBeVisible();
  const table = page.getByTestId('audit-table');
  const rows = table.locator('tbody tr');
  await page.getByTestId('audit-action').fill('fleet.renamed');
  await page.getByTestId('audit-target').fill(fleetName);
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText(owner);
  await expect(rows.first()).toContainText(`Fleet "${fleetName}" renamed to "${fleetName} renamed"`);
  await expect(rows.first().getByTestId('audit-changes')).toHaveText(`name "${fleetName}" → "${fleetName} renamed"`);
  // By day (the browser's time zone is UTC): from today keeps it, up to yesterday drops it.
  const today = new Date().toISOString().slice(0, 10);
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  await page.getByTestId('audit-since').fill(today);
  await expect(rows).toHaveCount(1);
  await page.getByTestId('audit-since').fill('');
  await page.getByTestId('audit-until').fill(yesterday);
  await expect(page.getByText('Nothing matches these filters')).toBeVisible();
  await page.getByTestId('audit-until').fill('');
  await expect(rows).toHaveCount(1);

  // By action and by actor: the lock is the owner's and is there, with the lock's before and after;
  // the bot's token has done nothing yet.
  await page.getByTestId('audit-target').fill('');
  await page.getByTestId('audit-action').fill('agent.command');
  await page.getByTestId('audit-actor').fill(botName);
  await expect(page.getByText('Nothing matches these filters')).toBeVisible();
  await page.getByTestId('audit-actor').fill(owner);
  const lockRow = rows.filter({ hasText: 'Lock sent to' });
  await expect(lockRow).toHaveCount(1);
  await expect(lockRow).toContainText(owner);
  await expect(lockRow.getByTestId('audit-changes')).toHaveText('locked false → true');

  // Live: the script's token pings the device; with the actor filter on the bot, the entry appears
  // without a reload (the page stays the same document).
  await page.getByTestId('audit-actor').fill(botName);
  await expect(page.getByText('Nothing matches these filters')).toBeVisible();
  await page.evaluate(() => ((globalThis as unknown as { __auditPage: boolean }).__auditPage = true));
  const asBot = adminOf({ admin_url: server.admin_url, admin_token: bot.token });
  await asBot.agents.command({ params: { id: agentId }, body: { command: 'unlock' } });
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText(botName);
  await expect(rows.first().getByTestId('audit-changes')).toHaveText('locked true → false');
  expect(await page.evaluate(() => (globalThis as unknown as { __auditPage?: boolean }).__auditPage)).toBe(true);
  await shot(page, 'audit-filtered-live', testInfo);

  // The CSV download for the filter in force (action agent.command, actor the bot's token): the
  // header, then the bot's unlock only (not the owner's lock, not anything else).
  await page.getByTestId('audit-export').click();
  const downloading = page.waitForEvent('download');
  await page.getByTestId('audit-export-csv').click();
  const download = await downloading;
  expect(download.suggestedFilename()).toMatch(/\.csv$/);
  const text = await readFile((await download.path())!, 'utf8');
  const [header = [], ...csvRows] = parseCsv(text);
  expect(header).toEqual([
    'id',
    'at',
    'actor',
    'account_id',
    'token_name',
    'role',
    'address',
    'action',
    'target_kind',
    'target_id',
    'target_name',
    'message',
    'changes',
  ]);
  const body = csvRows.map((cells) => Object.fromEntries(cells.map((cell, i) => [header[i], cell])));
  expect(body).toHaveLength(1);
  expect(body[0]).toMatchObject({ action: 'agent.command', token_name: botName, target_id: String(agentId) });
  expect(body[0]!.message).toMatch(/^Unlock sent to/);
});

test('an invitation revoked in the console: its history and its audit entry say who did it', async ({ page }, testInfo) => {
  const t = tag();
  const me = await (await page.request.get('/api/me')).json();
  const owner = me.account.display_name as string;
  const email = `revoked.${t}@example.com`;
  const invitation = await admin.invitations.create({ body: { email, send_email: false } });

  await page.goto(`/invitations/${invitation.id}`);
  await page.getByRole('button', { name: 'Revoke', exact: true }).click();
  const confirm = page.getByRole('dialog', { name: 'Revoke this invitation?' });
  await confirm.getByRole('button', { name: 'Revoke' }).click();
  await expect(confirm).toBeHidden();
  const history = page.getByTestId('invitation-history');
  await expect(history.getByTestId('history-actor').first()).toHaveText(`Revoked by ${owner}`);
  // Created with the data dir's admin token (a script's, not the owner in the console): said so.
  await expect(history.getByTestId('history-actor').last()).toHaveText('Invited by token admin token (data dir) (owner)');
  await shot(history, 'audit-invitation-history-who', testInfo);

  await page.goto('/audit');
  await page.getByTestId('audit-action').fill('invitation.revoked');
  await page.getByTestId('audit-target').fill(email);
  const rows = page.getByTestId('audit-table').locator('tbody tr');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText(owner);
  await expect(rows.first()).not.toContainText('token "');
  await expect(rows.first().getByTestId('audit-changes')).toContainText('status "pending" → "revoked"');
});
