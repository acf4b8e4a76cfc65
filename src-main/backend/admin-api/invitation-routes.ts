import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import { pendingMessage } from '../invitations/invitations.ts';
import type { Services } from '../services.ts';
import { qrRoutes } from './qr-routes.ts';

export const invitationRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'invitations' | 'events'>> = async (
  app,
  { invitations, events },
) => {
  const view = async (id: number) => invitations.view(await invitations.get(id));

  adminRoute(app, 'invitations.list', async (request) => invitations.list(request.query));

  adminRoute(app, 'invitations.create', async (request, reply) => {
    const { send_email, another, ...input } = request.body;
    // Saying so beats a silent second invitation: the answer carries the pending one, to resend.
    const pending = another ? undefined : await invitations.pendingFor(input.email);
    if (pending) {
      return reply.code(409).send({
        error: 'ERROR_INVITATION_PENDING',
        message: `${pendingMessage(pending)}. Resend it (POST /api/invitations/${pending.id}/resend), or create another with "another": true.`,
        invitation: await invitations.view(pending),
      });
    }
    const { rows } = await invitations.create([input], { send: send_email, allowPending: true });
    return reply.code(201).send(await invitations.view(rows[0]!));
  });

  // Checks rows without creating anything: the console's preview and the CLI's CSV import.
  adminRoute(app, 'invitations.validate', async (request) => {
    const { invitations: rows, another } = request.body;
    return { errors: await invitations.validate(rows, 1, { allowPending: another === true }) };
  });

  adminRoute(app, 'invitations.createMany', async (request, reply) => {
    const { invitations: rows, another, send_email } = request.body;
    const errors = await invitations.validate(rows, 1, { allowPending: another === true });
    if (errors.length > 0) {
      return reply
        .code(400)
        .send({ error: 'ERROR_BAD_REQUEST', message: `${errors.length} row(s) are invalid; nothing was created`, errors });
    }
    // Emails go out in the background; `mail.batch_id` is for GET /api/mail/batches/:batch_id.
    const {
      rows: created,
      batch_id,
      queued,
    } = await invitations.create(rows, { send: send_email, batch: true, allowPending: true });
    return reply.code(201).send({ items: await invitations.views(created), mail: { batch_id, queued } });
  });

  adminRoute(app, 'invitations.get', async (request) => {
    const { id } = request.params;
    return { ...(await view(id)), log: await invitations.logOf(id), events: await events.forInvitation(id) };
  });

  qrRoutes(
    app,
    { png: 'invitations.qrPng', svg: 'invitations.qrSvg' },
    'invitation',
    async (id) => (await invitations.deeplinkOf(await invitations.get(id))).url,
  );

  adminRoute(app, 'invitations.revoke', async (request) => invitations.view(await invitations.revoke(request.params.id)));

  adminRoute(app, 'invitations.remove', async (request, reply) => {
    await invitations.remove(request.params.id);
    return reply.code(204).send();
  });
};
