// The SQL of saved device views (device_views): a name unique per entity (case-insensitively, by
// its lower-cased key), an expression of the --where language, who saved it and when.
import type { Db } from '../db/database.ts';

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
  list(entityId: number): ViewRow[];
  byId(id: number): ViewRow | undefined;
  byName(entityId: number, name: string): ViewRow | undefined;
  insert(row: Omit<ViewRow, 'id' | 'updated_at'>): number;
  update(id: number, name: string, where: string, at: string): void;
  remove(id: number): void;
  /** Policies and deployments assigned to the view and in force. */
  activeAssignments(viewId: number): number;
}

/** The lower-cased name: unique per entity. */
export const nameKey = (name: string): string => name.trim().toLowerCase();

export class SqliteViewRepository implements ViewRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      list: db.prepare(
        `SELECT id, entity_id, name, where_expr, created_by, created_at, updated_at FROM device_views WHERE entity_id = ? ORDER BY name_key`,
      ),
      byId: db.prepare(
        `SELECT id, entity_id, name, where_expr, created_by, created_at, updated_at FROM device_views WHERE id = ?`,
      ),
      byName: db.prepare(
        `SELECT id, entity_id, name, where_expr, created_by, created_at, updated_at FROM device_views WHERE entity_id = ? AND name_key = ?`,
      ),
      insert: db.prepare(
        `INSERT INTO device_views (entity_id, name, name_key, where_expr, created_by, created_at, updated_at)
         VALUES (@entity_id, @name, @name_key, @where_expr, @created_by, @created_at, @created_at) RETURNING id`,
      ),
      update: db.prepare(`UPDATE device_views SET name = ?, name_key = ?, where_expr = ?, updated_at = ? WHERE id = ?`),
      remove: db.prepare(`DELETE FROM device_views WHERE id = ?`),
      removeAssignments: db.prepare(`DELETE FROM view_assignments WHERE view_id = ? AND state = 'removed'`),
      activeAssignments: db.prepare(`SELECT count(*) AS n FROM view_assignments WHERE view_id = ? AND state = 'active'`),
    };
  }

  list(entityId: number): ViewRow[] {
    return this.s.list.all(entityId) as ViewRow[];
  }

  byId(id: number): ViewRow | undefined {
    return this.s.byId.get(id) as ViewRow | undefined;
  }

  byName(entityId: number, name: string): ViewRow | undefined {
    return this.s.byName.get(entityId, nameKey(name)) as ViewRow | undefined;
  }

  insert(row: Omit<ViewRow, 'id' | 'updated_at'>): number {
    return (this.s.insert.get({ ...row, name_key: nameKey(row.name) }) as { id: number }).id;
  }

  update(id: number, name: string, where: string, at: string): void {
    this.s.update.run(name, nameKey(name), where, at, id);
  }

  remove(id: number): void {
    // Assignments it had, all removed by now (the service refuses while one is in force), go with it.
    this.s.removeAssignments.run(id);
    this.s.remove.run(id);
  }

  activeAssignments(viewId: number): number {
    return (this.s.activeAssignments.get(viewId) as { n: number }).n;
  }
}
