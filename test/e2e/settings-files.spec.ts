import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { admin, expect, server, shot, test } from './fixtures.ts';

const FIELD_APP = readFileSync(fileURLToPath(new URL('../fixtures/field-app.apk', import.meta.url)));

test('settings round trip: validated as typed, saved, still there after a reload, used by invitations', async ({
  page,
}, testInfo) => {
  await page.goto('/settings');
  await expect(page.getByRole('heading', { name: 'Settings' })).toBeVisible();
  await expect(page.getByTestId('ports')).toContainText(String(server.mqtt_port));

  const scheme = page.getByTestId('app-link-scheme');
  await scheme.fill('1bad');
  await expect(page.getByText('A lower-case letter, then lower-case letters')).toBeVisible();
  await scheme.fill('acme-mdm');
  await expect(page.getByText('A lower-case letter, then lower-case letters')).toHaveCount(0);
  await page.getByTestId('helpdesk-name').fill('Service Desk');
  await page.getByTestId('helpdesk-phone').fill('+44 20 7946 0000');
  const email = page.getByTestId('helpdesk-email');
  await email.fill('desk@');
  await expect(page.getByText('Not a valid email address')).toBeVisible();
  await email.fill('desk@example.org');
  await page.getByTestId('lifetime').fill('14');
  await expect(page.getByTestId('settings-note')).toHaveText('You have unsaved changes.');
  await shot(page, 'settings-editing', testInfo, { fullPage: true });
  await page.getByRole('button', { name: 'Save changes' }).click();
  await expect(page.getByTestId('settings-note')).toContainText('Applied now, no restart needed');

  const saved = await admin.settings.get();
  expect(saved).toMatchObject({
    app_link_scheme: 'acme-mdm',
    helpdesk_name: 'Service Desk',
    helpdesk_phone: '+44 20 7946 0000',
    helpdesk_email: 'desk@example.org',
    invitation_lifetime_days: 14,
  });

  await page.reload();
  await expect(page.getByTestId('helpdesk-name')).toHaveValue('Service Desk');
  await expect(page.getByTestId('app-link-scheme')).toHaveValue('acme-mdm');
  await expect(page.getByTestId('lifetime')).toHaveValue('14');

  // New invitations carry them.
  const invitation = await admin.invitations.create({ email: `settings.${Date.now()}@example.com`, send_email: false });
  expect(invitation.app_link.startsWith('acme-mdm://register?data=')).toBe(true);
  expect(invitation.helpdesk.name).toBe('Service Desk');
  await page.goto(`/invitations/${invitation.id}`);
  await expect(page.getByTestId('invitation-helpdesk')).toContainText('+44 20 7946 0000');
  await expect(page.getByText(/in 14 days|in 2 weeks/)).toBeVisible();

  // A public host given on the command line wins over the setting: the console says so.
  await page.goto('/settings');
  await page.getByTestId('public-host-select').click();
  await page.getByRole('option', { name: 'Another name or address…' }).click();
  await page.getByTestId('public-host-input').fill('mdm.example.lan');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await expect(page.getByText('--public-host 127.0.0.1')).toBeVisible();
  await shot(page, 'settings-saved', testInfo, { fullPage: true });

  // Fleets: add and rename.
  const fleet = `Sales ${Date.now()}`;
  await page.getByLabel('New fleet').fill(fleet);
  await page.getByRole('button', { name: 'Add fleet' }).click();
  await expect(page.getByTestId('fleets')).toContainText(fleet);
  await page.getByRole('button', { name: `Rename ${fleet}` }).click();
  await page.getByLabel(`New name of ${fleet}`).fill(`${fleet} EMEA`);
  await page.getByRole('button', { name: 'Save the name' }).click();
  await expect(page.getByTestId('fleets')).toContainText(`${fleet} EMEA`);

  await admin.settings.update({
    app_link_scheme: 'mdmagent',
    helpdesk_name: '',
    helpdesk_phone: '',
    helpdesk_email: '',
    invitation_lifetime_days: 7,
    public_host: '',
  });
});

