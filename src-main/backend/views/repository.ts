// The SQL of saved device views (device_views): a name unique per entity (case-insensitively, by
// its lower-cased key), an expression of the --where language, who saved it and when.
import type { Sql } from '../db/sql.ts';

export interface ViewRow {
  id: number;
  entity_id: number;
  name: string;
  where_expr: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface ViewRepository {
  list(entityId: number): Promise<ViewRow[]>;
  byId(id: number): Promise<ViewRow | undefined>;
  byName(entityId: number, name: string): Promise<ViewRow | undefined>;
  insert(row: Omit<ViewRow, 'id' | 'updated_at'>): Promise<number>;
  update(id: number, name: string, where: string, at: string): Promise<void>;
  remove(id: number): Promise<void>;
  /** Policies and deployments assigned to the view and in force. */
  activeAssignments(viewId: number): Promise<number>;
}

/** The lower-cased name: unique per entity. */
export const nameKey = (name: string): string => name.trim().toLowerCase();

export class SqliteViewRepository implements ViewRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      list: `SELECT id, entity_id, name, where_expr, created_by, created_at, updated_at FROM device_views WHERE entity_id = ? ORDER BY name_key`,
      byId: `SELECT id, entity_id, name, where_expr, created_by, created_at, updated_at FROM device_views WHERE id = ?`,
      byName: `SELECT id, entity_id, name, where_expr, created_by, created_at, updated_at FROM device_views WHERE entity_id = ? AND name_key = ?`,
      insert: `INSERT INTO device_views (entity_id, name, name_key, where_expr, created_by, created_at, updated_at)
         VALUES (@entity_id, @name, @name_key, @where_expr, @created_by, @created_at, @created_at) RETURNING id`,
      update: `UPDATE device_views SET name = ?, name_key = ?, where_expr = ?, updated_at = ? WHERE id = ?`,
      remove: `DELETE FROM device_views WHERE id = ?`,
      removeAssignments: `DELETE FROM view_assignments WHERE view_id = ? AND state = 'removed'`,
      activeAssignments: `SELECT count(*) AS n FROM view_assignments WHERE view_id = ? AND state = 'active'`,
    };
  }

  async list(entityId: number): Promise<ViewRow[]> {
    return (await this.sql.all(this.s.list, [entityId])) as ViewRow[];
  }

  async byId(id: number): Promise<ViewRow | undefined> {
    return (await this.sql.get(this.s.byId, [id])) as ViewRow | undefined;
  }

  async byName(entityId: number, name: string): Promise<ViewRow | undefined> {
    return (await this.sql.get(this.s.byName, [entityId, nameKey(name)])) as ViewRow | undefined;
  }

  async insert(row: Omit<ViewRow, 'id' | 'updated_at'>): Promise<number> {
    return ((await this.sql.get(this.s.insert, { ...row, name_key: nameKey(row.name) })) as { id: number }).id;
  }

  async update(id: number, name: string, where: string, at: string): Promise<void> {
    await this.sql.run(this.s.update, [name, nameKey(name), where, at, id]);
  }

  async remove(id: number): Promise<void> {
    // Assignments it had, all removed by now (the service refuses while one is in force), go with it.
    await this.sql.run(this.s.removeAssignments, [id]);
    await this.sql.run(this.s.remove, [id]);
  }

  async activeAssignments(viewId: number): Promise<number> {
    return ((await this.sql.get(this.s.activeAssignments, [viewId])) as { n: number }).n;
  }
}
