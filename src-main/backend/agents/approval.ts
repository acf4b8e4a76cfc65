import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { SessionService } from '../sessions/sessions.ts';
import type { SessionContext } from '../sessions/types.ts';
import type { UserRepository } from '../sessions/users.ts';
import type { AgentRow } from './agents.ts';

export const PENDING_APPROVAL = 'pending_approval';
export const REJECTED = 'rejected';

/** Agent accounts that may not download: the device waits for approval or was rejected. */
const HELD = [PENDING_APPROVAL, REJECTED];

/**
 * Devices enrolled with a code that needs an admin's approval. Until approved, the broker refuses
 * their login and downloads are refused; a rejected device is freed for whoever enrolls it next.
 */
export class ApprovalService {
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly users: UserRepository;
  private readonly sessions: SessionService;
  private readonly statements;

  constructor(deps: { db: Db; events: EventLog; work: UnitOfWork; users: UserRepository; sessions: SessionService }) {
    this.events = deps.events;
    this.work = deps.work;
    this.users = deps.users;
    this.sessions = deps.sessions;
    const db = deps.db;
    this.statements = {
      byId: db.prepare(`SELECT * FROM agents WHERE id = ?`),
      statusOfAccount: db.prepare(`SELECT enroll_status FROM agents WHERE account_user_id = ?`),
      setStatus: db.prepare(`UPDATE agents SET enroll_status = ?, mqtt_password_hash = ?, updated_at = ? WHERE id = ? AND enroll_status = '${PENDING_APPROVAL}'`),
      pending: db.prepare(`SELECT count(*) AS n FROM agents WHERE enroll_status = '${PENDING_APPROVAL}'`),
    };
  }

  pendingCount(): number {
    return (this.statements.pending.get() as { n: number }).n;
  }

  approve(id: number): AgentRow {
    return this.decide(id, 'approve');
  }

  reject(id: number): AgentRow {
    return this.decide(id, 'reject');
  }

  /** Approves each pending agent of `ids` in one transaction; unknown or already decided ones are listed, not fatal. */
  approveMany(ids: number[]): { approved: number[]; skipped: { id: number; reason: string }[] } {
    const approved: number[] = [];
    const skipped: { id: number; reason: string }[] = [];
    this.work.run(() => {
      for (const id of ids) {
        try {
          this.decide(id, 'approve');
          approved.push(id);
        } catch (error) {
          skipped.push({ id, reason: (error as Error).message });
        }
      }
    });
    return { approved, skipped };
  }

  /** Refuses a download to the account of a device that waits for approval or was rejected. */
  checkDownload(session: SessionContext): void {
    if (session.userKind !== 'agent') return;
    const row = this.statements.statusOfAccount.get(session.userId) as { enroll_status: string } | undefined;
    if (row && HELD.includes(row.enroll_status)) {
      throw new ApiError(
        403,
        'ERROR_AGENT_NOT_APPROVED',
        row.enroll_status === PENDING_APPROVAL
          ? 'This device is waiting for approval by an administrator'
          : 'This device was rejected by an administrator',
      );
    }
  }

  private decide(id: number, decision: 'approve' | 'reject'): AgentRow {
    const agent = this.statements.byId.get(id) as AgentRow | undefined;
    if (!agent) throw itemNotFound('Agent not found');
    if (agent.enroll_status !== PENDING_APPROVAL) {
      throw new ApiError(409, 'ERROR_NOT_PENDING', `${agent.name} is not waiting for approval (it is ${agent.enroll_status})`);
    }
    return this.work.run(() => {
      if (decision === 'approve') {
        // The password drawn at enrollment stays: the device logs in with it once approved.
        this.statements.setStatus.run('enrolled', agent.mqtt_password_hash, nowIso(), id);
        this.events.record('agent.approved', `${agent.name} approved`, { entityId: agent.entity_id, agentId: id });
      } else {
        // Rejected: its credentials die with it, and the device is free for its next enrollment.
        this.statements.setStatus.run(REJECTED, null, nowIso(), id);
        this.sessions.closeAllOf(agent.account_user_id);
        this.users.rotateToken(agent.account_user_id);
        this.events.record('agent.rejected', `${agent.name} rejected`, { entityId: agent.entity_id, agentId: id });
      }
      return this.statements.byId.get(id) as AgentRow;
    });
  }
}
