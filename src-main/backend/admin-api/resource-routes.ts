import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import { ApiError } from '../errors.ts';
import { checkTemplates } from '../mail/template.ts';
import type { Services } from '../services.ts';
import { checkLinkFitsQr } from '../deeplink/link-check.ts';
import { fieldsUnfitForFlyve } from '../deeplink/codec.ts';

export const agentRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'agents' | 'events' | 'reports' | 'views'>> = async (
  app,
  { agents, events, reports, views },
) => {
  // Filtered by the --where language (docs/where.md), a saved view or a fleet: within the admin's fleet scope either way.
  adminRoute(app, 'agents.list', async (request) => {
    const { where, view, fleet } = request.query;
    if (where === undefined && view === undefined && fleet === undefined) return { items: await agents.list() };
    return { items: await views.devices({ where, view, fleet }) };
  });

  adminRoute(app, 'agents.get', async (request) => {
    const { id } = request.params;
    // The inventory and positions the device reported (Flyve agents; the spec's agent on request).
    return {
      ...(await agents.summary(id)),
      inventory: await reports.inventoryOf(id),
      positions: await reports.positionsOf(id, 10),
      events: await events.forAgent(id),
    };
  });

  adminRoute(app, 'agents.remove', async (request, reply) => {
    await agents.remove(request.params.id);
    return reply.code(204).send();
  });
};

export const fleetRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'fleets'>> = async (app, { fleets }) => {
  adminRoute(app, 'fleets.list', async () => ({ items: await fleets.list() }));
  adminRoute(app, 'fleets.create', async (request, reply) => reply.code(201).send(await fleets.create(request.body.name)));
  adminRoute(app, 'fleets.rename', async (request) => fleets.rename(request.params.id, request.body.name));
  adminRoute(app, 'fleets.remove', async (request, reply) => {
    await fleets.remove(request.params.id);
    return reply.code(204).send();
  });
};

export const settingsRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'settings' | 'events' | 'links'>> = async (
  app,
  { settings, events, links },
) => {
  adminRoute(app, 'settings.get', async () => settings.get());
  adminRoute(app, 'settings.update', async (request) => {
    const patch = request.body;
    // Email templates are checked here too: a broken one must not reach the mail queue.
    const problems = checkTemplates({
      subject: patch.mail_subject_template,
      html: patch.mail_html_template,
      text: patch.mail_text_template,
    });
    const listed = Object.entries(problems).flatMap(([part, errors]) => errors.map((e) => `${part} template, ${e}`));
    if (listed.length > 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', listed.join('; '));
    // The reference encoding cannot carry a ";" (the Flyve agents split on it).
    const next = { ...settings.get(), ...patch };
    if (next.agent_app === 'flyve') {
      const unfit = fieldsUnfitForFlyve(settings.deeplinkFields(next));
      if (unfit) throw new ApiError(400, 'ERROR_BAD_REQUEST', unfit);
    }
    // Every invitation's QR code must still be drawable under the new settings.
    checkLinkFitsQr(next, Object.keys(patch), links);
    return settings.update(patch, (change) =>
      events.record('settings.updated', `Settings changed: ${change.keys.join(', ')}`, {}, change),
    );
  });
};
