import { QrTooLongError, qrDataUrl } from '../deeplink/qr.ts';
import { itemNotFound } from '../errors.ts';
import type { SettingsStore } from '../settings/settings.ts';
import { templatesOf, templateValues, type InvitationForMail } from './message.ts';
import type { MailableInvitations } from './ports.ts';
import type { MailSettingsService } from './settings-service.ts';
import { checkTemplates, renderTemplate, type MailTemplates } from './template.ts';

export interface PreviewInput {
  subject?: string;
  html?: string;
  text?: string;
  /** Renders for this invitation; without it, for a sample one. */
  invitation_id?: number;
}

/** The console's template preview. */
export class MailPreview {
  private readonly settings: SettingsStore;
  private readonly mailSettings: MailSettingsService;
  private readonly invitations: MailableInvitations;

  constructor(deps: { settings: SettingsStore; mailSettings: MailSettingsService; invitations: MailableInvitations }) {
    this.settings = deps.settings;
    this.mailSettings = deps.mailSettings;
    this.invitations = deps.invitations;
  }

  /**
   * Renders templates (the given ones, else those in force) for an invitation or a sample one.
   * The QR code is a data: URL here so the console can show the HTML as it is.
   */
  async render(input: PreviewInput) {
    const settings = this.settings.get();
    const inForce = templatesOf(settings);
    const templates: MailTemplates = {
      subject: input.subject ?? inForce.subject,
      html: input.html ?? inForce.html,
      text: input.text ?? inForce.text,
    };
    const problems = checkTemplates(templates);
    const invitation: InvitationForMail = input.invitation_id
      ? await this.invitation(input.invitation_id)
      : sampleInvitation(settings.invitation_lifetime_days);
    const target = (() => {
      try {
        return this.mailSettings.target();
      } catch {
        return null;
      }
    })();
    // A link too long for a QR code (settings saved before they were checked) previews without one.
    const qr = await qrDataUrl(invitation.deeplink, 480).catch((error: unknown) => {
      if (error instanceof QrTooLongError) return '';
      throw error;
    });
    const values = templateValues(invitation, settings, qr);
    const render = (part: 'subject' | 'html' | 'text') => (problems[part] ? null : renderTemplate(part, templates[part], values));
    return {
      from: target?.from ?? null,
      to: invitation.email,
      subject: render('subject'),
      html: render('html'),
      text: render('text'),
      errors: problems,
      ok: Object.keys(problems).length === 0,
      attachments: [{ filename: 'enrollment-qr.png', content_type: 'image/png' }],
    };
  }

  private async invitation(id: number): Promise<InvitationForMail> {
    const invitation = await this.invitations.forMail(id);
    if (!invitation) throw itemNotFound('Invitation not found');
    return invitation;
  }
}

function sampleInvitation(days: number): InvitationForMail {
  const data = Buffer.from('https://mdm.example.com/api;sample-user-token;sample-invitation-token;Helpdesk;;;').toString(
    'base64',
  );
  return {
    id: 0,
    email: 'alex.example@example.com',
    firstname: 'Alex',
    lastname: 'Example',
    expires_at: new Date(Date.now() + days * 86_400_000).toISOString(),
    deeplink: `https://mdm.example.com/deeplink/?data=${encodeURIComponent(data)}`,
    app_link: `mdmagent://register?data=${encodeURIComponent(data)}`,
  };
}
