import { SMTP_SECURITY, type MailSettings, type SmtpSecurity } from '../../../src-shared/contract/index.ts';

/**
 * The mail part of the settings (SQLite, readable through GET /api/settings): the contract's
 * MailSettings. Nothing secret lives here: the SMTP password is kept by mail's secret store (mail/secrets.ts).
 */
export { SMTP_SECURITY, type MailSettings, type SmtpSecurity };

export const DEFAULT_MAIL_SETTINGS: MailSettings = {
  smtp_host: '',
  smtp_port: 0,
  smtp_security: 'auto',
  smtp_user: '',
  smtp_reject_unauthorized: true,
  smtp_max_connections: 3,
  mail_from_address: '',
  mail_from_name: 'MDM Console',
  mail_send_on_create: true,
  mail_inviter: '',
  mail_agent_app_url: '',
  mail_subject_template: '',
  mail_html_template: '',
  mail_text_template: '',
};

export const MAIL_SETTING_KEYS = Object.keys(DEFAULT_MAIL_SETTINGS) as (keyof MailSettings)[];
