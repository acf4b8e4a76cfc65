// The SQL of policies and deployments assigned to saved views (view_assignments) and of the
// device-level rows that carry each to the view's members (policy_assignments.view_assignment_id).
import type { Db } from '../db/database.ts';
import type { DeploymentRow } from './repository.ts';

export interface ViewAssignmentRow {
  id: number;
  entity_id: number;
  view_id: number;
  policy: string;
  /** Value policies: the value as JSON; removeApp/removeFile: the JSON string; deployments: null. */
  value: string | null;
  item_kind: 'file' | 'package' | null;
  item_id: number | null;
  item_name: string;
  destination: string | null;
  remove_on_delete: number;
  state: 'active' | 'removed';
  created_at: string;
  removed_at: string | null;
}

/** A view assignment with its members' tasks counted. */
export interface ViewAssignmentCounts {
  devices: number;
  done: number;
  pending: number;
  failed: number;
  overriden: number;
}

export class ViewAssignmentRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO view_assignments (entity_id, view_id, policy, value, item_kind, item_id, item_name, destination, remove_on_delete, created_at)
         VALUES (@entity_id, @view_id, @policy, @value, @item_kind, @item_id, @item_name, @destination, @remove_on_delete, @created_at)
         RETURNING id`,
      ),
      byId: db.prepare(`SELECT * FROM view_assignments WHERE id = ?`),
      ofView: db.prepare(`SELECT * FROM view_assignments WHERE view_id = ? ORDER BY id DESC`),
      activeOfView: db.prepare(`SELECT * FROM view_assignments WHERE view_id = ? AND state = 'active' ORDER BY id`),
      active: db.prepare(`SELECT * FROM view_assignments WHERE state = 'active' ORDER BY id`),
      activeSame: db.prepare(
        `SELECT * FROM view_assignments WHERE view_id = @view_id AND state = 'active' AND policy = @policy
           AND item_kind IS @item_kind AND item_id IS @item_id AND value IS @value`,
      ),
      markRemoved: db.prepare(`UPDATE view_assignments SET state = 'removed', removed_at = ? WHERE id = ? AND state = 'active'`),
      members: db.prepare(`SELECT * FROM policy_assignments WHERE view_assignment_id = ? AND state = 'active' ORDER BY id`),
      member: db.prepare(
        `SELECT * FROM policy_assignments WHERE view_assignment_id = ? AND agent_id = ? AND state = 'active' ORDER BY id LIMIT 1`,
      ),
      counts: db.prepare(
        `SELECT count(DISTINCT d.agent_id) AS devices,
           coalesce(sum(CASE WHEN t.status = 'done' THEN 1 ELSE 0 END), 0) AS done,
           coalesce(sum(CASE WHEN t.status IN ('pending', 'received', 'in progress', 'waiting') THEN 1 ELSE 0 END), 0) AS pending,
           coalesce(sum(CASE WHEN t.status IN ('failed', 'incompatible') THEN 1 ELSE 0 END), 0) AS failed,
           coalesce(sum(CASE WHEN t.status = 'overriden' THEN 1 ELSE 0 END), 0) AS overriden
         FROM policy_assignments d LEFT JOIN policy_tasks t ON t.deployment_id = d.id
         WHERE d.view_assignment_id = ? AND d.state = 'active'`,
      ),
      ownUnique: db.prepare(
        `SELECT id FROM policy_assignments WHERE state = 'active' AND agent_id = ? AND policy = ?
           AND (view_assignment_id IS NULL OR view_assignment_id < ?) ORDER BY id LIMIT 1`,
      ),
    };
  }

  insert(row: Omit<ViewAssignmentRow, 'id' | 'state' | 'removed_at'>): number {
    return (this.s.insert.get(row) as { id: number }).id;
  }

  byId(id: number): ViewAssignmentRow | undefined {
    return this.s.byId.get(id) as ViewAssignmentRow | undefined;
  }

  /** A view's assignments, newest first (removed ones too). */
  ofView(viewId: number): ViewAssignmentRow[] {
    return this.s.ofView.all(viewId) as ViewAssignmentRow[];
  }

  activeOfView(viewId: number): ViewAssignmentRow[] {
    return this.s.activeOfView.all(viewId) as ViewAssignmentRow[];
  }

  active(): ViewAssignmentRow[] {
    return this.s.active.all() as ViewAssignmentRow[];
  }

  activeSame(row: Pick<ViewAssignmentRow, 'view_id' | 'policy' | 'item_kind' | 'item_id' | 'value'>): ViewAssignmentRow[] {
    return this.s.activeSame.all(row) as ViewAssignmentRow[];
  }

  markRemoved(id: number, at: string): boolean {
    return this.s.markRemoved.run(at, id).changes > 0;
  }

  /** The device-level rows carrying the assignment to its members now. */
  members(viewAssignmentId: number): DeploymentRow[] {
    return this.s.members.all(viewAssignmentId) as DeploymentRow[];
  }

  member(viewAssignmentId: number, agentId: number): DeploymentRow | undefined {
    return this.s.member.get(viewAssignmentId, agentId) as DeploymentRow | undefined;
  }

  counts(viewAssignmentId: number): ViewAssignmentCounts {
    return this.s.counts.get(viewAssignmentId) as ViewAssignmentCounts;
  }

  /**
   * What beats a view's value of a unique policy on a device: the device's own value, or an earlier
   * view assignment's (a lower id) already carried to it. Its row id, or undefined.
   */
  rankedAbove(agentId: number, policy: string, viewAssignmentId: number): number | undefined {
    return (this.s.ownUnique.get(agentId, policy, viewAssignmentId) as { id: number } | undefined)?.id;
  }
}
