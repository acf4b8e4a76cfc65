import type { RecordedEvent } from '../events/event-log.ts';
import type { FleetScope } from '../fleets/scope.ts';
import { isServerEvent } from '../../../src-shared/contract/event-stream.ts';

/** The fleet each kind of object is in now, whatever the request's scope (undefined once it is gone). */
export interface FleetOf {
  agent(id: number): Promise<number | undefined>;
  invitation(id: number): Promise<number | undefined>;
  code(id: number): Promise<number | undefined>;
}

const idIn = (data: Record<string, unknown> | null, key: string): number | null => {
  const value = data?.[key];
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : null;
};

/**
 * The fleets an event is about: its device's (and, for a move, the fleet it left), its
 * invitation's, its code's, or the fleet its data names; null when it is about no fleet (a
 * setting, a sign-in, the mail queue). A device or invitation already deleted is placed by the
 * `fleet_id` its deletion recorded; one that cannot be placed is about no fleet a scope holds ([]).
 */
export async function fleetsOfEvent(event: RecordedEvent, fleetOf: FleetOf): Promise<number[] | null> {
  const named = idIn(event.data, 'fleet_id');
  const placed = (found: number | undefined) => [found ?? named].filter((id): id is number => id !== null);
  if (event.agent_id !== null) {
    const from = idIn(event.data, 'from_fleet_id');
    return [...placed(await fleetOf.agent(event.agent_id)), ...(from === null ? [] : [from])];
  }
  if (event.invitation_id !== null) return placed(await fleetOf.invitation(event.invitation_id));
  const code = idIn(event.data, 'code_id');
  if (code !== null) return placed(await fleetOf.code(code));
  // A bulk job names the fleets of its devices.
  if (isServerEvent(event, 'job.started') || isServerEvent(event, 'job.progress') || isServerEvent(event, 'job.finished'))
    return event.data?.fleet_ids ?? [];
  return named === null ? null : [named];
}

/**
 * Whether a client of this fleet scope is told of the event (the live stream, its replay and the
 * event history): everything for an unscoped one; for a scoped one, what concerns one of its
 * fleets or no fleet at all, never another fleet's device, invitation, code or deployment.
 */
export async function eventVisible(event: RecordedEvent, scope: FleetScope, fleetOf: FleetOf): Promise<boolean> {
  if (scope === null) return true;
  const fleets = await fleetsOfEvent(event, fleetOf);
  return fleets === null || fleets.some((id) => scope.includes(id));
}

/** Kinds of audit target that belong to a fleet, and how each is placed. */
const PLACED_KINDS: Record<string, (fleetOf: FleetOf, id: number) => Promise<number | undefined>> = {
  agent: (fleetOf, id) => fleetOf.agent(id),
  invitation: (fleetOf, id) => fleetOf.invitation(id),
  code: (fleetOf, id) => fleetOf.code(id),
  fleet: (_fleetOf, id) => Promise.resolve(id),
};
/** Assignments (a fleet's or a device's) and bulk jobs are not placed here: a scoped client does not see their entries. */
const UNPLACED_KINDS = new Set(['deployment', 'policy', 'assignment', 'task', 'job']);

/**
 * Whether a client of this fleet scope sees an audit entry: one about a device, invitation, code
 * or fleet of its fleets, or about no fleet (sign-ins, settings, tokens); never one about another
 * fleet's object, nor one whose object can no longer be placed (deleted), nor an assignment's.
 */
export async function auditVisible(
  entry: { target_kind: string | null; target_id: number | null },
  scope: FleetScope,
  fleetOf: FleetOf,
): Promise<boolean> {
  if (scope === null || entry.target_kind === null) return true;
  if (UNPLACED_KINDS.has(entry.target_kind)) return false;
  const place = PLACED_KINDS[entry.target_kind];
  if (!place) return true;
  if (entry.target_id === null) return false;
  const fleet = await place(fleetOf, entry.target_id);
  return fleet !== undefined && scope.includes(fleet);
}

/** `fleetOf` remembering each answer for as long as it is kept: one lookup per object in a list of many events. */
export function rememberingFleetOf(fleetOf: FleetOf): FleetOf {
  const seen = { agent: new Map(), invitation: new Map(), code: new Map() } as Record<
    keyof FleetOf,
    Map<number, Promise<number | undefined>>
  >;
  const remember = (kind: keyof FleetOf) => async (id: number) => {
    const map = seen[kind];
    if (!map.has(id)) map.set(id, fleetOf[kind](id));
    return map.get(id)!;
  };
  return { agent: remember('agent'), invitation: remember('invitation'), code: remember('code') };
}
