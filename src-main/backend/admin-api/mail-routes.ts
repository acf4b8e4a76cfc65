import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import { MailSendError } from '../mail/index.ts';
import type { Services } from '../services.ts';

/**
 * Invitation emails: resend/retry, progress of bulk sends, the mail settings (SMTP password
 * write-only), template preview and the test email.
 */
export const mailRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'mail' | 'invitations'>> = async (
  app,
  { mail, invitations },
) => {
  // Same token, same expiry; queued again even when it was sent (the person lost it).
  adminRoute(app, 'invitations.resend', async (request, reply) =>
    reply.code(202).send(await invitations.view(await invitations.resend(request.params.id))),
  );

  adminRoute(app, 'mail.status', async () => mail.worker.status());

  // Retries failed deliveries: all, one bulk batch, or the listed invitations.
  adminRoute(app, 'mail.retry', async (request, reply) => {
    const body = request.body ?? {};
    return reply
      .code(202)
      .send({ queued: await mail.queue.retryFailed({ batchId: body.batch_id, invitationIds: body.invitation_ids }) });
  });

  adminRoute(app, 'mail.batch', async (request) => mail.queue.batch(request.params.batch_id));

  adminRoute(app, 'mail.settings', async () => mail.settings.view());

  adminRoute(app, 'mail.saveSettings', async (request) => mail.settings.update(request.body));

  adminRoute(app, 'mail.preview', async (request) => mail.preview.render(request.body));

  // Sends now with the settings in force and shows the server's answer (502 with it on failure).
  adminRoute(app, 'mail.test', async (request, reply) => {
    try {
      return await mail.test.send(request.body.to);
    } catch (error) {
      if (!(error instanceof MailSendError)) throw error;
      return reply.code(502).send({
        ok: false,
        error: error.code,
        message: error.message,
        response: error.response,
        code: error.smtpCode,
        response_code: error.responseCode,
        transport: mail.settings.describeTarget(),
      });
    }
  });
};
