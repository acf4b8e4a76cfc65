import { Type, type Static } from 'typebox';
import { AnyObject, Literals } from './common.ts';
import { AGENT_COMMANDS } from './rules.ts';

/** What an admin can send an agent over MQTT (POST /api/agents/:id/commands): rules.ts AGENT_COMMANDS. */
export const CommandBody = Type.Object({ command: Literals(AGENT_COMMANDS) }, { additionalProperties: false });
export type CommandBody = Static<typeof CommandBody>;

/** What was published, and whether the agent was connected to receive it. */
export const CommandResult = Type.Object({
  agent_id: Type.Integer(),
  command: Literals([...AGENT_COMMANDS, 'subscribe']),
  topic: Type.String(),
  payload: AnyObject,
  retained: Type.Boolean(),
  /** Whether the agent had an open connection when it was sent (retained ones wait for it). */
  online: Type.Boolean(),
  event_id: Type.Integer(),
});
export type CommandResult = Static<typeof CommandResult>;

/** PATCH /api/agents/:id: a move to another fleet, by the fleet's id or its name (within the agent's entity). */
export const AgentPatch = Type.Object(
  {
    fleet_id: Type.Optional(Type.Integer({ minimum: 1 })),
    fleet: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
);
export type AgentPatch = Static<typeof AgentPatch>;
