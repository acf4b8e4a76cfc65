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
export async function syncAgent(ctx: PolicyContext, agentId: number): Promise<void> {
  // Nothing to open or cancel (a device enrolling in a fleet without assignments, the usual case):
  // no write transaction at all. Before, every enrollment ran an empty one after its own. One
  // statement says so (no open task, no active assignment of its fleet or of its own; or no device).
  if (!(await ctx.repo.anythingToSync(agentId))) return;
  const agent = await ctx.repo.agent(agentId);
  if (!agent) return;
  const fleet = await ctx.fleets.byId(agent.fleet_id);
  await ctx.outbox.transact(async () => {
    const at = nowIso();
    for (const task of await ctx.repo.openFleetTasksElsewhere(agent.id, agent.fleet_id)) {
      await ctx.setStatus(task.id, task.deployment_id, agent, 'canceled', `the device left ${task.target_name}`, 'server', at);
    }
    for (const deployment of await ctx.repo.activeForFleet(agent.fleet_id)) {
      const taskId = await ctx.repo.openTask(deployment.id, agent.id, at);
      if (taskId !== undefined) {
        const decided = (await decide(ctx, deployment, agent)) ?? {
          status: 'pending' as const,
          reason: `the device joined fleet "${fleet?.name ?? agent.fleet_id}"`,
        };
        await ctx.setStatus(taskId, deployment.id, agent, decided.status, decided.reason, 'server', at);
      }
    }
    // Its own deployments too: tasks canceled when it was unenrolled open again on re-enrollment.
    for (const deployment of await ctx.repo.activeForAgent(agent.id)) {
      const taskId = await ctx.repo.openTask(deployment.id, agent.id, at);
      if (taskId !== undefined) {
        const decided = (await decide(ctx, deployment, agent)) ?? {
          status: 'pending' as const,
          reason: 'the device enrolled again',
        };
        await ctx.setStatus(taskId, deployment.id, agent, decided.status, decided.reason, 'server', at);
      }
    }
  });
}

/** The device is no longer managed (unenrolled, rejected): nothing will report its open tasks. */
async function cancelOpenTasks(ctx: PolicyContext, agentId: number, why: string): Promise<void> {
  const agent = await ctx.repo.agent(agentId);
  if (!agent) return;
  await ctx.outbox.transact(async () => {
    const at = nowIso();
    for (const task of await ctx.repo.openTasksOfAgent(agentId))
      await ctx.setStatus(task.id, task.deployment_id, agent, 'canceled', why, 'server', at);
  });
}

/**
 * A new fleet: no stale retained policy of an earlier fleet of that id survives (a database restored
 * from an older backup, a data dir started afresh on a Mosquitto that persists its retained messages).
 * As the reference: an empty retained message on every `<fleet topic>/Policy/<symbol>`. And, since
 * our messages live on `…/Policy/<symbol>/Task/<id>`, every retained message the broker holds under
 * `<fleet topic>/Policy/` is cleared too, except those of the fleet's own assignments (set meanwhile).
 */
async function clearFleetTopics(ctx: PolicyContext, fleetId: number): Promise<void> {
  const fleet = await ctx.fleets.byId(fleetId);
  if (!fleet) return;
  const prefix = `/${fleet.entity_id}/fleet/${fleet.id}/Policy`;
  for (const policy of POLICY_CATALOGUE) void ctx.outbox.publish(`${prefix}/${policy.symbol}`, '');
  void ctx.outbox
    .retainedTopicsUnder(prefix)
    .then(async (topics) => {
      const own = new Set((await ctx.repo.activeForFleet(fleet.id)).map((row) => row.topic));
      for (const topic of topics) if (!own.has(topic)) await ctx.outbox.publish(topic, '');
    })
    .catch(() => {}); // the server closing meanwhile: nothing left to clear for
}

/** The events the assignments follow; a failure is noted, never thrown back at the event's writer. */
export async function followEvent(ctx: PolicyContext, event: RecordedEvent): Promise<void> {
  try {
    if (event.agent_id !== null && ['agent.enrolled', 'agent.reenrolled', 'agent.fleet_changed'].includes(event.type))
      await syncAgent(ctx, event.agent_id);
    if (event.type === 'agent.inventory' && event.agent_id !== null) await reassess(ctx, event.agent_id);
    if (event.type === 'fleet.created' && event.data) await clearFleetTopics(ctx, event.data.fleet_id);
    if (event.type === 'fleet.deleted' && event.data) {
      const fleetId = event.data.fleet_id;
      for (const row of await ctx.repo.activeForFleet(fleetId))
        await ctx.outbox.transact(() => retire(ctx, row, null, 'its fleet was deleted'));
    }
    if (event.type === 'agent.unenrolled' && event.agent_id !== null)
      await cancelOpenTasks(ctx, event.agent_id, 'the device was unenrolled');
    if (event.type === 'agent.rejected' && event.agent_id !== null)
      await cancelOpenTasks(ctx, event.agent_id, 'the device was rejected');
    if (event.type === 'agent.deleted' && event.agent_id !== null) {
      for (const row of await ctx.repo.activeForAgent(event.agent_id))
        await ctx.outbox.transact(() => retire(ctx, row, null, 'its device was deleted'));
    }
    // Saved views as targets: the device entered or left one; a device's own value removed lets a view's apply.
    if (event.agent_id !== null && (VIEW_AGENT_EVENTS.has(event.type) || event.type === 'deployment.removed'))
      await syncAgentViews(ctx, event.agent_id);
    if (event.type === 'view.updated' && event.data)
      for (const row of await ctx.viewAssignments.activeOfView(event.data.view_id)) await syncViewAssignment(ctx, row);
  } catch (error) {
    await ctx.events.record(
      'deployment.error',
      `Deployments could not follow ${event.type}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
