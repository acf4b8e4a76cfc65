import { nowIso } from '../db/database.ts';
import type { RecordedEvent } from '../events/event-log.ts';
import { POLICY_CATALOGUE } from '../../../src-shared/contract/index.ts';
import { retire } from './assignments.ts';
import type { PolicyContext } from './context.ts';
import { decide, reassess } from './server-decisions.ts';
import { syncAgentViews, syncViewAssignment } from './view-targets.ts';

/** What may move a device into or out of a saved view (view-targets.ts): its inventory, status, presence, fleet. */
const VIEW_AGENT_EVENTS = new Set([
  'agent.enrolled',
  'agent.reenrolled',
  'agent.fleet_changed',
  'agent.inventory',
  'agent.online',
  'agent.offline',
  'agent.approved',
  'agent.rejected',
  'agent.unenrolled',
]);

// The tasks follow the devices and fleets: a device joining a fleet gets its assignments, leaving
// cancels them, a device no longer managed has its open tasks canceled, a new inventory is
// reassessed, a deleted fleet or device takes its assignments with it.

/** Fleet membership changed (enrolled, enrolled again, moved): tasks of the new fleet opened, of the old one canceled. */
export function syncAgent(ctx: PolicyContext, agentId: number): void {
  const agent = ctx.repo.agent(agentId);
  if (!agent) return;
  const fleet = ctx.fleets.byId(agent.fleet_id);
  ctx.outbox.transact(() => {
    const at = nowIso();
    for (const task of ctx.repo.openFleetTasksElsewhere(agent.id, agent.fleet_id)) {
      ctx.setStatus(task.id, task.deployment_id, agent, 'canceled', `the device left ${task.target_name}`, 'server', at);
    }
    for (const deployment of ctx.repo.activeForFleet(agent.fleet_id)) {
      const taskId = ctx.repo.openTask(deployment.id, agent.id, at);
      if (taskId !== undefined) {
        const decided = decide(ctx, deployment, agent) ?? {
          status: 'pending' as const,
          reason: `the device joined fleet "${fleet?.name ?? agent.fleet_id}"`,
        };
        ctx.setStatus(taskId, deployment.id, agent, decided.status, decided.reason, 'server', at);
      }
    }
    // Its own deployments too: tasks canceled when it was unenrolled open again on re-enrollment.
    for (const deployment of ctx.repo.activeForAgent(agent.id)) {
      const taskId = ctx.repo.openTask(deployment.id, agent.id, at);
      if (taskId !== undefined) {
        const decided = decide(ctx, deployment, agent) ?? { status: 'pending' as const, reason: 'the device enrolled again' };
        ctx.setStatus(taskId, deployment.id, agent, decided.status, decided.reason, 'server', at);
      }
    }
  });
}

/** The device is no longer managed (unenrolled, rejected): nothing will report its open tasks. */
function cancelOpenTasks(ctx: PolicyContext, agentId: number, why: string): void {
  const agent = ctx.repo.agent(agentId);
  if (!agent) return;
  ctx.outbox.transact(() => {
    const at = nowIso();
    for (const task of ctx.repo.openTasksOfAgent(agentId))
      ctx.setStatus(task.id, task.deployment_id, agent, 'canceled', why, 'server', at);
  });
}

/**
 * A new fleet: no stale retained policy of an earlier fleet of that id survives (a database restored
 * from an older backup, a data dir started afresh on a Mosquitto that persists its retained messages).
 * As the reference: an empty retained message on every `<fleet topic>/Policy/<symbol>`. And, since
 * our messages live on `…/Policy/<symbol>/Task/<id>`, every retained message the broker holds under
 * `<fleet topic>/Policy/` is cleared too, except those of the fleet's own assignments (set meanwhile).
 */
function clearFleetTopics(ctx: PolicyContext, fleetId: number): void {
  const fleet = ctx.fleets.byId(fleetId);
  if (!fleet) return;
  const prefix = `/${fleet.entity_id}/fleet/${fleet.id}/Policy`;
  for (const policy of POLICY_CATALOGUE) void ctx.outbox.publish(`${prefix}/${policy.symbol}`, '');
  void ctx.outbox
    .retainedTopicsUnder(prefix)
    .then(async (topics) => {
      const own = new Set(ctx.repo.activeForFleet(fleet.id).map((row) => row.topic));
      for (const topic of topics) if (!own.has(topic)) await ctx.outbox.publish(topic, '');
    })
    .catch(() => {}); // the server closing meanwhile: nothing left to clear for
}

/** The events the assignments follow; a failure is noted, never thrown back at the event's writer. */
export function followEvent(ctx: PolicyContext, event: RecordedEvent): void {
  try {
    if (event.agent_id !== null && ['agent.enrolled', 'agent.reenrolled', 'agent.fleet_changed'].includes(event.type))
      syncAgent(ctx, event.agent_id);
    if (event.type === 'agent.inventory' && event.agent_id !== null) reassess(ctx, event.agent_id);
    if (event.type === 'fleet.created' && event.data) clearFleetTopics(ctx, event.data.fleet_id);
    if (event.type === 'fleet.deleted' && event.data) {
      const fleetId = event.data.fleet_id;
      for (const row of ctx.repo.activeForFleet(fleetId))
        ctx.outbox.transact(() => retire(ctx, row, null, 'its fleet was deleted'));
    }
    if (event.type === 'agent.unenrolled' && event.agent_id !== null)
      cancelOpenTasks(ctx, event.agent_id, 'the device was unenrolled');
    if (event.type === 'agent.rejected' && event.agent_id !== null)
      cancelOpenTasks(ctx, event.agent_id, 'the device was rejected');
    if (event.type === 'agent.deleted' && event.agent_id !== null) {
      for (const row of ctx.repo.activeForAgent(event.agent_id))
        ctx.outbox.transact(() => retire(ctx, row, null, 'its device was deleted'));
    }
    // Saved views as targets: the device entered or left one; a device's own value removed lets a view's apply.
    if (event.agent_id !== null && (VIEW_AGENT_EVENTS.has(event.type) || event.type === 'deployment.removed'))
      syncAgentViews(ctx, event.agent_id);
    if (event.type === 'view.updated' && event.data)
      for (const row of ctx.viewAssignments.activeOfView(event.data.view_id)) syncViewAssignment(ctx, row);
  } catch (error) {
    ctx.events.record(
      'deployment.error',
      `Deployments could not follow ${event.type}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
