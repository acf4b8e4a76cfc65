import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  IdParams,
  Invitation,
  MailBatch,
  MailBatchParams,
  MailPreview,
  MailPreviewBody,
  MailRetryBody,
  MailRetryResult,
  MailSettingsPut,
  MailSettingsView,
  MailStatus,
  MailTestBody,
  MailTestFailure,
  MailTestResult,
} from '../../../src-shared/contract/index.ts';
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
  app.post('/invitations/:id/resend', { schema: { params: IdParams, response: { 202: Invitation } } }, async (request, reply) =>
    reply.code(202).send(invitations.view(invitations.resend(request.params.id))),
  );

  app.get('/mail/status', { schema: { response: { 200: MailStatus } } }, async () => mail.worker.status());

  // Retries failed deliveries: all, one bulk batch, or the listed invitations.
  app.post('/mail/retry', { schema: { body: MailRetryBody, response: { 202: MailRetryResult } } }, async (request, reply) => {
    const body = request.body ?? {};
    return reply
      .code(202)
      .send({ queued: mail.queue.retryFailed({ batchId: body.batch_id, invitationIds: body.invitation_ids }) });
  });

  app.get('/mail/batches/:batch_id', { schema: { params: MailBatchParams, response: { 200: MailBatch } } }, async (request) =>
    mail.queue.batch(request.params.batch_id),
  );

  app.get('/mail/settings', { schema: { response: { 200: MailSettingsView } } }, async () => mail.settings.view());

  app.put('/mail/settings', { schema: { body: MailSettingsPut, response: { 200: MailSettingsView } } }, async (request) =>
    mail.settings.update(request.body),
  );

  app.post('/mail/preview', { schema: { body: MailPreviewBody, response: { 200: MailPreview } } }, async (request) =>
    mail.preview.render(request.body),
  );

  // Sends now with the settings in force and shows the server's answer (502 with it on failure).
  app.post(
    '/mail/test',
    { schema: { body: MailTestBody, response: { 200: MailTestResult, 502: MailTestFailure } } },
    async (request, reply) => {
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
    },
  );
};