test('files and packages: upload by drop with progress, listed with size and checksum, deleted', async ({
  page,
  consoleGuard,
}, testInfo) => {
  // The server answers 422 to the .apk that is no APK (its manifest cannot be read); the page
  // offers to keep it as a package. Chromium logs the refused upload itself.
  consoleGuard.allow(
    /^Failed to load resource: the server responded with a status of 422 \(Unprocessable (Content|Entity)\) @ http:\/\/127\.0\.0\.1:\d+\/api\/packages\?/,
    'an unreadable APK refused on purpose',
  );
  const content = Buffer.alloc(3 * 1024 * 1024, 7);
  content.write(`e2e ${Date.now()}`);
  const sha256 = createHash('sha256').update(content).digest('hex');
  const name = `config-${Date.now()}.bin`;
  await page.goto('/files');
  await expect(page.getByRole('heading', { name: 'Files & packages' })).toBeVisible();
  await page
    .getByTestId('file-dropzone')
    .locator('input[type="file"]')
    .setInputFiles({ name, mimeType: 'application/octet-stream', buffer: content });
  await expect(page.getByTestId('uploads')).toContainText(name);
  const row = page.getByTestId('file-table').locator(`tr[data-item-name="${name}"]`);
  await expect(row).toContainText('3.00 MB');
  await expect(row).toContainText(sha256.slice(0, 16));
  const listed = (await admin.stored('file').list()).find((item) => item.name === name);
  expect(listed).toMatchObject({ size: content.length, sha256 });
  await shot(page, 'files', testInfo);

  // Something named .apk that is no APK: refused with the reason; the admin keeps it as the package they describe.
  await page.getByRole('tab', { name: /Packages/ }).click();
  const fake = `agent-${Date.now()}.apk`;
  await page
    .getByTestId('package-dropzone')
    .locator('input[type="file"]')
    .setInputFiles({
      name: fake,
      mimeType: 'application/vnd.android.package-archive',
      buffer: Buffer.from('PK\u0003\u0004 not really an apk'),
    });
  const refused = page.getByTestId('unreadable-apk');
  await expect(refused).toContainText(`${fake} was not added`);
  await expect(refused).toContainText("this APK's manifest could not be read: it is not a zip archive");
  expect((await admin.stored('package').list()).map((item) => item.name)).not.toContain(fake);
  await shot(page, 'package-unreadable', testInfo);
  await refused.getByRole('button', { name: `Keep ${fake} as a package` }).click();
  const keep = page.getByRole('dialog', { name: `Keep ${fake} as a package` });
  await keep.getByLabel('Package name').fill('no dots');
  await expect(keep.getByText('Dot-separated names, e.g. com.example.app')).toBeVisible();
  await keep.getByLabel('Package name').fill('org.example.agent');
  await keep.getByLabel('Version code').fill('12');
  await keep.getByRole('button', { name: 'Keep as a package' }).click();
  const kept = page.getByTestId('package-table').locator(`tr[data-item-name="${fake}"]`);
  await expect(kept).toContainText('org.example.agent');
  await expect(kept).toContainText('(code 12)');
  await expect(refused).toHaveCount(0);
  await shot(page, 'packages', testInfo);

  // A real APK dropped on the Files tab is offered as a package, and added as one.
  await page.getByRole('tab', { name: /Files/ }).click();
  const apkName = `field-${Date.now()}.apk`;
  await page
    .getByTestId('file-dropzone')
    .locator('input[type="file"]')
    .setInputFiles({ name: apkName, mimeType: 'application/vnd.android.package-archive', buffer: FIELD_APP });
  const offer = page.getByRole('dialog', { name: 'Add this app as a package?' });
  await expect(offer.getByTestId('offered-apks')).toContainText(apkName);
  await shot(page, 'apk-offered-as-package', testInfo);
  await offer.getByRole('button', { name: 'Add as a package' }).click();
  await expect(page).toHaveURL(/tab=packages/);
  const added = page.getByTestId('package-table').locator(`tr[data-item-name="${apkName}"]`);
  await expect(added).toContainText('org.example.fieldapp');
  await expect(added).toContainText('Field App');
  expect((await admin.stored('file').list()).map((item) => item.name)).not.toContain(apkName);

  // Or, when the admin says so, stored as a plain file.
  await page.getByRole('tab', { name: /Files/ }).click();
  const asFile = `plain-${Date.now()}.apk`;
  await page
    .getByTestId('file-dropzone')
    .locator('input[type="file"]')
    .setInputFiles({ name: asFile, mimeType: 'application/vnd.android.package-archive', buffer: FIELD_APP });
  await page
    .getByRole('dialog', { name: 'Add this app as a package?' })
    .getByRole('button', { name: 'Store as a plain file' })
    .click();
  await expect(page.getByTestId('file-table').locator(`tr[data-item-name="${asFile}"]`)).toBeVisible();

  await page.getByRole('tab', { name: /Files/ }).click();
  await row.getByRole('button', { name: `Delete ${name}` }).click();
  await page
    .getByRole('dialog', { name: `Delete ${name}?` })
    .getByRole('button', { name: 'Delete' })
    .click();
  await expect(row).toHaveCount(0);
});

test('invitation email: transport, template preview, a template change, a test email and a resend', async ({
  page,
}, testInfo) => {
  await page.goto('/settings#email');
  const section = page.locator('#email');
  await expect(section.getByTestId('mail-transport')).toContainText('no SMTP server configured');
  await section.getByRole('button', { name: 'Edit the templates' }).click();
  await section.getByLabel('Subject').fill('{{name}}, your device is waiting');
  await section.getByRole('button', { name: 'Preview the email' }).click();
  const preview = page.getByRole('dialog', { name: 'Invitation email preview' });
  await expect(preview.getByTestId('mail-preview-subject')).toContainText(', your device is waiting');
  // (Read from srcdoc: the frame is sandboxed without scripts, which Playwright's frame queries need.)
  await expect(preview.locator('iframe')).toHaveAttribute('srcdoc', /enroll/);
  await shot(page, 'settings-email-preview', testInfo);
  await page.keyboard.press('Escape');
  await section.getByRole('button', { name: 'Save email settings' }).click();
  await expect(section.getByText('Saved; applies to the next email sent.')).toBeVisible();
  expect((await admin.mail.settings()).settings.mail_subject_template).toBe('{{name}}, your device is waiting');

  await section.getByLabel('Send a test email to').fill('test@example.com');
  await section.getByRole('button', { name: 'Send test' }).click();
  await expect(section.getByTestId('mail-test-result')).toContainText('Written to the outbox');
  await shot(page, 'settings-email', testInfo);

  // Resend from an invitation page.
  const invitation = await admin.invitations.create({ email: `resend.${Date.now()}@example.com` });
  await page.goto(`/invitations/${invitation.id}`);
  await expect(page.getByTestId('delivery-state')).toHaveText('Email in outbox');
  await page.getByRole('button', { name: 'Resend email' }).click();
  await expect(page.getByRole('alert').getByText('on its way again')).toBeVisible();
  await expect(page.getByTestId('invitation-history')).toContainText('written to the outbox');
  await admin.mail.saveSettings({ mail_subject_template: '' });
});
