// The SQL of policies and deployments assigned to saved views (view_assignments) and of the
// device-level rows that carry each to the view's members (policy_assignments.view_assignment_id).
import type { Sql } from '../db/sql.ts';
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
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      insert: `INSERT INTO view_assignments (entity_id, view_id, policy, value, item_kind, item_id, item_name, destination, remove_on_delete, created_at)
         VALUES (@entity_id, @view_id, @policy, @value, @item_kind, @item_id, @item_name, @destination, @remove_on_delete, @created_at)
         RETURNING id`,
      byId: `SELECT * FROM view_assignments WHERE id = ?`,
      ofView: `SELECT * FROM view_assignments WHERE view_id = ? ORDER BY id DESC`,
      activeOfView: `SELECT * FROM view_assignments WHERE view_id = ? AND state = 'active' ORDER BY id`,
      active: `SELECT * FROM view_assignments WHERE state = 'active' ORDER BY id`,
      activeSame: `SELECT * FROM view_assignments WHERE view_id = @view_id AND state = 'active' AND policy = @policy
           AND item_kind IS @item_kind AND item_id IS @item_id AND value IS @value`,
      markRemoved: `UPDATE view_assignments SET state = 'removed', removed_at = ? WHERE id = ? AND state = 'active'`,
      members: `SELECT * FROM policy_assignments WHERE view_assignment_id = ? AND state = 'active' ORDER BY id`,
      member: `SELECT * FROM policy_assignments WHERE view_assignment_id = ? AND agent_id = ? AND state = 'active' ORDER BY id LIMIT 1`,
      counts: `SELECT count(DISTINCT d.agent_id) AS devices,
           coalesce(sum(CASE WHEN t.status = 'done' THEN 1 ELSE 0 END), 0) AS done,
           coalesce(sum(CASE WHEN t.status IN ('pending', 'received', 'in progress', 'waiting') THEN 1 ELSE 0 END), 0) AS pending,
           coalesce(sum(CASE WHEN t.status IN ('failed', 'incompatible') THEN 1 ELSE 0 END), 0) AS failed,
           coalesce(sum(CASE WHEN t.status = 'overriden' THEN 1 ELSE 0 END), 0) AS overriden
         FROM policy_assignments d LEFT JOIN policy_tasks t ON t.deployment_id = d.id
         WHERE d.view_assignment_id = ? AND d.state = 'active'`,
      ownUnique: `SELECT id FROM policy_assignments WHERE state = 'active' AND agent_id = ? AND policy = ?
           AND (view_assignment_id IS NULL OR view_assignment_id < ?) ORDER BY id LIMIT 1`,
    };
  }

  async insert(row: Omit<ViewAssignmentRow, 'id' | 'state' | 'removed_at'>): Promise<number> {
    return ((await this.sql.get(this.s.insert, row)) as { id: number }).id;
  }

  async byId(id: number): Promise<ViewAssignmentRow | undefined> {
    return (await this.sql.get(this.s.byId, [id])) as ViewAssignmentRow | undefined;
  }

  /** A view's assignments, newest first (removed ones too). */
  async ofView(viewId: number): Promise<ViewAssignmentRow[]> {
    return (await this.sql.all(this.s.ofView, [viewId])) as ViewAssignmentRow[];
  }

  async activeOfView(viewId: number): Promise<ViewAssignmentRow[]> {
    return (await this.sql.all(this.s.activeOfView, [viewId])) as ViewAssignmentRow[];
  }

  async active(): Promise<ViewAssignmentRow[]> {
    return (await this.sql.all(this.s.active)) as ViewAssignmentRow[];
  }

  async activeSame(
    row: Pick<ViewAssignmentRow, 'view_id' | 'policy' | 'item_kind' | 'item_id' | 'value'>,
  ): Promise<ViewAssignmentRow[]> {
    return (await this.sql.all(this.s.activeSame, row)) as ViewAssignmentRow[];
  }

  async markRemoved(id: number, at: string): Promise<boolean> {
    return (await this.sql.run(this.s.markRemoved, [at, id])).changes > 0;
  }

  /** The device-level rows carrying the assignment to its members now. */
  async members(viewAssignmentId: number): Promise<DeploymentRow[]> {
    return (await this.sql.all(this.s.members, [viewAssignmentId])) as DeploymentRow[];
  }

  async member(viewAssignmentId: number, agentId: number): Promise<DeploymentRow | undefined> {
    return (await this.sql.get(this.s.member, [viewAssignmentId, agentId])) as DeploymentRow | undefined;
  }

  async counts(viewAssignmentId: number): Promise<ViewAssignmentCounts> {
    return (await this.sql.get(this.s.counts, [viewAssignmentId])) as ViewAssignmentCounts;
  }

  /**
   * What beats a view's value of a unique policy on a device: the device's own value, or an earlier
   * view assignment's (a lower id) already carried to it. Its row id, or undefined.
   */
  async rankedAbove(agentId: number, policy: string, viewAssignmentId: number): Promise<number | undefined> {
    return ((await this.sql.get(this.s.ownUnique, [agentId, policy, viewAssignmentId])) as { id: number } | undefined)?.id;
  }
}
