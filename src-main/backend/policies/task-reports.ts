import { nowIso } from '../db/database.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { PolicyContext } from './context.ts';
import type { TaskRow } from './repository.ts';
import { isTaskStatus, TASK_STATUSES, type TaskStatus } from './wire.ts';

// What the devices say about their tasks (MQTT or REST), and what the download routes see them
// fetch: applied to the device's own tasks only, a finished status final.

export type ReportSource = 'mqtt' | 'http';

const CLOSED_FOR_REPORTS: readonly TaskStatus[] = ['canceled'];
const REASON_LIMIT = 1_000;
/** Statuses a device reports once a task is over on it; after them it may only repeat itself. */
const FINISHED_FOR_DEVICE: readonly TaskStatus[] = ['done', 'failed'];

/**
 * A status report of a device for the task `taskId` (an assignment id) of its own. Refused when the
 * device has no task there (another device's, or a fleet it is not in), or the task is closed.
 */
export async function report(
  ctx: PolicyContext,
  agentId: number,
  taskId: number,
  body: unknown,
  source: ReportSource,
): Promise<TaskRow> {
  const task = await ctx.repo.taskOf(taskId, agentId);
  if (!task) throw new ApiError(404, 'ERROR_ITEM_NOT_FOUND', `Task ${taskId} is not a task of this device`);
  return applyReport(ctx, task, body, source);
}

/** PUT PluginMdmTaskstatus/<id>: the status row `statusId`, which must belong to the session's device. */
export async function reportByStatusId(ctx: PolicyContext, agentId: number, statusId: number, body: unknown): Promise<TaskRow> {
  const task = await ctx.repo.task(statusId);
  // Another device's row is answered as an unknown one: a device learns nothing about others.
  if (!task || task.agent_id !== agentId) throw itemNotFound();
  return applyReport(ctx, task, body, 'http');
}

/**
 * A device's session was sent the whole of a file or package (files/download.ts): its open tasks
 * deploying that item note it, so they read "downloaded, not confirmed" until the device reports.
 * A session that is not a device's (its own account, or the person's that enrolled it) changes nothing.
 */
export async function downloaded(
  ctx: PolicyContext,
  session: { userId: number; enrolledAgentId: number | null },
  kind: 'file' | 'package',
  itemId: number,
): Promise<void> {
  try {
    const agent =
      (await ctx.repo.agentOfAccount(session.userId)) ??
      (session.enrolledAgentId === null ? undefined : await ctx.repo.agent(session.enrolledAgentId));
    if (!agent) return;
    const at = nowIso();
    const tasks = await ctx.outbox.transact(() => ctx.repo.markDownloaded(agent.id, kind, itemId, at));
    for (const task of tasks) {
      const deployment = (await ctx.repo.byId(task.deployment_id))!;
      await ctx.events.record(
        'task.downloaded',
        `${agent.name}: ${deployment.policy} "${deployment.item_name}" downloaded, not confirmed yet`,
        { entityId: agent.entity_id, agentId: agent.id },
        { deployment_id: deployment.id, task_id: task.id, fleet_id: deployment.fleet_id },
      );
    }
  } catch (error) {
    // A download that was served is never undone by the bookkeeping (a full disk, say).
    await ctx.events.record(
      'deployment.error',
      `A completed download could not be noted: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** search/PluginMdmTaskstatus as the reference agent asks it: its agent id and the task id. */
export async function searchStatuses(
  ctx: PolicyContext,
  agentId: number,
  criteria: { agentId?: number | undefined; taskId?: number | undefined },
): Promise<TaskRow[]> {
  // A device only ever sees its own rows, whatever agent id it names.
  if (criteria.agentId !== undefined && criteria.agentId !== agentId) return [];
  if (criteria.taskId !== undefined) {
    const task = await ctx.repo.taskOf(criteria.taskId, agentId);
    return task ? [task] : [];
  }
  return ctx.repo.tasksOfAgent(agentId);
}

async function applyReport(ctx: PolicyContext, task: TaskRow, body: unknown, source: ReportSource): Promise<TaskRow> {
  const input = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : null;
  const status = input?.status;
  if (!isTaskStatus(status) || status === 'overriden') {
    throw new ApiError(
      400,
      'ERROR_BAD_REQUEST',
      `Unknown task status ${JSON.stringify(status ?? null).slice(0, 60)}: expected one of ${TASK_STATUSES.filter((s) => s !== 'overriden').join(', ')}`,
    );
  }
  const rawReason = input?.reason ?? input?.message ?? null;
  const reason = typeof rawReason === 'string' && rawReason.trim() !== '' ? rawReason.trim().slice(0, REASON_LIMIT) : null;
  // Decided inside the write transaction, on the task as it is there: two reports of one task
  // applied at once (a device's "received" and "done" a few ms apart, handled side by side) must
  // not let the earlier one, read before the later committed, take back a finished status.
  return ctx.outbox.transact(async () => {
    const current = (await ctx.repo.task(task.id))!;
    const deployment = (await ctx.repo.byId(current.deployment_id))!;
    if (deployment.state !== 'active')
      throw new ApiError(409, 'ERROR_TASK_CLOSED', `Task ${deployment.id} was removed: its status can no longer change`);
    // The device applies every message it receives; which value applies is the server's decision.
    if (current.status === 'overriden') return current;
    if (CLOSED_FOR_REPORTS.includes(current.status))
      throw new ApiError(
        409,
        'ERROR_TASK_CLOSED',
        `Task ${deployment.id} was canceled for this device: its status can no longer change`,
      );
    // A finished status (done, failed) is final for the device: it cannot take back what it reported
    // (done → pending would hide a delivered file or run the task again); deploying again does.
    if (FINISHED_FOR_DEVICE.includes(current.status)) {
      if (current.status === status) return current; // the same report again (QoS 1 redelivery, a retry) changes nothing
      throw new ApiError(
        409,
        'ERROR_TASK_CLOSED',
        `Task ${deployment.id} is already ${current.status} on this device: a finished status is final (deploy again to run it again)`,
      );
    }
    const agent = (await ctx.repo.agent(current.agent_id))!;
    if (current.status === status && current.reason === reason) return current; // a repeated report (QoS 1 redelivery) changes nothing
    await ctx.setStatus(current.id, deployment.id, agent, status, reason, source, nowIso());
    return (await ctx.repo.task(current.id))!;
  });
}
