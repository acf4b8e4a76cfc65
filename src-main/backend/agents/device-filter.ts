import { ApiError } from '../errors.ts';
import { currentFleetScope, fleetScopeParam, type FleetScope } from '../fleets/scope.ts';
import { parseWhere, WhereError, type WhereNode } from '../../../src-shared/contract/where.ts';
import type { AgentSummary } from '../../../src-shared/contract/index.ts';
import { compileWhere, type DeviceQueryRepository } from './device-query-repository.ts';

/**
 * The devices an expression of the --where language selects (src-shared/contract/where.ts), always
 * within a fleet scope (the admin request's by default): a device of another fleet never matches.
 * A mistake in the expression is a 400 naming where it is and what was expected.
 */
export class DeviceFilter {
  private readonly queries: DeviceQueryRepository;
  private readonly now: () => number;

  constructor(deps: { queries: DeviceQueryRepository; now?: (() => number) | undefined }) {
    this.queries = deps.queries;
    this.now = deps.now ?? Date.now;
  }

  /** Parses `text`, or throws a 400 (`what` names the parameter: "where", "view \"Old phones\""). */
  parse(text: string, what = 'where'): WhereNode {
    try {
      return parseWhere(text);
    } catch (error) {
      if (error instanceof WhereError) throw new ApiError(400, 'ERROR_BAD_WHERE', `${what}: ${error.message}`);
      throw error;
    }
  }

  list(node: WhereNode, scope: FleetScope = currentFleetScope()): Promise<AgentSummary[]> {
    return this.queries.summaries(compileWhere(node, this.now()), fleetScopeParam(scope));
  }

  count(node: WhereNode, scope: FleetScope = currentFleetScope()): Promise<number> {
    return this.queries.count(compileWhere(node, this.now()), fleetScopeParam(scope));
  }

  ids(node: WhereNode, scope: FleetScope = currentFleetScope()): Promise<{ id: number; fleet_id: number }[]> {
    return this.queries.ids(compileWhere(node, this.now()), fleetScopeParam(scope));
  }

  matches(agentId: number, node: WhereNode): Promise<boolean> {
    return this.queries.matches(agentId, compileWhere(node, this.now()));
  }
}

/** Several expressions that must all hold (a view's, a fleet's, the caller's `where`). */
export const allOf = (...nodes: WhereNode[]): WhereNode => ({ kind: 'and', terms: nodes });
