import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import type { Services } from '../services.ts';
import type { PolicyService } from '../policies/service.ts';

/** Saved device views (dynamic groups): list with live counts, save, change, delete; policies and deployments assigned to them. */
export const viewRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'views'> & { policies: PolicyService | undefined }> = async (
  app,
  { views, policies },
) => {
  adminRoute(app, 'views.list', async () => ({ items: await views.list() }));
  adminRoute(app, 'views.get', async (request) => views.get(request.params.id));
  adminRoute(app, 'views.create', async (request, reply) => reply.code(201).send(await views.create(request.body)));
  adminRoute(app, 'views.update', async (request) => views.update(request.params.id, request.body));
  adminRoute(app, 'views.remove', async (request, reply) => {
    await views.remove(request.params.id);
    return reply.code(204).send();
  });
  if (!policies) return;
  // Policies and deployments assigned to a view (policies/view-targets.ts).
  adminRoute(app, 'views.assignments', async (request) => ({ items: await policies.viewAssignments(request.params.id) }));
  adminRoute(app, 'views.assign', async (request, reply) => {
    const { policy, value, destination, remove_on_delete } = request.body;
    return reply
      .code(201)
      .send(await policies.assignToView(request.params.id, { policy, value, destination, removeOnDelete: remove_on_delete }));
  });
  adminRoute(app, 'views.unassign', async (request) => policies.unassignView(request.params.id));
};
