import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import type { Services } from '../services.ts';

/** Saved device views (dynamic groups): list with live counts, save, change, delete. */
export const viewRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'views'>> = async (app, { views }) => {
  adminRoute(app, 'views.list', async () => ({ items: views.list() }));
  adminRoute(app, 'views.get', async (request) => views.get(request.params.id));
  adminRoute(app, 'views.create', async (request, reply) => reply.code(201).send(views.create(request.body)));
  adminRoute(app, 'views.update', async (request) => views.update(request.params.id, request.body));
  adminRoute(app, 'views.remove', async (request, reply) => {
    views.remove(request.params.id);
    return reply.code(204).send();
  });
};
