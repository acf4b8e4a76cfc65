import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AgentCommands } from '../broker/commands.ts';
import { adminRoute } from '../http/route-table.ts';
import type { Services } from '../services.ts';

/** Commands to agents over MQTT, and fleet moves (which send Command/Subscribe). */
export const commandRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'agents'> & { commands: AgentCommands }> = async (
  app,
  { agents, commands },
) => {
  adminRoute(app, 'agents.command', async (request, reply) => {
    const { id } = request.params;
    const sent = await commands.send(id, request.body.command);
    return reply.code(202).send({ ...sent, agent: await agents.summary(id) });
  });

  adminRoute(app, 'agents.move', async (request) => {
    const { id } = request.params;
    const sent = await commands.moveToFleet(id, request.body);
    return { ...(await agents.summary(id)), command: sent };
  });
};
