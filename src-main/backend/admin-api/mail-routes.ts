import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { MailSendError, MailSettingsSchema, type MailSettingsPatch } from '../mail/index.ts';
import type { Services } from '../services.ts';

const Id = Type.Object({ id: Type.Integer({ minimum: 1 }) });
const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@<>",;]+@[^\\s@<>",;]+$' });

const MailSettingsPut = Type.Object(
  {
    ...Type.Partial(MailSettingsSchema).properties,
    /** Sets the SMTP password (kept in the secret store, never returned); null removes it. */
    smtp_password: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
    /** smtp(s)://user:pass@host:port — fills the SMTP fields (and the password) at once; "" = no SMTP. */
    smtp_url: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);

const Preview = Type.Object(
  {
    subject: Type.Optional(Type.String({ maxLength: 500 })),
    html: Type.Optional(Type.String({ maxLength: 100_000 })),
    text: Type.Optional(Type.String({ maxLength: 50_000 })),
    /** Renders for this invitation; without it, for a sample one. */
    invitation_id: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

/**
 * Invitation emails: resend/retry, progress of bulk sends, the mail settings (SMTP password
 * write-only), template preview and the test email.
 */
export const mailRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  const { mail, invitations } = services;

  // Same token, same expiry; queued again even when it was sent (the person lost it).
  app.post('/invitations/:id/resend', { schema: { params: Id } }, async (request, reply) => {
    const { id } = request.params as { id: number };
    return reply.code(202).send(invitations.view(invitations.resend(id)));
  });

  app.get('/mail/status', async () => mail.worker.status());

  // Retries failed deliveries: all, one bulk batch, or the listed invitations.
  app.post(
    '/mail/retry',
    {
      schema: {
        body: Type.Optional(
          Type.Object(
            {
              batch_id: Type.Optional(Type.String({ maxLength: 64 })),
              invitation_ids: Type.Optional(Type.Array(Type.Integer({ minimum: 1 }), { maxItems: 10000 })),
            },
            { additionalProperties: false },
          ),
        ),
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as { batch_id?: string; invitation_ids?: number[] };
      return reply.code(202).send({ queued: mail.queue.retryFailed({ batchId: body.batch_id, invitationIds: body.invitation_ids }) });
    },
  );

  app.get('/mail/batches/:batch_id', { schema: { params: Type.Object({ batch_id: Type.String({ maxLength: 64 }) }) } }, async (request) =>
    mail.queue.batch((request.params as { batch_id: string }).batch_id),
  );

  app.get('/mail/settings', async () => mail.settings.view());

  app.put('/mail/settings', { schema: { body: MailSettingsPut } }, async (request) => mail.settings.update(request.body as MailSettingsPatch));

  app.post('/mail/preview', { schema: { body: Preview } }, async (request) => mail.preview.render(request.body as Parameters<typeof mail.preview.render>[0]));

  // Sends now with the settings in force and shows the server's answer (502 with it on failure).
  app.post('/mail/test', { schema: { body: Type.Object({ to: Email }, { additionalProperties: false }) } }, async (request, reply) => {
    try {
      return await mail.test.send((request.body as { to: string }).to);
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
