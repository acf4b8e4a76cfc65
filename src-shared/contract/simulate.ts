import { Type, type Static } from 'typebox';
import { Nullable } from './common.ts';

/** POST /api/invitations/:id/simulate?type=, /api/codes/:id/simulate?type=: which phone to play. */
export const SimulateQuery = Type.Object({ type: Type.Optional(Type.Union([Type.Literal('android'), Type.Literal('apple')])) });
export type SimulateQuery = Static<typeof SimulateQuery>;

/** A code's simulated person: this address, else one the code allows. */
export const CodeSimulateBody = Type.Optional(
  Type.Union([
    Type.Object({ email: Type.Optional(Type.String({ minLength: 1, maxLength: 254 })) }, { additionalProperties: false }),
    Type.Null(),
  ]),
);
export type CodeSimulateBody = Static<typeof CodeSimulateBody>;

/** What the simulated device reports; a refused enrollment is an outcome (ok: false), not an error. */
export const SimulateResult = Type.Object({
  ok: Type.Boolean(),
  agent_id: Nullable(Type.Integer()),
  serial: Nullable(Type.String()),
  type: Type.String(),
  /**
   * Enrolled with a code that needs an admin's approval: the device waits (the broker refuses it),
   * trying again, and comes online once approved.
   */
  waiting_for_approval: Type.Boolean(),
  /** One line per enrollment step, as the simulator's CLI prints them. */
  log: Type.Array(Type.String()),
  /** The server's refusal or the failure, when ok is false. */
  error: Nullable(Type.String()),
});
export type SimulateResult = Static<typeof SimulateResult>;

/** A code's simulation also says which address the simulated person used. */
export const CodeSimulateResult = Type.Object({ ...SimulateResult.properties, email: Type.String() });
export type CodeSimulateResult = Static<typeof CodeSimulateResult>;
