import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { admin, expect, shot, test } from './fixtures.ts';

// The Alerts page (issue 25, item 5), as the owner in Chromium: a webhook added with its secret,
// a test event sent from its row, the receiver (a real HTTP server) getting it signed, and the
// delivery log showing it delivered with its HTTP status; then a rule notifying that webhook.

const tag = () => String(Date.now()).slice(-6);

test('a webhook added in the console gets a signed test event; its log shows it delivered; a rule names it', async ({
  page,
}, testInfo) => {
  const t = tag();
  const secret = `e2e-secret-${t}-0123456789`;
  const receiver = await startWebhookReceiver(secret);
  try {
    await page.goto('/alerts');
    await expect(page.getByRole('heading', { name: 'Alerts', level: 1 })).toBeVisible();
    await page.getByRole('tab', { name: 'Webhooks' }).click();

    // A URL that is not http(s) is refused in the form, before anything is sent.
    await page.getByTestId('new-webhook-button').click();
    const dialog = page.getByRole('dialog', { name: 'New webhook' });
    await dialog.getByTestId('webhook-url').fill('ftp://example.com/in');
    await dialog.getByTestId('webhook-save').click();
    await expect(dialog.getByRole('alert')).toHaveText('The URL must start with http:// or https://');

    await dialog.getByTestId('webhook-url').fill(receiver.url);
    await dialog.getByTestId('webhook-name').fill(`Receiver ${t}`);
    await dialog.getByTestId('webhook-secret').fill(secret);
    await dialog.getByTestId('webhook-save').click();
    await expect(dialog).toBeHidden();
    const hook = (await admin.webhooks.list()).items.find((w) => w.name === `Receiver ${t}`)!;
    const row = page.getByTestId(`webhook-${hook.id}`);
    await expect(row).toContainText(receiver.url);
    await expect(row).toContainText(`…${secret.slice(-4)}`);
    await expect(row).not.toContainText(secret);

    await row.getByRole('button', { name: `Send a test event to Receiver ${t}` }).click();
    const log = page.getByRole('dialog', { name: `Delivery log: Receiver ${t}` });
    await expect(log.getByTestId('delivery-log')).toBeVisible();
    await expect(log.locator('tbody tr').first().getByTestId('delivery-state')).toHaveText('delivered');
    await expect(log.locator('tbody tr').first()).toContainText('webhook.test');
    await expect(log.locator('tbody tr').first()).toContainText('HTTP 200');
    await expect(log.locator('tbody tr').first()).toContainText('1/8');
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.verified).toBe(true);
    expect(receiver.received[0]!.json).toMatchObject({ event: 'webhook.test', data: { webhook: { id: hook.id } } });
    await shot(log, 'alerts-webhook-log', testInfo);
    await page.keyboard.press('Escape');
    await expect(row.getByTestId('delivery-state')).toHaveText('delivered');

    // A rule that notifies it.
    await page.getByTestId('new-rule-button').click();
    const ruleDialog = page.getByRole('dialog', { name: 'New alert rule' });
    await ruleDialog.getByTestId('rule-threshold').fill('5');
    await ruleDialog.getByTestId('rule-webhooks').click();
    await page.getByRole('option', { name: `Receiver ${t}` }).click();
    await ruleDialog.getByLabel('Name').fill(`Silent ${t}`);
    await ruleDialog.getByTestId('rule-create').click();
    await expect(ruleDialog).toBeHidden();
    await page.getByRole('tab', { name: 'Rules' }).click();
    const rule = (await admin.alerts.rules()).items.find((r) => r.name === `Silent ${t}`)!;
    expect(rule).toMatchObject({ kind: 'device_silent', threshold: 5, webhook_ids: [hook.id] });
    await expect(page.getByTestId(`rule-${rule.id}`)).toContainText(`Receiver ${t}`);
    await expect(page.getByTestId(`rule-${rule.id}`)).toContainText('Device not seen for 5 days');
    await shot(page, 'alerts-rules', testInfo);

    // Edited: another threshold and an email address.
    await page.getByRole('button', { name: `Edit Silent ${t}` }).click();
    const editDialog = page.getByRole('dialog', { name: `Edit "Silent ${t}"` });
    await editDialog.getByTestId('rule-threshold').fill('9');
    await editDialog.getByTestId('rule-emails').fill('ops@example.org');
    await editDialog.getByTestId('rule-emails').press('Enter');
    await editDialog.getByTestId('rule-create').click();
    await expect(editDialog).toBeHidden();
    await expect(page.getByTestId(`rule-${rule.id}`)).toContainText('Device not seen for 9 days');
    await expect(page.getByTestId(`rule-${rule.id}`)).toContainText(`ops@example.org, Receiver ${t}`);
    expect((await admin.alerts.rules()).items.find((r) => r.id === rule.id)).toMatchObject({
      threshold: 9,
      emails: ['ops@example.org'],
      webhook_ids: [hook.id],
    });
    await admin.alerts.deleteRule({ params: { id: rule.id } });
    await admin.webhooks.delete({ params: { id: hook.id } });
  } finally {
    await receiver.close();
  }
});
