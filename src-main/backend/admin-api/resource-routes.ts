import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  AgentDetail,
  AgentList,
  FleetList,
  FleetName,
  FleetRecord,
  IdParams,
  Settings,
  SettingsPatch,
} from '../../../src-shared/contract/index.ts';
import { ApiError } from '../errors.ts';
import { checkTemplates } from '../mail/template.ts';
import type { Services } from '../services.ts';
import { checkLinkFitsQr } from '../deeplink/link-check.ts';
import { fieldsUnfitForFlyve } from '../deeplink/codec.ts';

export const agentRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'agents' | 'events' | 'reports'>> = async (
  app,
  { agents, events, reports },
) => {
  app.get('/agents', { schema: { response: { 200: AgentList } } }, async () => ({ items: agents.list() }));

  app.get('/agents/:id', { schema: { params: IdParams, response: { 200: AgentDetail } } }, async (request) => {
    const { id } = request.params;
    // The inventory and positions the device reported (Flyve agents; the spec's agent on request).
    return {
      ...agents.summary(id),
      inventory: reports.inventoryOf(id),
      positions: reports.positionsOf(id, 10),
      events: events.forAgent(id),
    };
  });

  app.delete('/agents/:id', { schema: { params: IdParams } }, async (request, reply) => {
    agents.remove(request.params.id);
    return reply.code(204).send();
  });
};

export const fleetRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'fleets'>> = async (app, { fleets }) => {
  app.get('/fleets', { schema: { response: { 200: FleetList } } }, async () => ({ items: fleets.list() }));
  app.post('/fleets', { schema: { body: FleetName, response: { 201: FleetRecord } } }, async (request, reply) =>
    reply.code(201).send(fleets.create(request.body.name)),
  );
  app.patch('/fleets/:id', { schema: { params: IdParams, body: FleetName, response: { 200: FleetRecord } } }, async (request) =>
    fleets.rename(request.params.id, request.body.name),
  );
  app.delete('/fleets/:id', { schema: { params: IdParams } }, async (request, reply) => {
    fleets.remove(request.params.id);
    return reply.code(204).send();
  });
};

export const settingsRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'settings' | 'events' | 'links'>> = async (
  app,
  { settings, events, links },
) => {
  app.get('/settings', { schema: { response: { 200: Settings } } }, async () => settings.get());
  app.patch('/settings', { schema: { body: SettingsPatch, response: { 200: Settings } } }, async (request) => {
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
    const updated = settings.update(patch);
    events.record('settings.updated', `Settings changed: ${Object.keys(patch).join(', ')}`, {}, { keys: Object.keys(patch) });
    return updated;
  });
};
