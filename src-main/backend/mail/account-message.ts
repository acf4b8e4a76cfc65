import type { SendMailOptions } from 'nodemailer';
import type { Settings } from '../settings/settings.ts';
import { formatExpiry } from './message.ts';
import type { MailableAccountInvite } from './ports.ts';
import { escapeHtml } from './template.ts';

const ROLE_WORDS: Record<string, string> = {
  owner: 'an owner (everything, accounts and settings included)',
  admin: 'an admin (everything but accounts)',
  operator: 'an operator (day-to-day helpdesk actions)',
  observer: 'an observer (read only)',
};

/**
 * The email of an admin's invitation: who invites them, with which role, and the set-up link
 * (expiring, one use) to the page where they choose their password. Text and HTML; every value
 * escaped in the HTML, line breaks folded in the subject, as the invitation templates do.
 */
export function composeAccountInviteMail(
  invite: MailableAccountInvite,
  link: string,
  settings: Settings,
  from: string,
): SendMailOptions {
  const inviter = invite.inviter || settings.mail_inviter || settings.helpdesk_name || 'Your IT team';
  const role = ROLE_WORDS[invite.role] ?? invite.role;
  const expires = formatExpiry(invite.expires_at);
  const greeting = invite.display_name && invite.display_name !== invite.email ? invite.display_name : invite.email;
  const subject = `${inviter} invites you to MDM Console`.replace(/[\r\n\t]+/g, ' ');
  const text = `Hello ${greeting},

${inviter} invites you to MDM Console, the device management console, as ${role}.

Choose your password here (this link works once, until ${expires}):

${link}

You then sign in with ${invite.email} and that password.

If you did not expect this invitation, you can ignore this message.
`;
  const e = escapeHtml;
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Your MDM Console account</title></head>
<body style="margin:0;padding:24px;background:#f4f5f7;font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#1f2328;">
<div style="max-width:560px;margin:0 auto;background:#ffffff;border-radius:8px;padding:32px;">
<h1 style="font-size:20px;margin:0 0 16px;">Your MDM Console account</h1>
<p style="margin:0 0 12px;">Hello ${e(greeting)},</p>
<p style="margin:0 0 20px;">${e(inviter)} invites you to MDM Console, the device management console, as ${e(role)}.</p>
<p style="margin:0 0 20px;"><a href="${e(link)}" style="display:inline-block;background:#0b5cff;color:#ffffff;text-decoration:none;padding:12px 20px;border-radius:6px;font-weight:600;">Choose your password</a></p>
<p style="margin:0 0 4px;font-size:13px;color:#57606a;">If the button does not work, open this link:</p>
<p style="margin:0 0 20px;font-size:13px;word-break:break-all;"><a href="${e(link)}" style="color:#0b5cff;">${e(link)}</a></p>
<p style="margin:0 0 20px;">The link works once, until <strong>${e(expires)}</strong>. You then sign in with <strong>${e(invite.email)}</strong> and that password.</p>
<p style="margin:0;font-size:12px;color:#57606a;">If you did not expect this invitation, you can ignore this message.</p>
</div>
</body>
</html>
`;
  return {
    from,
    to: invite.email,
    subject,
    text,
    html,
    headers: { 'X-MDM-Account-Invite-Id': String(invite.id) },
  };
}
