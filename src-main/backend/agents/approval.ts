import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { SessionService } from '../sessions/sessions.ts';
import type { SessionContext } from '../sessions/types.ts';
import type { UserRepository } from '../sessions/user-repository.ts';
import type { AgentRepository, AgentRow } from './repository.ts';
import { ENROLL_STATUS, HELD } from './status.ts';
import { inFleetScope } from '../fleets/scope.ts';

/**
 * Devices enrolled with a code that needs an admin's approval. Until approved, a device may only
 * wait: its session may read its own record (and what it links to), but the broker refuses its
 * login and the agent API refuses everything it would send or fetch (reports, positions, task
 * statuses, downloads) with 403 ERROR_AGENT_NOT_APPROVED. A rejected device is freed for whoever
 * enrolls it next.
 */
export class ApprovalService {
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly users: UserRepository;
  private readonly sessions: SessionService;
  private readonly agents: AgentRepository;

  constructor(deps: {
    agents: AgentRepository;
    events: EventLog;
    work: UnitOfWork;
    users: UserRepository;
    sessions: SessionService;
  }) {
    this.agents = deps.agents;
    this.events = deps.events;
    this.work = deps.work;
    this.users = deps.users;
    this.sessions = deps.sessions;
  }

  pendingCount(): Promise<number> {
    return this.agents.pendingApprovalCount();
  }

  approve(id: number): Promise<AgentRow> {
    return this.decide(id, 'approve');
  }

  reject(id: number): Promise<AgentRow> {
    return this.decide(id, 'reject');
  }

  /** Approves each pending agent of `ids` in one transaction; unknown or already decided ones are listed, not fatal. */
  async approveMany(ids: number[]): Promise<{ approved: number[]; skipped: { id: number; reason: string }[] }> {
    const approved: number[] = [];
    const skipped: { id: number; reason: string }[] = [];
    await this.work.run(async () => {
      for (const id of ids) {
        try {
          await this.decide(id, 'approve');
          approved.push(id);
        } catch (error) {
          skipped.push({ id, reason: (error as Error).message });
        }
      }
    });
    return { approved, skipped };
  }

  /** Refuses the session of a device that waits for approval or was rejected (agent-api/app.ts). */
  async checkApproved(session: SessionContext): Promise<void> {
    if (session.userKind !== 'agent') return;
    const status = await this.agents.enrollStatusOfAccount(session.userId);
    if (status !== undefined && HELD.includes(status)) {
      throw new ApiError(
        403,
        'ERROR_AGENT_NOT_APPROVED',
        status === ENROLL_STATUS.pendingApproval
          ? 'This device is waiting for approval by an administrator'
          : 'This device was rejected by an administrator',
      );
    }
  }

  private async decide(id: number, decision: 'approve' | 'reject'): Promise<AgentRow> {
    const agent = await this.agents.byId(id);
    // A device of a fleet the request may not see answers as if it did not exist.
    if (!agent || !inFleetScope(agent.fleet_id)) throw itemNotFound('Agent not found');
    if (agent.enroll_status !== ENROLL_STATUS.pendingApproval) {
      throw new ApiError(409, 'ERROR_NOT_PENDING', `${agent.name} is not waiting for approval (it is ${agent.enroll_status})`);
    }
    return this.work.run(async () => {
      if (decision === 'approve') {
        // The password drawn at enrollment stays: the device logs in with it once approved.
        await this.agents.decidePending(id, ENROLL_STATUS.enrolled, agent.mqtt_password_hash, nowIso());
        await this.events.record('agent.approved', `${agent.name} approved`, {
          entityId: agent.entity_id,
          agentId: id,
          agentName: agent.name,
        });
      } else {
        // Rejected: its credentials die with it, and the device is free for its next enrollment.
        await this.agents.decidePending(id, ENROLL_STATUS.rejected, null, nowIso());
        await this.sessions.closeAllOf(agent.account_user_id);
        await this.users.rotateToken(agent.account_user_id);
        await this.events.record('agent.rejected', `${agent.name} rejected`, {
          entityId: agent.entity_id,
          agentId: id,
          agentName: agent.name,
        });
      }
      return (await this.agents.byId(id))!;
    });
  }
}
