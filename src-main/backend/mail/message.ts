import type { SendMailOptions } from 'nodemailer';
import { QrTooLongError, qrPng } from '../deeplink/qr.ts';
import type { Settings } from '../settings/settings.ts';
import { DEFAULT_TEMPLATES, escapeHtml, renderMail, type MailTemplates, type TemplateValues } from './template.ts';

/** What the message needs to know of an invitation: recipient, names, expiry, links. */
export interface InvitationForMail {
  id: number;
  email: string;
  firstname: string | null;
  lastname: string | null;
  expires_at: string;
  deeplink: string;
  app_link: string;
}

export const QR_FILENAME = 'enrollment-qr.png';
const QR_WIDTH = 480;

/** The templates in force: each empty setting falls back to the built-in default. */
export function templatesOf(settings: Settings): MailTemplates {
  return {
    subject: settings.mail_subject_template || DEFAULT_TEMPLATES.subject,
    html: settings.mail_html_template || DEFAULT_TEMPLATES.html,
    text: settings.mail_text_template || DEFAULT_TEMPLATES.text,
  };
}

export function formatExpiry(iso: string): string {
  // e.g. "Friday 28 November 2026, 15:51 UTC" in the server's time zone, which is named.
  return new Intl.DateTimeFormat('en-GB', {
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  }).format(new Date(iso));
}

export function templateValues(
  invitation: InvitationForMail,
  settings: Settings,
  qrSrc: string,
  now = Date.now(),
): TemplateValues {
  const fullName = [invitation.firstname, invitation.lastname].filter(Boolean).join(' ');
  const helpdesk = [settings.helpdesk_name, settings.helpdesk_phone, settings.helpdesk_email, settings.helpdesk_website];
  return {
    name: fullName || invitation.email,
    firstname: invitation.firstname ?? '',
    lastname: invitation.lastname ?? '',
    email: invitation.email,
    inviter: settings.mail_inviter || settings.helpdesk_name || 'Your IT team',
    deeplink: invitation.deeplink,
    app_link: invitation.app_link,
    qr_src: qrSrc,
    expires: formatExpiry(invitation.expires_at),
    expires_iso: invitation.expires_at,
    days_left: String(Math.max(0, Math.ceil((Date.parse(invitation.expires_at) - now) / 86_400_000))),
    agent_app_url: settings.mail_agent_app_url,
    helpdesk_name: settings.helpdesk_name,
    helpdesk_phone: settings.helpdesk_phone,
    helpdesk_email: settings.helpdesk_email,
    helpdesk_website: settings.helpdesk_website,
    helpdesk: helpdesk.some(Boolean) ? 'yes' : '',
  };
}

/**
 * The invitation email: HTML and text, the QR code inline (cid) for the HTML and also attached as
 * a PNG file, so that it shows in every client and can be saved. Throws TemplateError when a
 * stored template is broken.
 */
export async function composeInvitationMail(
  invitation: InvitationForMail,
  settings: Settings,
  from: string,
  templates = templatesOf(settings),
): Promise<SendMailOptions> {
  const cid = `qr-${invitation.id}@mdm-console`;
  const png = await qrPngOrNone(invitation.deeplink);
  // Without a QR code, the template's image of it goes too, rather than showing as broken.
  const used = png ? templates : { ...templates, html: templates.html.replace(/<img\b[^>]*\{\{\s*qr_src\s*\}\}[^>]*>/gi, '') };
  const rendered = renderMail(used, templateValues(invitation, settings, png ? `cid:${cid}` : ''));
  return {
    from,
    to: invitation.email,
    subject: rendered.subject,
    text: rendered.text,
    html: rendered.html,
    headers: { 'X-MDM-Invitation-Id': String(invitation.id) },
    attachments: png
      ? [
          { filename: QR_FILENAME, content: png, contentType: 'image/png', cid, contentDisposition: 'inline' },
          { filename: QR_FILENAME, content: png, contentType: 'image/png', contentDisposition: 'attachment' },
        ]
      : [],
  };
}

/**
 * The QR code, or null when the link is too long for one (settings saved before they were
 * checked): the email then carries the link alone rather than failing.
 */
export async function qrPngOrNone(deeplink: string, width = QR_WIDTH): Promise<Buffer | null> {
  try {
    return await qrPng(deeplink, width);
  } catch (error) {
    if (error instanceof QrTooLongError) return null;
    throw error;
  }
}

export function testMail(from: string, to: string, target: string): SendMailOptions {
  const text = `This is a test message from MDM Console.\n\nIt was sent through ${target}. If you can read it, invitation emails will reach their recipients the same way.\n`;
  return {
    from,
    to,
    subject: 'MDM Console test email',
    text,
    html: `<p>This is a test message from MDM Console.</p><p>It was sent through ${escapeHtml(target)}. If you can read it, invitation emails will reach their recipients the same way.</p>`,
  };
}
