import { requestContext } from '../audit/context.ts';

/**
 * The fleets a piece of work may see and act on: null, every fleet (owners, admins, unscoped
 * operators and observers, and all work outside an admin request: agents, the broker, timers);
 * a list, those fleets only (possibly none). An admin request carries its actor's scope in its
 * request context (admin-api/app.ts); services read it here and pass it into their queries, so a
 * scoped operator's lists, counts and lookups by id see their fleets' rows only. What lies outside
 * answers as if it did not exist (404), so ids cannot be probed.
 */
export type FleetScope = readonly number[] | null;

/** The scope of the admin request being served, or null (no request, or an unscoped actor). */
export function currentFleetScope(): FleetScope {
  return requestContext.current()?.fleets ?? null;
}

/** Whether `fleetId` is within `scope` (the current request's by default). */
export function inFleetScope(fleetId: number | null | undefined, scope: FleetScope = currentFleetScope()): boolean {
  return scope === null || (fleetId != null && scope.includes(fleetId));
}

/**
 * The scope as one SQL parameter: null for every fleet, else a JSON array, so one prepared
 * statement serves both: `(@fleets IS NULL OR x.fleet_id IN (SELECT value FROM json_each(@fleets)))`.
 */
export function fleetScopeParam(scope: FleetScope = currentFleetScope()): string | null {
  return scope === null ? null : JSON.stringify(scope);
}
