import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../errors.ts';
import { checkTemplates } from '../mail/template.ts';
import type { Services } from '../services.ts';
import { checkLinkFitsQr } from '../deeplink/link-check.ts';
import { fieldsUnfitForFlyve } from '../deeplink/codec.ts';
import { SettingsSchema, type Settings } from '../settings/settings.ts';

const Id = Type.Object({ id: Type.Integer({ minimum: 1 }) });
const FleetName = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false });

export const agentRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  const { agents, events } = services;

  app.get('/agents', async () => ({ items: agents.list() }));

  app.get('/agents/:id', { schema: { params: Id } }, async (request) => {
    const { id } = request.params as { id: number };
    // The inventory and positions the device reported (Flyve agents; the spec's agent on request).
    return { ...agents.summary(id), inventory: services.reports.inventoryOf(id), positions: services.reports.positionsOf(id, 10), events: events.forAgent(id) };
  });

  app.delete('/agents/:id', { schema: { params: Id } }, async (request, reply) => {
    agents.remove((request.params as { id: number }).id);
    return reply.code(204).send();
  });
};

export const fleetRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  const { fleets } = services;
  app.get('/fleets', async () => ({ items: fleets.list() }));
  app.post('/fleets', { schema: { body: FleetName } }, async (request, reply) =>
    reply.code(201).send(fleets.create((request.body as { name: string }).name)),
  );
  app.patch('/fleets/:id', { schema: { params: Id, body: FleetName } }, async (request) =>
    fleets.rename((request.params as { id: number }).id, (request.body as { name: string }).name),
  );
  app.delete('/fleets/:id', { schema: { params: Id } }, async (request, reply) => {
    fleets.remove((request.params as { id: number }).id);
    return reply.code(204).send();
  });
};

export const settingsRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  const { settings, events } = services;
  app.get('/settings', async () => settings.get());
  app.patch(
    '/settings',
    { schema: { body: Type.Partial(SettingsSchema, { additionalProperties: false, minProperties: 1 }) } },
    async (request) => {
      const patch = request.body as Record<string, unknown>;
      // Email templates are checked here too: a broken one must not reach the mail queue.
      const problems = checkTemplates({
        subject: patch.mail_subject_template as string | undefined,
        html: patch.mail_html_template as string | undefined,
        text: patch.mail_text_template as string | undefined,
      });
      const listed = Object.entries(problems).flatMap(([part, errors]) => errors.map((e) => `${part} template, ${e}`));
      if (listed.length > 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', listed.join('; '));
      // The reference encoding cannot carry a ";" (the Flyve agents split on it).
      const next = { ...settings.get(), ...patch } as Settings;
      if (next.agent_app === 'flyve') {
        const unfit = fieldsUnfitForFlyve(settings.deeplinkFields(next));
        if (unfit) throw new ApiError(400, 'ERROR_BAD_REQUEST', unfit);
      }
      // Every invitation's QR code must still be drawable under the new settings.
      checkLinkFitsQr(next, Object.keys(patch), services.links);
      const updated = settings.update(patch);
      events.record('settings.updated', `Settings changed: ${Object.keys(patch).join(', ')}`, {}, { keys: Object.keys(patch) });
      return updated;
    },
  );
};
