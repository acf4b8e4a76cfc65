import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AgentMoved, AgentPatch, CommandBody, CommandSent, IdParams } from '../../../src-shared/contract/index.ts';
import type { AgentCommands } from '../broker/commands.ts';
import type { Services } from '../services.ts';

/** Commands to agents over MQTT, and fleet moves (which send Command/Subscribe). */
export const commandRoutes: FastifyPluginAsyncTypebox<Pick<Services, 'agents'> & { commands: AgentCommands }> = async (
  app,
  { agents, commands },
) => {
  app.post(
    '/agents/:id/commands',
    { schema: { params: IdParams, body: CommandBody, response: { 202: CommandSent } } },
    async (request, reply) => {
      const { id } = request.params;
      const sent = await commands.send(id, request.body.command);
      return reply.code(202).send({ ...sent, agent: agents.summary(id) });
    },
  );

  app.patch('/agents/:id', { schema: { params: IdParams, body: AgentPatch, response: { 200: AgentMoved } } }, async (request) => {
    const { id } = request.params;
    const sent = await commands.moveToFleet(id, request.body);
    return { ...agents.summary(id), command: sent };
  });
};
