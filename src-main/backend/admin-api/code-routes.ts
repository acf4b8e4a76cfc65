import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import type { Services } from '../services.ts';
import { qrRoutes } from './qr-routes.ts';

/** Enrollment codes, and the approval of the devices that used a code needing it. */
export const codeRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'codes' | 'approval' | 'agents'>> = async (
  app,
  { codes, approval, agents },
) => {
  adminRoute(app, 'codes.list', async () => ({ items: await codes.list() }));

  adminRoute(app, 'codes.create', async (request, reply) =>
    reply.code(201).send(await codes.view(await codes.create(request.body))),
  );

  adminRoute(app, 'codes.get', async (request) => {
    const { id } = request.params;
    return { ...(await codes.view(await codes.get(id))), log: await codes.logOf(id) };
  });

  qrRoutes(
    app,
    { png: 'codes.qrPng', svg: 'codes.qrSvg' },
    'enrollment-code',
    async (id) => (await codes.deeplinkOf(await codes.get(id))).url,
  );

  adminRoute(app, 'codes.revoke', async (request) => codes.view(await codes.revoke(request.params.id)));
  adminRoute(app, 'codes.rotate', async (request) => codes.view(await codes.rotate(request.params.id)));

  adminRoute(app, 'agents.approve', async (request) => agents.summary((await approval.approve(request.params.id)).id));
  adminRoute(app, 'agents.reject', async (request) => agents.summary((await approval.reject(request.params.id)).id));
  // Bulk approve from the pending-approval queue: each id approved or listed with why not.
  adminRoute(app, 'agents.approveMany', async (request) => approval.approveMany(request.body.ids));
};
