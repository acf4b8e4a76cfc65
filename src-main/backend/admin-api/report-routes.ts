import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminRoute } from '../http/route-table.ts';
import type { Services } from '../services.ts';

/** Reports (admin API): the daily figures over a range of days, for one fleet or every fleet the caller sees. */
export const reportRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'figures'>> = async (app, { figures }) => {
  adminRoute(app, 'reports.get', async (request) =>
    figures.report(request.params.report, request.query.days ?? 30, request.query.fleet_id),
  );
};
