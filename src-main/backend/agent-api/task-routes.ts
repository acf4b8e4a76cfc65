import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { PolicyService } from '../policies/service.ts';
import type { TaskRow } from '../policies/repository.ts';
import { ApiError, badRequest } from '../errors.ts';
import { IdParams } from './schemas.ts';

export interface TaskRoutesOptions {
  deployments: Pick<PolicyService, 'agentOfAccount' | 'searchStatuses' | 'reportByStatusId'>;
}

// Criteria arrive as GLPI's bracketed keys (criteria[0][field]=5 …), read from the raw URL below.
const SearchQuery = Type.Object(
  { session_token: Type.Optional(Type.String({ maxLength: 256 })) },
  { additionalProperties: true },
);
const StatusBody = Type.Object({
  input: Type.Object(
    {
      status: Type.String({ maxLength: 32 }),
      reason: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
    },
    { additionalProperties: true },
  ),
});

/** GLPI search option ids of a task status row (glpi-plugin taskstatus rawSearchOptions). */
const FIELD = { id: '2', agent: '5', task: '6', status: '7' } as const;
const MAX_CRITERIA = 8;

/**
 * The reference agent's task-status REST calls: `GET search/PluginMdmTaskstatus?criteria[0][field]=5
 * &criteria[0][value]=<agent id>&criteria[1][field]=6&criteria[1][value]=<task id>&forcedisplay=2`
 * finds its status row, `PUT PluginMdmTaskstatus/<id>` `{"input":{"status": …}}` sets it. Only the
 * device's own account may do either, and it only ever sees its own rows.
 */
export const taskStatusRoutes: FastifyPluginAsyncTypebox<TaskRoutesOptions> = async (app, { deployments }) => {
  const ownDevice = async (request: FastifyRequest) => {
    const agent = await deployments.agentOfAccount(request.session.userId);
    if (!agent)
      throw new ApiError(
        403,
        'ERROR_RIGHT_MISSING',
        'Only a device may read or report task statuses (open the session with its api_token)',
      );
    return agent;
  };

  // The reference agent asks `search/PluginFlyvemdmTaskstatus/?criteria…`, slash included.
  app.get('/search/PluginMdmTaskstatus/', { schema: { querystring: SearchQuery } }, async (request) => search(request));
  app.get('/search/PluginMdmTaskstatus', { schema: { querystring: SearchQuery } }, async (request) => search(request));

  const search = async (request: FastifyRequest) => {
    const agent = await ownDevice(request);
    const criteria = searchCriteria(request.url);
    let rows = await deployments.searchStatuses(agent.id, {
      agentId: criteria.get(FIELD.agent),
      taskId: criteria.get(FIELD.task),
    });
    const id = criteria.get(FIELD.id);
    if (id !== undefined) rows = rows.filter((row) => row.id === id);
    const data = rows.map(searchRow);
    return {
      totalcount: data.length,
      count: data.length,
      sort: 1,
      order: 'ASC',
      ...(data.length > 0 ? { data, 'content-range': `0-${data.length - 1}/${data.length}` } : { data: [] }),
    };
  };

  app.get('/PluginMdmTaskstatus/:id', { schema: { params: IdParams } }, async (request) => {
    const agent = await ownDevice(request);
    const rows = (await deployments.searchStatuses(agent.id, {})).filter((row) => row.id === request.params.id);
    if (rows.length === 0) throw new ApiError(404, 'ERROR_ITEM_NOT_FOUND', 'Item not found');
    return itemView(rows[0]!);
  });

  app.put('/PluginMdmTaskstatus/:id', { schema: { params: IdParams, body: StatusBody } }, async (request) => {
    const agent = await ownDevice(request);
    const { id } = request.params;
    const { input } = request.body;
    await deployments.reportByStatusId(agent.id, id, input);
    return [{ [String(id)]: true, message: '' }];
  });
};

/** `criteria[i][field]` → the number in `criteria[i][value]`; only equality on ids makes sense here. */
export function searchCriteria(url: string): Map<string, number> {
  const query = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  const byIndex = new Map<string, { field?: string; value?: string }>();
  for (const [key, value] of query) {
    const match = /^criteria\[(\d{1,3})\]\[(field|value|searchtype|link)\]$/.exec(key);
    if (!match) continue;
    let entry = byIndex.get(match[1]!);
    if (!entry) byIndex.set(match[1]!, (entry = {}));
    if (match[2] === 'field') entry.field = value;
    if (match[2] === 'value') entry.value = value;
  }
  if (byIndex.size > MAX_CRITERIA) throw badRequest(`At most ${MAX_CRITERIA} criteria`);
  const criteria = new Map<string, number>();
  for (const { field, value } of byIndex.values()) {
    if (field === undefined || value === undefined) throw badRequest('Each criterion needs a field and a value');
    if (field === FIELD.status) continue; // a status filter narrows nothing a device needs
    if (field !== FIELD.id && field !== FIELD.agent && field !== FIELD.task)
      throw badRequest(
        `Unknown search field ${JSON.stringify(field.slice(0, 20))}: use 2 (id), 5 (agent), 6 (task) or 7 (status)`,
      );
    const number = Number(value.trim());
    if (!Number.isSafeInteger(number) || number < 1)
      throw badRequest(`Criterion ${field} needs a numeric id, got ${JSON.stringify(value.slice(0, 40))}`);
    criteria.set(field, number);
  }
  return criteria;
}

function searchRow(row: TaskRow): Record<string, unknown> {
  return { [FIELD.id]: row.id, [FIELD.agent]: row.agent_id, [FIELD.task]: row.deployment_id, [FIELD.status]: row.status };
}

function itemView(row: TaskRow): Record<string, unknown> {
  return {
    id: row.id,
    plugin_mdm_agents_id: row.agent_id,
    plugin_mdm_tasks_id: row.deployment_id,
    status: row.status,
    reason: row.reason,
    date_creation: row.created_at,
    date_mod: row.updated_at,
  };
}
