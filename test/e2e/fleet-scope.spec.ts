import { admin, adminOf, expect, server, shot, test } from './fixtures.ts';

// Fleet scopes in the console (issue 22, item 2): an operator scoped to one fleet sees, at the top
// right, which; the device list holds that fleet's devices only, and a device enrolled meanwhile
// appears live (the console's EventSource) when it is in that fleet, never when it is in another.

const tag = () => String(Date.now()).slice(-6);

async function simulatedDevice(fleet: string, t: string): Promise<{ id: number; serial: string }> {
  const invitation = await admin.invitations.create({
    body: {
      email: `scope.${fleet.replace(/\W/g, '').toLowerCase()}.${t}.${Math.random().toString(36).slice(2, 6)}@example.com`,
      fleet,
      send_email: false,
    },
  });
  const simulated = await admin.invitations.simulate({ params: { id: invitation.id } });
  expect(simulated.ok, simulated.error ?? '').toBe(true);
  return { id: simulated.agent_id as number, serial: simulated.serial as string };
}

test('an operator scoped to one fleet sees its devices only, live', async ({ browser }, testInfo) => {
  const t = tag();
  const north = await admin.fleets.create({ body: { name: `North ${t}` } });
  await admin.fleets.create({ body: { name: `South ${t}` } });
  const mine = await simulatedDevice(`North ${t}`, t);
  const theirs = await simulatedDevice(`South ${t}`, t);

  const email = `nora.scoped.${t}@example.org`;
  const invited = await admin.accounts.invite({ body: { email, role: 'operator', display_name: 'Nora North', no_email: true } });
  await admin.accounts.setScope({ params: { id: invited.account.id }, body: { fleet_ids: [north.id] } });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: server.admin_url });
  const token = new URL(invited.setup_url!).searchParams.get('token')!;
  const accepted = await context.request.post('/auth/invitation', {
    headers: { origin: server.admin_url },
    data: { token, password: 'a scoped helpdesk password' },
  });
  expect(accepted.status(), await accepted.text()).toBe(200);
  const page = await context.newPage();

  await page.goto('/devices');
  await expect(page.getByTestId('fleet-scope')).toHaveText(`Scoped to fleets: North ${t}`);
  const rows = page.getByRole('row');
  await expect(rows.filter({ hasText: mine.serial })).toHaveCount(1);
  await expect(rows.filter({ hasText: theirs.serial })).toHaveCount(0);

  // Enrolled while the page is open: the other fleet's never shows; hers does, live.
  const later = await simulatedDevice(`South ${t}`, t);
  const hers = await simulatedDevice(`North ${t}`, t);
  await expect(rows.filter({ hasText: hers.serial })).toHaveCount(1);
  await expect(rows.filter({ hasText: later.serial })).toHaveCount(0);
  await shot(page, 'scoped-operator-devices', testInfo);

  // Another fleet's device by its address: not found, as one that does not exist.
  const answer = await context.request.get(`/api/agents/${theirs.id}`);
  expect(answer.status()).toBe(404);
  await context.close();
});

test('the owner makes an observer token scoped to one fleet on the API tokens page', async ({ page }, testInfo) => {
  const t = tag();
  const east = await admin.fleets.create({ body: { name: `East ${t}` } });
  await page.goto('/tokens');
  await page.getByTestId('new-token-button').click();
  await page.getByTestId('token-name').fill(`east wall screen ${t}`);
  await page.getByTestId('token-role').click();
  await page.getByRole('option', { name: 'observer: read only' }).click();
  await page.getByTestId('token-fleets').click();
  await page.getByRole('option', { name: `East ${t}` }).click();
  await page.keyboard.press('Escape');
  await shot(page, 'token-scoped-form', testInfo);
  await page.getByTestId('token-create').click();
  const token = (await page.getByTestId('new-token').innerText()).trim();
  await page.getByRole('button', { name: 'Done' }).click();
  const me = await adminOf({ admin_url: server.admin_url, admin_token: token }).me();
  expect(me.fleets).toEqual([{ id: east.id, name: `East ${t}` }]);
  await expect(page.getByRole('row').filter({ hasText: `east wall screen ${t}` })).toContainText(`fleets East ${t}`);
});
