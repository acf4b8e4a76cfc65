import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { LIFETIME_DAYS, pendingMessage, type InvitationInput } from '../invitations/invitations.ts';
import type { Services } from '../services.ts';
import { qrRoutes } from './qr-routes.ts';

const Id = Type.Object({ id: Type.Integer({ minimum: 1 }) });
const Name = Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()]));
export const InvitationInputSchema = Type.Object(
  {
    email: Type.String({ maxLength: 254 }),
    firstname: Name,
    lastname: Name,
    fleet: Name,
    // No null branch: type coercion would turn an out-of-range 0 into null, i.e. the default.
    days: Type.Optional(Type.Integer({ minimum: LIFETIME_DAYS.min, maximum: LIFETIME_DAYS.max })),
  },
  { additionalProperties: false },
);
/** Email the invitation(s) now; default: the mail_send_on_create setting (true unless changed). */
const SendEmail = Type.Optional(Type.Boolean());
/** Invite an address that already has a pending invitation (a second device); default: refused. */
const Another = Type.Optional(Type.Boolean());
const InvitationCreateSchema = Type.Object({ ...InvitationInputSchema.properties, send_email: SendEmail, another: Another }, { additionalProperties: false });
export const BULK_MAX = 5000;
const Bulk = Type.Object({ invitations: Type.Array(InvitationInputSchema, { minItems: 1, maxItems: BULK_MAX }), send_email: SendEmail, another: Another });
type CreateInput = InvitationInput & { send_email?: boolean; another?: boolean };
type BulkInput = { invitations: InvitationInput[]; send_email?: boolean; another?: boolean };

export const invitationRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  const { invitations, events } = services;
  const view = (id: number) => invitations.view(invitations.get(id));

  app.get(
    '/invitations',
    {
      schema: {
        querystring: Type.Object({
          status: Type.Optional(Type.Union(['pending', 'done', 'expired', 'revoked'].map((s) => Type.Literal(s)))),
          q: Type.Optional(Type.String({ maxLength: 200 })),
          fleet_id: Type.Optional(Type.Integer({ minimum: 1 })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
          offset: Type.Optional(Type.Integer({ minimum: 0 })),
        }),
      },
    },
    async (request) => {
      return invitations.list(request.query as Parameters<typeof invitations.list>[0]);
    },
  );

  app.post('/invitations', { schema: { body: InvitationCreateSchema } }, async (request, reply) => {
    const { send_email, another, ...input } = request.body as CreateInput;
    // Saying so beats a silent second invitation: the answer carries the pending one, to resend.
    const pending = another ? undefined : invitations.pendingFor(input.email);
    if (pending) {
      return reply.code(409).send({
        error: 'ERROR_INVITATION_PENDING',
        message: `${pendingMessage(pending)}. Resend it (POST /api/invitations/${pending.id}/resend), or create another with "another": true.`,
        invitation: invitations.view(pending),
      });
    }
    const { rows } = invitations.create([input], { send: send_email, allowPending: true });
    return reply.code(201).send(invitations.view(rows[0]!));
  });

  // Checks rows without creating anything: the console's preview and the CLI's CSV import.
  app.post('/invitations/validate', { schema: { body: Bulk } }, async (request) => {
    const { invitations: rows, another } = request.body as BulkInput;
    return { errors: invitations.validate(rows, 1, { allowPending: another === true }) };
  });

  app.post('/invitations/bulk', { schema: { body: Bulk } }, async (request, reply) => {
    const { invitations: rows, another, send_email } = request.body as BulkInput;
    const errors = invitations.validate(rows, 1, { allowPending: another === true });
    if (errors.length > 0) {
      return reply.code(400).send({ error: 'ERROR_BAD_REQUEST', message: `${errors.length} row(s) are invalid; nothing was created`, errors });
    }
    // Emails go out in the background; `mail.batch_id` is for GET /api/mail/batches/:batch_id.
    const { rows: created, batch_id, queued } = invitations.create(rows, { send: send_email, batch: true, allowPending: true });
    return reply.code(201).send({ items: invitations.views(created), mail: { batch_id, queued } });
  });

  app.get('/invitations/:id', { schema: { params: Id } }, async (request) => {
    const { id } = request.params as { id: number };
    return { ...view(id), log: invitations.logOf(id), events: events.forInvitation(id) };
  });

  qrRoutes(app, '/invitations', 'invitation', (id) => invitations.deeplinkOf(invitations.get(id)).url);

  app.post('/invitations/:id/revoke', { schema: { params: Id } }, async (request) => {
    const { id } = request.params as { id: number };
    return invitations.view(invitations.revoke(id));
  });

  app.delete('/invitations/:id', { schema: { params: Id } }, async (request, reply) => {
    invitations.remove((request.params as { id: number }).id);
    return reply.code(204).send();
  });
};
