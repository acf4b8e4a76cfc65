import type { Page } from '@playwright/test';
import { createRequire } from 'node:module';
import { admin, expect, server, test } from './fixtures.ts';

// Every page of the console (and its dialogs, and the deeplink page phones see) passes axe-core
// with no serious or critical violation, in the light and the dark theme. axe runs inside the
// page; the console's strict CSP would refuse an injected script, so this context bypasses it.

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

test.use({ bypassCSP: true });

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

async function seriousViolations(page: Page, where: string): Promise<string[]> {
  // Let transitions (modal fade-in, theme switch) finish: axe reads computed colours.
  await page.waitForTimeout(400);
  await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    const page = globalThis as unknown as {
      axe: { run(context: unknown, options: unknown): Promise<{ violations: unknown[] }> };
      document: unknown;
    };
    const result = await page.axe.run(page.document, { resultTypes: ['violations'] });
    return result.violations as unknown[];
  });
  return (violations as Violation[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${where}: [${v.impact}] ${v.id} — ${v.help}\n${v.nodes
          .slice(0, 4)
          .map((n) => `    ${n.target.join(' ')}: ${(n.failureSummary ?? '').replace(/\s+/g, ' ').slice(0, 300)}`)
          .join('\n')}`,
    );
}

let invitationId: number;
let deviceId: number;
let codeId: number;

test.beforeAll(async () => {
  const pending = await admin.invitations.create({
    body: {
      email: `axe.${Date.now()}@example.com`,
      firstname: 'Ada',
      lastname: 'Axe',
      send_email: false,
    },
  });
  invitationId = pending.id;
  const used = await admin.invitations.create({ body: { email: `axe.device.${Date.now()}@example.com`, send_email: false } });
  const simulated = await admin.invitations.simulate({ params: { id: used.id } });
  expect(simulated.ok, simulated.error ?? '').toBe(true);
  deviceId = simulated.agent_id!;
  codeId = (await admin.codes.create({ body: { name: `Axe code ${Date.now()}`, domains: ['example.com'], approval: 'manual' } }))
    .id;
});

for (const scheme of ['light', 'dark'] as const) {
  test(`axe: every console page, ${scheme} theme`, async ({ page }) => {
    test.setTimeout(240_000); // axe on every page of the console: minutes when the machine is loaded
    await page.emulateMedia({ colorScheme: scheme });
    const found: string[] = [];
    const visit = async (path: string, ready: () => Promise<void>) => {
      await page.goto(path);
      await ready();
      found.push(...(await seriousViolations(page, path)));
    };

    await visit('/', () => expect(page.getByRole('heading', { name: 'Dashboard', level: 1 })).toBeVisible());
    await visit('/invitations', () => expect(page.getByRole('heading', { name: 'Invitations', level: 1 })).toBeVisible());
    await visit(`/invitations/${invitationId}`, () => expect(page.getByTestId('invitation-status')).toBeVisible());
    await visit('/devices', () => expect(page.getByTestId('devices-table')).toBeVisible());
    await visit('/codes', () => expect(page.getByRole('heading', { level: 1 })).toBeVisible());
    await visit(`/codes/${codeId}`, () => expect(page.getByRole('heading', { level: 1 })).toBeVisible());
    await visit('/approvals', () => expect(page.getByRole('heading', { level: 1 })).toBeVisible());
    await visit('/files', () => expect(page.getByRole('heading', { name: 'Files & packages', level: 1 })).toBeVisible());
    await visit('/settings', () => expect(page.getByRole('heading', { name: 'Settings', level: 1 })).toBeVisible());
    await visit('/tokens', () => expect(page.getByRole('heading', { name: 'API tokens', level: 1 })).toBeVisible());
    await visit('/audit', () => expect(page.getByTestId('audit-table')).toBeVisible());
    const job = await admin.jobs.create({ body: { action: 'ping', selection: { ids: [deviceId] } } });
    await visit('/jobs', () => expect(page.getByTestId('jobs-table')).toBeVisible());
    await visit(`/jobs/${job.id}`, () => expect(page.getByTestId('job-processed')).toContainText('1 of 1 device processed'));
    await visit('/accounts', () => expect(page.getByTestId('accounts-table')).toBeVisible());
    await visit('/alerts', () => expect(page.getByRole('heading', { name: 'Alerts', level: 1 })).toBeVisible());
    await visit('/reports', () => expect(page.getByTestId('report-enrollments-legend')).toBeVisible());
    await visit(`/print?ids=${invitationId}`, () =>
      expect(page.getByTestId('print-sheet')).toHaveAttribute('data-ready', 'true'),
    );
    await visit('/print', () => expect(page.getByText('No invitations chosen')).toBeVisible());
    await visit('/no-such-page', () => expect(page.getByRole('heading', { level: 1 })).toBeVisible());

    // Dialogs and panels.
    await page.goto('/alerts');
    await page.getByTestId('new-rule-button').click();
    await expect(page.getByRole('dialog', { name: 'New alert rule' })).toBeVisible();
    found.push(...(await seriousViolations(page, 'new alert rule dialog')));
    await page.goto('/invitations?new=1');
    await expect(page.getByRole('dialog', { name: 'New invitation' })).toBeVisible();
    found.push(...(await seriousViolations(page, 'new invitation dialog')));
    await page.goto('/invitations');
    await page.getByRole('button', { name: /Invite many/ }).click();
    await expect(page.getByRole('dialog', { name: 'Invite many people' })).toBeVisible();
    found.push(...(await seriousViolations(page, 'bulk dialog')));
    await page.goto('/devices');
    await page.getByTestId('select-row').first().click();
    await expect(page.getByTestId('bulk-bar')).toBeVisible();
    found.push(...(await seriousViolations(page, 'bulk actions bar')));
    await page.getByTestId('bulk-bar').getByRole('button', { name: 'Lock', exact: true }).click();
    await expect(page.getByRole('dialog', { name: 'Lock: 1 device?' })).toBeVisible();
    found.push(...(await seriousViolations(page, 'bulk confirmation')));
    await page.goto(`/devices?agent=${deviceId}`);
    await expect(page.getByRole('dialog')).toBeVisible();
    found.push(...(await seriousViolations(page, 'device panel')));

    expect(found, found.join('\n')).toEqual([]);
  });
}

test('axe: the sign-in page and the deeplink page', async ({ browser }) => {
  const context = await browser.newContext({ bypassCSP: true, storageState: { cookies: [], origins: [] } });
  const page = await context.newPage();
  const found: string[] = [];
  await page.goto(`${server.admin_url}/sign-in`);
  await expect(page.getByRole('heading', { name: 'Sign in to MDM Console' })).toBeVisible();
  found.push(...(await seriousViolations(page, '/sign-in')));
  await page.goto(`${server.admin_url}/sign-in?link=used`);
  await expect(page.getByTestId('used-link')).toBeVisible();
  found.push(...(await seriousViolations(page, '/sign-in?link=used')));
  await page.goto(`${server.admin_url}/setup?token=unused`);
  await expect(page.getByRole('heading', { name: 'Set up the owner' })).toBeVisible();
  found.push(...(await seriousViolations(page, '/setup')));
  // An invited admin's set-password page, and what it says without its link.
  const invited = await admin.accounts.invite({
    body: { email: `axe.${Date.now()}@example.org`, role: 'observer', no_email: true },
  });
  await page.goto(invited.setup_url!);
  await expect(page.getByRole('heading', { name: 'Welcome to MDM Console' })).toBeVisible();
  found.push(...(await seriousViolations(page, '/set-password')));
  await page.goto(`${server.admin_url}/set-password`);
  await expect(page.getByRole('heading', { name: 'This link no longer works' })).toBeVisible();
  found.push(...(await seriousViolations(page, '/set-password without its link')));
  const invitation = await admin.invitations.get({ params: { id: invitationId } });
  await page.goto(invitation.deeplink);
  await expect(page.getByRole('heading', { name: 'Enroll your device' })).toBeVisible();
  found.push(...(await seriousViolations(page, 'deeplink page')));
  await context.close();
  expect(found, found.join('\n')).toEqual([]);
});
