import { Type, type Static } from 'typebox';
import { Items } from './common.ts';

/** A fleet as created or renamed. */
export const FleetRecord = Type.Object({
  id: Type.Integer(),
  entity_id: Type.Integer(),
  name: Type.String(),
  /** 1 for the entity's default fleet (new devices land there), else 0. */
  is_default: Type.Integer(),
  created_at: Type.String(),
});
export type FleetRecord = Static<typeof FleetRecord>;

/** A fleet in the list, with its number of devices. */
export const Fleet = Type.Object({ ...FleetRecord.properties, agent_count: Type.Integer() });
export type Fleet = Static<typeof Fleet>;
export const FleetList = Items(Fleet);

/** POST /api/fleets, PATCH /api/fleets/:id. */
export const FleetName = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false });
export type FleetName = Static<typeof FleetName>;
