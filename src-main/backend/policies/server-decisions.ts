import { nowIso } from '../db/database.ts';
import { compareAndroidVersions, policyDefinition, type PolicyDefinition } from '../../../src-shared/contract/index.ts';
import type { PolicyContext } from './context.ts';
import type { AgentInScope, DeploymentRow, LiveTask } from './repository.ts';
import type { TaskStatus } from './wire.ts';

// What the server decides about a task before (or instead of) the device: incompatible where it
// knows the device cannot apply the policy, overriden where the device has a value of its own.

/** Why the device cannot apply the policy, as far as the server knows; null when it can (or it does not know). */
export function incompatibility(
  definition: Pick<PolicyDefinition, 'androidMinVersion' | 'systemOnly'>,
  agent: Pick<AgentInScope, 'os_version' | 'has_system_permission'>,
): string | null {
  const version = agent.os_version?.trim() ?? '';
  if (/^\d+(\.\d+)*$/.test(version) && compareAndroidVersions(version, definition.androidMinVersion) < 0)
    return `Android ${version} is older than ${definition.androidMinVersion}, the minimum of this policy`;
  if (definition.systemOnly && agent.has_system_permission === 0)
    return 'this policy needs an agent with system permission, and this one reported none';
  return null;
}

/**
 * What the server knows before the device says anything: incompatible (Android version from its
 * inventory below the policy's minimum; a system-only policy on an agent that reported no system
 * permission), overriden (a fleet value where the device has its own), else nothing.
 */
export async function decide(
  ctx: PolicyContext,
  row: DeploymentRow,
  agent: AgentInScope,
): Promise<{ status: TaskStatus; reason: string } | null> {
  const definition = policyDefinition(row.policy);
  if (!definition) return null;
  const incompatible = incompatibility(definition, agent);
  if (incompatible) return { status: 'incompatible', reason: incompatible };
  if (row.fleet_id !== null && definition.unique) {
    const own = (
      await ctx.repo.activeSame({
        policy: row.policy,
        item_kind: null,
        item_id: null,
        fleet_id: null,
        agent_id: agent.id,
      })
    )[0];
    if (own) return { status: 'overriden', reason: `the device's own value applies (assignment #${own.id})` };
  }
  return null;
}

/** A new inventory may change what the device can apply: pending tasks become incompatible, or the reverse. */
export async function reassess(ctx: PolicyContext, agentId: number): Promise<void> {
  const agent = await ctx.repo.agent(agentId);
  if (!agent) return;
  const changes: { task: LiveTask; status: TaskStatus; reason: string }[] = [];
  for (const task of await ctx.repo.liveTasksOfAgent(agentId)) {
    const definition = policyDefinition(task.policy);
    if (!definition) continue;
    const incompatible = incompatibility(definition, agent);
    if (incompatible && task.status === 'pending') changes.push({ task, status: 'incompatible', reason: incompatible });
    if (!incompatible && task.status === 'incompatible' && (await ctx.repo.historyOf(task.id)).at(-1)?.source === 'server')
      changes.push({ task, status: 'pending', reason: 'the device can now apply it (new inventory)' });
  }
  if (changes.length === 0) return;
  await ctx.outbox.transact(async () => {
    const at = nowIso();
    for (const change of changes)
      await ctx.setStatus(change.task.id, change.task.deployment_id, agent, change.status, change.reason, 'server', at);
  });
}
