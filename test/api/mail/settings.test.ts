import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/smtp.ts';

let t: TestBackend;
const PASSWORD = 'Pa55-w0rd-that-must-not-leak';

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t?.stop();
});

describe('mail settings', () => {
  it('keeps the SMTP password out of SQLite and out of every answer, in a 0600 file', async () => {
    const put = await t.admin('PUT', '/mail/settings', {
      smtp_url: `smtp://mailer%40corp.example:${encodeURIComponent(PASSWORD)}@smtp.example.com:2525`,
      mail_from_address: 'it@corp.example',
    });
    expect(put.status).toBe(200);
    expect(put.body.settings).toMatchObject({
      smtp_host: 'smtp.example.com',
      smtp_port: 2525,
      smtp_user: 'mailer@corp.example',
      smtp_security: 'auto',
    });
    expect(put.body.smtp_password_set).toBe(true);
    expect(put.body.secret_storage).toBe('file-0600');
    expect(put.body.effective).toMatchObject({
      kind: 'smtp',
      source: 'settings',
      host: 'smtp.example.com',
      from: 'MDM Console <it@corp.example>',
    });

    const answers = [
      put.body,
      (await t.admin('GET', '/mail/settings')).body,
      (await t.admin('GET', '/settings')).body,
      (await t.admin('GET', '/mail/status')).body,
      (await t.admin('GET', '/events?limit=1000')).body,
    ];
    for (const answer of answers) expect(JSON.stringify(answer)).not.toContain(PASSWORD);
    expect((await t.admin('GET', '/settings')).body).toMatchObject({ smtp_host: 'smtp.example.com', mail_send_on_create: true });

    const secrets = join(t.dataDir, 'secrets.json');
    expect(statSync(secrets).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(secrets, 'utf8')).values.smtp_password).toBe(PASSWORD);
    for (const name of readdirSync(t.dataDir).filter((n) => n.startsWith('mdm-console.sqlite'))) {
      expect(readFileSync(join(t.dataDir, name)).includes(PASSWORD)).toBe(false);
    }

    // Changing other fields keeps it; null removes it.
    expect((await t.admin('PUT', '/mail/settings', { smtp_port: 587 })).body.smtp_password_set).toBe(true);
    expect((await t.admin('PUT', '/mail/settings', { smtp_password: null })).body.smtp_password_set).toBe(false);
    // "" as the URL: back to no SMTP (outbox).
    expect((await t.admin('PUT', '/mail/settings', { smtp_url: '' })).body.effective.kind).toBe('outbox');
  });

  it('refuses bad input with a clear message and changes nothing', async () => {
    const before = (await t.admin('GET', '/mail/settings')).body.settings;
    const cases = [
      { smtp_security: 'sometimes' },
      { smtp_port: 70000 },
      { mail_from_address: 'not an address' },
      { smtp_url: 'http://example.com' },
      { mail_agent_app_url: 'javascript:alert(1)' },
      { smtp_passwd: 'typo' },
      { mail_html_template: '<p>{{name}} {{#helpdesk}}</p>', mail_from_name: 'changed?' },
    ];
    for (const body of cases) {
      const { status, body: answer } = await t.admin('PUT', '/mail/settings', body);
      expect(status, JSON.stringify(body)).toBe(400);
      expect(answer.message).toBeTruthy();
    }
    const broken = await t.admin('PUT', '/mail/settings', { mail_text_template: 'Hi {{nmae}}' });
    expect(broken.body.message).toContain('text template, line 1: unknown placeholder "nmae"');
    expect((await t.admin('GET', '/mail/settings')).body.settings).toEqual(before);
  });

  it('offers the default templates and the placeholders to the editor', async () => {
    const { body } = await t.admin('GET', '/mail/settings');
    expect(body.default_templates.html).toContain('{{deeplink}}');
    expect(body.default_templates.text).toContain('{{expires}}');
    expect(Object.keys(body.placeholders)).toEqual(
      expect.arrayContaining(['name', 'deeplink', 'qr_src', 'expires', 'helpdesk_phone', 'agent_app_url', 'inviter']),
    );
    expect(body.settings.mail_html_template).toBe('');
  });

  it('turns sending on create off by default when the setting says so', async () => {
    await t.admin('PUT', '/mail/settings', { mail_send_on_create: false });
    const { body: quiet } = await t.admin('POST', '/invitations', { email: 'default-off@example.com' });
    expect(quiet.delivery).toBeNull();
    const { body: loud } = await t.admin('POST', '/invitations', { email: 'asked@example.com', send_email: true });
    expect(loud.delivery.state).toBe('queued');
    await t.admin('PUT', '/mail/settings', { mail_send_on_create: true });
    await eventually(async () => (await t.admin('GET', `/invitations/${loud.id}`)).body.delivery.state === 'outbox');
  });
});

describe('template preview', () => {
  it('renders the templates in force, or the ones being edited, with every value escaped', async () => {
    const { body: invitation } = await t.admin('POST', '/invitations', {
      email: 'pre@example.com',
      firstname: '<b>Bold</b>',
      send_email: false,
    });
    const sample = await t.admin('POST', '/mail/preview', {});
    expect(sample.status).toBe(200);
    expect(sample.body.ok).toBe(true);
    expect(sample.body.to).toBe('alex.example@example.com');
    expect(sample.body.html).toContain('src="data:image/png;base64,');
    expect(sample.body.subject).toMatch(/invites you/);

    const edited = await t.admin('POST', '/mail/preview', {
      invitation_id: invitation.id,
      subject: 'For {{name}}',
      html: '<h1>{{name}}</h1><a href="{{deeplink}}">go</a>',
    });
    expect(edited.body.subject).toBe('For <b>Bold</b>');
    expect(edited.body.html).toBe(`<h1>&#60;b&#62;Bold&#60;/b&#62;</h1><a href="${invitation.deeplink}">go</a>`);
    expect(edited.body.text).toContain(invitation.deeplink);

    const broken = await t.admin('POST', '/mail/preview', { html: '{{#name}}open' });
    expect(broken.status).toBe(200);
    expect(broken.body.ok).toBe(false);
    expect(broken.body.html).toBeNull();
    expect(broken.body.errors.html[0]).toMatch(/never closed/);
    expect(broken.body.text).not.toBeNull();
  });
});
