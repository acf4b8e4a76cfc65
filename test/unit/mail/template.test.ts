import { describe, expect, it } from 'vitest';
import { composeInvitationMail, templateValues, type InvitationForMail } from '../../../src-main/backend/mail/message.ts';
import {
  checkTemplate,
  checkTemplates,
  DEFAULT_TEMPLATES,
  escapeHtml,
  renderTemplate,
  TemplateError,
  type TemplateValues,
} from '../../../src-main/backend/mail/template.ts';
import { DEFAULT_SETTINGS, type Settings } from '../../../src-main/backend/settings/settings.ts';
import { decodeQrPng } from '../../helpers/qr.ts';

const invitation: InvitationForMail = {
  id: 7,
  email: 'eve@example.com',
  firstname: '<script>alert(1)</script>',
  lastname: 'O\'Hara & "Sons"',
  expires_at: '2030-01-02T03:04:05.000Z',
  deeplink: 'http://192.0.2.10:8080/deeplink/?data=aGVsbG8%3D&x=1',
  app_link: 'mdmagent://register?data=aGVsbG8%3D',
};

function values(settings: Partial<Settings> = {}): TemplateValues {
  return templateValues(invitation, { ...DEFAULT_SETTINGS, ...settings }, 'cid:qr@x');
}

describe('template rendering', () => {
  it('escapes every inserted value in HTML, never the template itself', () => {
    const html = renderTemplate('html', '<p title="{{name}}">{{name}}</p><a href="{{deeplink}}">go</a>', values());
    expect(html).not.toContain('<script>');
    expect(html).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(html).toContain('O&#39;Hara &#38; &#34;Sons&#34;');
    expect(html).toContain('href="http://192.0.2.10:8080/deeplink/?data=aGVsbG8%3D&#38;x=1"');
    expect(html.startsWith('<p title="')).toBe(true);
  });

  it('keeps text values as they are and folds line breaks in the subject', () => {
    expect(renderTemplate('text', 'Hi {{firstname}}', values())).toBe('Hi <script>alert(1)</script>');
    const subject = renderTemplate('subject', '{{inviter}} invites you', values({ mail_inviter: 'IT\r\nBcc: evil@example.com' }));
    expect(subject).toBe('IT Bcc: evil@example.com invites you');
    expect(subject).not.toMatch(/[\r\n]/);
  });

  it('shows a section only when its value is set, an inverted one only when it is not', () => {
    const template =
      '{{#helpdesk_phone}}Call {{helpdesk_phone}}{{/helpdesk_phone}}{{^helpdesk_phone}}No phone{{/helpdesk_phone}}';
    expect(renderTemplate('text', template, values())).toBe('No phone');
    expect(renderTemplate('text', template, values({ helpdesk_phone: '+1 555' }))).toBe('Call +1 555');
    expect(renderTemplate('text', '{{#helpdesk}}help{{/helpdesk}}', values({ helpdesk_email: 'h@x.org' }))).toBe('help');
    expect(renderTemplate('text', '{{#helpdesk}}help{{/helpdesk}}', values())).toBe('');
  });

  it('reports unknown placeholders and broken sections with their line, all at once', () => {
    const errors = checkTemplate('Hello {{nmae}}\n{{#email}}x\n{{/helpdesk}}\n{{ oops! }}\n{{#name}}');
    expect(errors.join('\n')).toMatch(/line 1: unknown placeholder "nmae"/);
    expect(errors.join('\n')).toMatch(/line 3: "\{\{\/helpdesk\}\}" closes "\{\{#email\}\}"/);
    expect(errors.join('\n')).toMatch(/line 4: .*not a placeholder/);
    expect(errors.join('\n')).toMatch(/never closed/);
    expect(checkTemplate('{{name')).toEqual(['line 1: "{{" is never closed by "}}"']);
    expect(() => renderTemplate('html', '{{nope}}', values())).toThrow(TemplateError);
  });

  it('ships defaults that are valid', () => {
    expect(checkTemplates(DEFAULT_TEMPLATES)).toEqual({});
    expect(escapeHtml(`<>&"'\``)).toBe('&#60;&#62;&#38;&#34;&#39;&#96;');
  });
});

describe('the invitation message', () => {
  it('has HTML and text with the deeplink, the QR code inline and attached, the helpdesk and the expiry', async () => {
    const settings: Settings = {
      ...DEFAULT_SETTINGS,
      helpdesk_name: 'Desk <1>',
      helpdesk_phone: '+33 1 23',
      mail_agent_app_url: 'https://example.com/app',
    };
    const message = await composeInvitationMail(invitation, settings, 'MDM <mdm@example.com>');
    const html = String(message.html);
    const text = String(message.text);
    expect(message.to).toBe('eve@example.com');
    expect(html).toContain(escapeHtml(invitation.deeplink));
    expect(text).toContain(invitation.deeplink);
    expect(html).toContain('src="cid:qr-7@mdm-console"');
    expect(html).toContain('Desk &#60;1&#62;');
    expect(text).toContain('Phone: +33 1 23');
    expect(html).toContain('https://example.com/app');
    expect(text).toMatch(/expires on \w+day, 2 January 2030/);
    const attachments = message.attachments as { cid?: string; contentDisposition?: string; content: Buffer; filename: string }[];
    expect(attachments.map((a) => [a.filename, a.contentDisposition, a.cid ?? null])).toEqual([
      ['enrollment-qr.png', 'inline', 'qr-7@mdm-console'],
      ['enrollment-qr.png', 'attachment', null],
    ]);
    expect(decodeQrPng(attachments[1]!.content)).toBe(invitation.deeplink);
  });
});
