import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AgentService } from '../agents/agents.ts';
import { InventoryError, positionOf, type DeviceReports } from '../agents/reports.ts';
import { ApiError, badRequest, itemNotFound } from '../errors.ts';
import { INVENTORY_MAX_BYTES } from '../inventory/fusion-inventory.ts';
import type { LiveReports } from '../broker/broker.ts';
import type { SessionContext } from '../sessions/types.ts';
import { IdParams, SessionQuery } from './schemas.ts';

/** Base64 of the largest inventory accepted, and a body that holds it. */
export const INVENTORY_BASE64_MAX = Math.ceil((INVENTORY_MAX_BYTES * 4) / 3) + 4096;
export const INVENTORY_BODY_LIMIT = INVENTORY_BASE64_MAX + 64 * 1024;

export interface ReportRoutesOptions {
  agents: Pick<AgentService, 'row'>;
  reports: Pick<DeviceReports, 'inventory' | 'position'>;
  live: LiveReports;
}

const REPORT_KEYS = ['_pong', 'is_online', '_inventory'] as const;
const ReportBody = Type.Object({
  input: Type.Object(
    {
      _pong: Type.Optional(Type.String({ maxLength: 16 })),
      is_online: Type.Optional(Type.Boolean()),
      _inventory: Type.Optional(Type.String({ maxLength: INVENTORY_BASE64_MAX })),
    },
    // Unknown keys reach the handler, which names them (Ajv would drop them silently).
    { additionalProperties: true },
  ),
});
const Scalar = (maxLength: number) => Type.Optional(Type.Union([Type.String({ maxLength }), Type.Number(), Type.Null()]));
const GeolocationBody = Type.Object({
  input: Type.Object({
    _agents_id: Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 }),
    _datetime: Scalar(32),
    latitude: Scalar(32),
    longitude: Scalar(32),
    _gps: Scalar(8),
    computers_id: Scalar(32),
  }),
});

/**
 * Agent reports over HTTP (the Flyve agents' release rc.7; the spec has none): PUT of its own agent
 * record with `_pong`, `is_online` or `_inventory`, and POST of a position. Only the agent's own
 * account may report for it; each report is recorded exactly as its MQTT counterpart.
 */
export const agentReportRoutes: FastifyPluginAsyncTypebox<ReportRoutesOptions> = async (app, { agents, reports, live }) => {
  const ownAgent = async (session: SessionContext, id: number) => {
    const agent = await agents.row(id);
    if (!agent) throw itemNotFound();
    if (agent.account_user_id !== session.userId) {
      throw new ApiError(
        403,
        'ERROR_RIGHT_MISSING',
        'Only the agent itself may report for this device (open the session with its api_token)',
      );
    }
    return agent;
  };

  app.put(
    '/PluginMdmAgent/:id',
    { bodyLimit: INVENTORY_BODY_LIMIT, schema: { params: IdParams, querystring: SessionQuery, body: ReportBody } },
    async (request) => {
      const agent = await ownAgent(request.session, request.params.id);
      const input = request.body.input;
      const unknown = Object.keys(input).filter((key) => !(REPORT_KEYS as readonly string[]).includes(key));
      if (unknown.length > 0)
        throw badRequest(`Unknown field(s) ${unknown.join(', ')}: an agent may send ${REPORT_KEYS.join(', ')}`);
      const given = REPORT_KEYS.filter((key) => input[key] !== undefined);
      if (given.length === 0) throw badRequest(`Nothing to record: send one of ${REPORT_KEYS.join(', ')}`);
      if (input._pong !== undefined && input._pong !== '!') throw badRequest('_pong must be "!"');
      let xml: string | null = null;
      if (typeof input._inventory === 'string') {
        xml = decodeBase64Xml(input._inventory);
        if (xml === null) throw badRequest('_inventory must be the base64 of the FusionInventory XML');
      }
      try {
        if (xml !== null) await reports.inventory(agent.id, xml, 'http');
      } catch (error) {
        if (error instanceof InventoryError) throw badRequest(`The inventory could not be read: ${error.message}`);
        throw error;
      }
      if (typeof input.is_online === 'boolean') await live.online(agent.id, input.is_online);
      if (input._pong === '!') await live.pong(agent.id);
      return [{ [String(agent.id)]: true, message: '' }];
    },
  );

  app.post('/PluginMdmGeolocation', { schema: { querystring: SessionQuery, body: GeolocationBody } }, async (request, reply) => {
    const input = request.body.input;
    const agent = await ownAgent(request.session, input._agents_id);
    const position = positionOf({
      latitude: input.latitude ?? undefined,
      longitude: input.longitude ?? undefined,
      datetime: input._datetime,
      gps: input._gps,
    });
    if ('error' in position) throw badRequest(`Position refused: ${position.error}`);
    const id = await reports.position(agent.id, position, 'http');
    return reply.code(201).send({ id, message: '' });
  });
};

function decodeBase64Xml(value: string): string | null {
  const compact = value.replace(/\s+/g, '');
  if (compact === '' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact)) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(compact, 'base64'));
  } catch {
    return null;
  }
}
