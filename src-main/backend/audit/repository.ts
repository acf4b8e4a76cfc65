import type { Sql, SqlValue } from '../db/sql.ts';
import type { FieldChanges } from './redact.ts';

export interface AuditRow {
  id: number;
  at: string;
  account_id: number | null;
  actor: string;
  token_id: number | null;
  token_name: string | null;
  role: string | null;
  address: string | null;
  action: string;
  target_kind: string | null;
  target_id: number | null;
  target_name: string | null;
  message: string;
  /** The changed fields, before and after (secrets redacted); null when the action changed no field (a sign-in, a command). */
  changes: FieldChanges | null;
}

export interface AuditFilter {
  /** Matches the actor's name or email, or the token's name (case-insensitive, part of it). */
  actor?: string | undefined;
  /** An action, or a prefix ending in `.` (`agent.`). */
  action?: string | undefined;
  targetKind?: string | undefined;
  targetId?: number | undefined;
  /** Part of the object's name (case-insensitive). */
  targetName?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit: number;
  beforeId?: number | undefined;
}

/** The append-only audit_log table; newest first. */
export interface AuditRepository {
  insert(row: Omit<AuditRow, 'id'>): Promise<number>;
  list(filter: AuditFilter): Promise<AuditRow[]>;
  /** All matching rows, newest first, read a page at a time (no statement stays open between pages). */
  iterate(filter: Omit<AuditFilter, 'limit'>): AsyncIterableIterator<AuditRow>;
}

type StoredRow = Omit<AuditRow, 'changes'> & { changes: string | null };
const parse = (row: StoredRow): AuditRow => ({
  ...row,
  changes: row.changes === null ? null : (JSON.parse(row.changes) as FieldChanges),
});

/** Rows an export reads at a time: memory stays flat whatever the trail's length. */
const PAGE = 500;

export class SqliteAuditRepository implements AuditRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      insert: `INSERT INTO audit_log (at, account_id, actor, token_id, token_name, role, address, action, target_kind, target_id, target_name, message, changes)
         VALUES (@at, @account_id, @actor, @token_id, @token_name, @role, @address, @action, @target_kind, @target_id, @target_name, @message, @changes) RETURNING id`,
    };
  }

  async insert(row: Omit<AuditRow, 'id'>): Promise<number> {
    return Number(
      await this.sql.value<number>(this.s.insert, { ...row, changes: row.changes === null ? null : JSON.stringify(row.changes) }),
    );
  }

  async *iterate(filter: Omit<AuditFilter, 'limit'>): AsyncIterableIterator<AuditRow> {
    let beforeId = filter.beforeId;
    for (;;) {
      const page = await this.list({ ...filter, beforeId, limit: PAGE });
      yield* page;
      if (page.length < PAGE) return;
      beforeId = page.at(-1)!.id;
    }
  }

  async list(filter: AuditFilter): Promise<AuditRow[]> {
    const where: string[] = [];
    const args: Record<string, SqlValue> = { limit: filter.limit };
    if (filter.actor) {
      where.push(`(instr(lower(actor), lower(@actor)) > 0 OR instr(lower(coalesce(token_name, '')), lower(@actor)) > 0
        OR account_id IN (SELECT id FROM admin_accounts WHERE email = @actor COLLATE NOCASE))`);
      args.actor = filter.actor;
    }
    if (filter.action) {
      if (filter.action.endsWith('.')) {
        where.push(`substr(action, 1, length(@action)) = @action`);
      } else where.push(`action = @action`);
      args.action = filter.action;
    }
    if (filter.targetKind) {
      where.push(`target_kind = @targetKind`);
      args.targetKind = filter.targetKind;
    }
    if (filter.targetId !== undefined) {
      where.push(`target_id = @targetId`);
      args.targetId = filter.targetId;
    }
    if (filter.targetName) {
      where.push(`instr(lower(coalesce(target_name, '')), lower(@targetName)) > 0`);
      args.targetName = filter.targetName;
    }
    if (filter.since) {
      where.push(`at >= @since`);
      args.since = filter.since;
    }
    if (filter.until) {
      where.push(`at < @until`);
      args.until = filter.until;
    }
    if (filter.beforeId !== undefined) {
      where.push(`id < @beforeId`);
      args.beforeId = filter.beforeId;
    }
    const sql = `SELECT * FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
    return (await this.sql.all<StoredRow>(sql, args)).map(parse);
  }
}
