import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { itemNotFound } from '../errors.ts';
import type { UserRepository } from '../sessions/user-repository.ts';
import type { AgentRepository, AgentRow, AgentSummary } from './repository.ts';
import { currentFleetScope, fleetScopeParam, inFleetScope, type FleetScope } from '../fleets/scope.ts';

export type { AgentRow, AgentSummary } from './repository.ts';

/**
 * Enrolled agents as the admin side sees them: list, read, delete. Each read takes the request's
 * fleet scope (fleets/scope.ts): a device of a fleet it may not see answers as if it did not exist.
 */
export class AgentService {
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly users: UserRepository;
  private readonly agents: AgentRepository;

  constructor(deps: { agents: AgentRepository; events: EventLog; work: UnitOfWork; users: UserRepository }) {
    this.agents = deps.agents;
    this.events = deps.events;
    this.work = deps.work;
    this.users = deps.users;
  }

  async row(id: number, scope: FleetScope = currentFleetScope()): Promise<AgentRow | undefined> {
    const row = await this.agents.byId(id);
    return row && inFleetScope(row.fleet_id, scope) ? row : undefined;
  }

  async get(id: number): Promise<AgentRow> {
    const row = await this.row(id);
    if (!row) throw itemNotFound('Agent not found');
    return row;
  }

  list(scope: FleetScope = currentFleetScope()): Promise<AgentSummary[]> {
    return this.agents.summaries(fleetScopeParam(scope));
  }

  async summary(id: number): Promise<AgentSummary> {
    const row = await this.findSummary(id);
    if (!row) throw itemNotFound('Agent not found');
    return row;
  }

  /** The device-list row, or null once the agent is gone (or outside `scope`). */
  async findSummary(id: number, scope: FleetScope = currentFleetScope()): Promise<AgentSummary | null> {
    return (await this.agents.summary(id, fleetScopeParam(scope))) ?? null;
  }

  /** Deletes the agent, its computer and its account (so its api_token stops working). */
  async remove(id: number): Promise<AgentRow> {
    const agent = await this.get(id);
    await this.work.run(async () => {
      await this.agents.remove(agent);
      await this.users.remove(agent.account_user_id); // its sessions go with it (ON DELETE CASCADE)
      // Its fleet is named: once the agent is gone, the live stream still knows whom to tell.
      await this.events.record(
        'agent.deleted',
        `Agent ${agent.name} deleted`,
        { entityId: agent.entity_id, agentId: id, agentName: agent.name },
        { fleet_id: agent.fleet_id },
      );
    });
    return agent;
  }
}
