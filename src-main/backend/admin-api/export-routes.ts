// The exports' routes (issue 25, item 3): each list as a download, its filters in the query, its
// permission declared in the route table, the caller's fleet scope read here (when the request
// arrives) and handed to the export, whose pages are read as the client downloads.
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { exportFileName, type AuditExportQuery, type ExportFormat } from '../../../src-shared/contract/index.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { AuditFilter } from '../audit/repository.ts';
import { ApiError } from '../errors.ts';
import { AUDIT_EXPORT } from '../exports/columns.ts';
import type { ExportService } from '../exports/exports.ts';
import type { ViewService } from '../views/views.ts';
import { EXPORT_CONTENT_TYPES, exportChunks, filterPages, keysetPages } from '../exports/format.ts';
import { currentFleetScope, fleetScopeParam } from '../fleets/scope.ts';
import { adminRoute } from '../http/route-table.ts';
import { auditVisible, type FleetOf } from './event-scope.ts';

/** Sends an export: its media type, a file name saying what and when, never cached; streamed as it is read. */
export function download(reply: FastifyReply, kind: string, format: ExportFormat, chunks: AsyncIterable<string>) {
  return reply
    .header('content-type', EXPORT_CONTENT_TYPES[format])
    .header('content-disposition', `attachment; filename="${exportFileName(kind, format)}"`)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(Readable.from(chunks));
}

export const exportRoutes: FastifyPluginAsyncTypebox<{
  exports: ExportService;
  audit: AuditLog;
  views: Pick<ViewService, 'selection'>;
  fleetOf: FleetOf;
}> = async (app, { exports, audit, views, fleetOf }) => {
  const format = (query: { format?: ExportFormat | undefined }) => query.format ?? 'csv';

  // The list's selection first (a bad expression, an unknown view or fleet: a 400 before any byte).
  adminRoute(app, 'agents.export', async (request, reply) => {
    const { where, view, fleet } = request.query;
    const selection =
      where === undefined && view === undefined && fleet === undefined ? null : await views.selection({ where, view, fleet });
    return download(reply, 'devices', format(request.query), exports.devices(request.query, fleetScopeParam(), selection));
  });
  adminRoute(app, 'invitations.export', async (request, reply) =>
    download(reply, 'invitations', format(request.query), exports.invitations(request.query, fleetScopeParam())),
  );
  adminRoute(app, 'codes.export', async (request, reply) =>
    download(reply, 'codes', format(request.query), exports.codes(request.query, fleetScopeParam())),
  );
  adminRoute(app, 'codes.exportUses', async (request, reply) =>
    download(reply, 'code-uses', format(request.query), exports.codeUses(request.query, fleetScopeParam())),
  );
  adminRoute(app, 'policies.exportResults', async (request, reply) =>
    download(reply, 'results', format(request.query), exports.results(request.query, fleetScopeParam())),
  );
  adminRoute(app, 'jobs.export', async (request, reply) =>
    download(reply, 'jobs', format(request.query), exports.jobs(request.query, fleetScopeParam())),
  );
  adminRoute(app, 'jobs.exportResults', async (request, reply) =>
    download(reply, 'job-results', format(request.query), exports.jobResults(request.query, fleetScopeParam())),
  );

  // The audit trail, newest first, by pages before the last id read; a scoped client's export holds
  // what its list shows: its fleets' objects and what concerns no fleet.
  adminRoute(app, 'audit.export', async (request, reply) => {
    const filter = auditFilter(request.query);
    const scope = currentFleetScope();
    const all = keysetPages(
      (before: number | undefined, size) => audit.list({ ...filter, beforeId: before ?? filter.beforeId, limit: size }),
      (row) => row.id,
    );
    const rows = scope === null ? all : filterPages(all, (entry) => auditVisible(entry, scope, fleetOf));
    return download(reply, 'audit', format(request.query), exportChunks(rows, format(request.query), AUDIT_EXPORT));
  });
};

/** The audit filters of a list or export query, times checked and made UTC. */
export function auditFilter(query: Omit<AuditExportQuery, 'format'>): Omit<AuditFilter, 'limit'> {
  const time = (value: string | undefined, what: string) => {
    if (value === undefined) return undefined;
    const at = new Date(value);
    if (Number.isNaN(at.getTime())) throw new ApiError(400, 'ERROR_BAD_REQUEST', `${what} is not a valid time: ${value}`);
    return at.toISOString();
  };
  return {
    actor: query.actor,
    action: query.action,
    targetKind: query.target_kind,
    targetId: query.target_id,
    targetName: query.target_name,
    since: time(query.since, 'since'),
    until: time(query.until, 'until'),
    beforeId: query.before_id,
  };
}
