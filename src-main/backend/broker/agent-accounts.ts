// What an agent's lifecycle means for its MQTT account, in every mode (embedded, mosquitto,
// rabbitmq): each mode says how it revokes an account and how rights follow a fleet move; this
// one subscriber decides when, from the agents' events.
import type { EventLog } from '../events/event-log.ts';
import type { AgentCommands } from './commands.ts';

/** Why an account goes at once: the agent is deleted, confirmed its unenrollment, or a new install enrolled it again. */
export type Revocation = 'deleted' | 'unenrolled' | 'reenrolled';

const REVOKED_BY: Readonly<Record<string, Revocation>> = {
  'agent.deleted': 'deleted',
  'agent.unenrolled': 'unenrolled',
  'agent.reenrolled': 'reenrolled',
};

/** How one mode keeps an agent's MQTT account. */
export interface AgentAccounts {
  /**
   * The account's connections end and its login stops working now (a re-enrolled agent's new
   * install gets its account with its record read, `credentialsIssued`).
   */
  revoke(agentId: number, why: Revocation): Promise<void> | void;
  /**
   * The agent moved to another fleet: its rights follow. Awaited by the move itself
   * (AgentCommands.moveToFleet), before the agent is told to subscribe to the new fleet's topic.
   */
  moved(agentId: number, fleetId: number): void | Promise<void>;
}

/**
 * Follows the agents' events: a deleted, unenrolled or re-enrolled agent loses its retained
 * commands and its account; a new or re-enrolled one is told its fleet topic, retained, as the
 * reference does (after the old install's retained commands were cleared). Returns the unsubscribe.
 */
export function followAgentLifecycle(events: EventLog, commands: AgentCommands, accounts: AgentAccounts): () => void {
  return events.subscribe(async (event) => {
    const id = event.agent_id;
    if (id === null) return;
    const revoked = REVOKED_BY[event.type];
    if (revoked) {
      commands.forgetAgent(id);
      await accounts.revoke(id, revoked);
    }
    if (event.type === 'agent.enrolled' || event.type === 'agent.reenrolled') void commands.announceFleet(id).catch(() => {});
  });
}
