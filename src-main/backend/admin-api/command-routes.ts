import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import type { AgentCommands } from '../broker/commands.ts';
import { AGENT_COMMANDS, type AgentCommand } from '../../../src-shared/contract/rules.ts';
import type { Services } from '../services.ts';

const Id = Type.Object({ id: Type.Integer({ minimum: 1 }) });
const CommandBody = Type.Object(
  { command: Type.Union(AGENT_COMMANDS.map((command) => Type.Literal(command))) },
  { additionalProperties: false },
);
/** Either the fleet's id or its name (within the agent's entity). */
const AgentPatch = Type.Object(
  {
    fleet_id: Type.Optional(Type.Integer({ minimum: 1 })),
    fleet: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
);

/** Commands to agents over MQTT, and fleet moves (which send Command/Subscribe). */
export const commandRoutes: FastifyPluginAsync<{ services: Services; commands: AgentCommands }> = async (app, { services, commands }) => {
  app.post('/agents/:id/commands', { schema: { params: Id, body: CommandBody } }, async (request, reply) => {
    const { id } = request.params as { id: number };
    const { command } = request.body as { command: AgentCommand };
    const sent = await commands.send(id, command);
    return reply.code(202).send({ ...sent, agent: services.agents.summary(id) });
  });

  app.patch('/agents/:id', { schema: { params: Id, body: AgentPatch } }, async (request) => {
    const { id } = request.params as { id: number };
    const sent = await commands.moveToFleet(id, request.body as { fleet_id?: number; fleet?: string });
    return { ...services.agents.summary(id), command: sent };
  });
};
