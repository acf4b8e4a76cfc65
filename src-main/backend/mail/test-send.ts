import nodemailer, { type NodemailerError, type Transporter } from 'nodemailer';
import type { EventLog } from '../events/event-log.ts';
import { ApiError } from '../errors.ts';
import { testMail } from './message.ts';
import type { Outbox } from './outbox.ts';
import { describeSendError, MailSendError } from './send-error.ts';
import type { MailSettingsService } from './settings-service.ts';
import { transportOptions, type MailTarget } from './smtp-config.ts';
import type { MailTestResult } from '../../../src-shared/contract/index.ts';

/** The admin's test email: sent now, over a connection of its own, so the server's answer shows. */
export class TestMailSender {
  private readonly mailSettings: MailSettingsService;
  private readonly outbox: Outbox;
  private readonly events: EventLog;

  constructor(deps: { mailSettings: MailSettingsService; outbox: Outbox; events: EventLog }) {
    this.mailSettings = deps.mailSettings;
    this.outbox = deps.outbox;
    this.events = deps.events;
  }

  /** Sends with the settings in force; returns the server's answer. Without SMTP, writes to the outbox. */
  async send(to: string): Promise<MailTestResult> {
    let target: MailTarget;
    try {
      target = this.mailSettings.target();
    } catch (error) {
      throw new ApiError(400, 'ERROR_BAD_REQUEST', (error as Error).message);
    }
    const described = this.mailSettings.describeTarget(target);
    if (target.kind === 'outbox') {
      const { file, messageId } = await this.outbox.write(testMail(target.from, to, 'the outbox folder'), `test-${to}`);
      await this.events.record('mail.test', `Test email to ${to} written to the outbox (no SMTP configured)`, {}, { to, file });
      return { ok: true, via: 'outbox' as const, to, file, message_id: messageId, response: null, transport: described };
    }
    const mailer = nodemailer.createTransport(transportOptions(target.smtp, null) as never) as Transporter;
    mailer.on('error', () => {});
    try {
      const info = (await mailer.sendMail(testMail(target.from, to, described.summary))) as {
        response?: string;
        messageId?: string;
        accepted?: unknown[];
        rejected?: unknown[];
      };
      await this.events.record(
        'mail.test',
        `Test email sent to ${to}: ${info.response ?? ''}`,
        {},
        { to, response: info.response ?? null },
      );
      return {
        ok: true,
        via: 'smtp' as const,
        to,
        response: info.response ?? null,
        message_id: info.messageId ?? null,
        accepted: info.accepted ?? [],
        rejected: info.rejected ?? [],
        transport: described,
      };
    } catch (error) {
      const { message, response } = describeSendError(error);
      await this.events.record('mail.test', `Test email to ${to} failed: ${message}`, {}, { to, error: message, response });
      throw new MailSendError(
        message,
        response,
        (error as NodemailerError).code ?? null,
        (error as NodemailerError).responseCode ?? null,
      );
    } finally {
      mailer.close();
    }
  }
}
