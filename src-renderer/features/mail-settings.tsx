/** Invitation email settings: SMTP, sender, templates with preview, test email. */
export function MailSettingsSection() {
  return null;
}
