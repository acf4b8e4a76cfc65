import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { itemNotFound } from '../errors.ts';
import type { FileStore } from '../files/store.ts';
import { adminRoute } from '../http/route-table.ts';
import type { JobService } from '../jobs/jobs.ts';

/** Bulk jobs (admin API): one request acts on many devices; their history and per-device results. */
export const jobRoutes: FastifyPluginAsyncTypebox<{ jobs: JobService; files: FileStore }> = async (app, { jobs, files }) => {
  adminRoute(app, 'jobs.create', async (request, reply) => {
    const body = request.body;
    // What to deploy must exist: one 404 now rather than one refusal per device.
    if (
      body.action === 'deploy' &&
      body.kind !== undefined &&
      body.item_id !== undefined &&
      !(await files.get(body.kind, body.item_id))
    )
      throw itemNotFound(`${body.kind === 'file' ? 'File' : 'Package'} #${body.item_id} not found`);
    return reply.code(202).send(await jobs.create(body));
  });

  adminRoute(app, 'jobs.list', async (request) => ({ items: await jobs.list(request.query.limit) }));

  adminRoute(app, 'jobs.get', async (request) => jobs.get(request.params.id, request.query.status));
};
