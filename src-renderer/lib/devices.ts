import type { AgentSummary as Agent } from '../../src-shared/contract/index.ts';

// The table's search is the server's (a bulk job's `search` selects the same devices): one copy, in the contract.
export { matchesSearch, searchTerms, searchText } from '../../src-shared/contract/bulk.ts';

export const ENROLL_STATUS: Record<string, { label: string; color: string }> = {
  enrolled: { label: 'Enrolled', color: 'teal' },
  unenrolled: { label: 'Unenrolled', color: 'gray' },
  'unenroll-pending': { label: 'Unenrolling…', color: 'orange' },
  wiped: { label: 'Wiped', color: 'red' },
  pending_approval: { label: 'Waiting for approval', color: 'orange' },
  rejected: { label: 'Rejected', color: 'red' },
};

export function enrollStatusOf(status: string): { label: string; color: string } {
  return ENROLL_STATUS[status] ?? { label: status.charAt(0).toUpperCase() + status.slice(1), color: 'blue' };
}

/**
 * Ids that are new or changed between two versions of the list, so their rows can flash once.
 * Only compares what the table shows; the first load is never "fresh".
 */
export function changedIds(previous: Agent[] | undefined, next: Agent[]): number[] {
  if (!previous) return [];
  const before = new Map(previous.map((agent) => [agent.id, agent]));
  const out: number[] = [];
  for (const agent of next) {
    const old = before.get(agent.id);
    if (!old || old.enroll_status !== agent.enroll_status || old.is_online !== agent.is_online || old.fleet_id !== agent.fleet_id)
      out.push(agent.id);
  }
  return out;
}
