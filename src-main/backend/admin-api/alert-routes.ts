import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import type { Alerts } from '../alerts/index.ts';

/** Alert rules, their incidents, webhooks, their delivery logs and the test event. */
export const alertRoutes: FastifyPluginAsyncTypebox<{ alerts: Alerts }> = async (app, { alerts }) => {
  const { rules, webhooks, engine } = alerts;
  adminRoute(app, 'alerts.rules', async () => ({ items: await rules.list() }));
  adminRoute(app, 'alerts.createRule', async (request, reply) => reply.code(201).send(await rules.create(request.body)));
  adminRoute(app, 'alerts.updateRule', async (request) => rules.update(request.params.id, request.body));
  adminRoute(app, 'alerts.deleteRule', async (request) => rules.delete(request.params.id));
  adminRoute(app, 'alerts.incidents', async (request) => ({ items: await rules.incidents(request.query) }));
  adminRoute(app, 'alerts.evaluate', async () => engine.evaluate());

  adminRoute(app, 'webhooks.list', async () => ({ items: await webhooks.list() }));
  adminRoute(app, 'webhooks.create', async (request, reply) => reply.code(201).send(await webhooks.create(request.body)));
  adminRoute(app, 'webhooks.update', async (request) => webhooks.update(request.params.id, request.body));
  adminRoute(app, 'webhooks.delete', async (request) => webhooks.delete(request.params.id));
  adminRoute(app, 'webhooks.test', async (request, reply) => reply.code(202).send(await webhooks.test(request.params.id)));
  adminRoute(app, 'webhooks.deliveries', async (request) => ({
    items: await webhooks.deliveries(request.params.id, request.query.limit),
  }));
};
