import type { Sql } from '../db/sql.ts';
import type { ServerEvent } from '../../../src-shared/contract/events.ts';

export interface EventRefs {
  entityId?: number | null;
  invitationId?: number | null;
  agentId?: number | null;
  /** The agent's name, for the audit entry's object (not stored with the event). */
  agentName?: string | null;
}

/** A stored event: its type a key of the contract's ServerEvents map, its data that key's shape. */
export type RecordedEvent = ServerEvent;

/** The append-only events table. Lists are newest first. */
export interface EventRepository {
  /** Stores the event; its id. */
  insert(event: Omit<RecordedEvent, 'id'>): Promise<number>;
  forAgent(agentId: number, limit: number): Promise<RecordedEvent[]>;
  forInvitation(invitationId: number, limit: number): Promise<RecordedEvent[]>;
  /** Those after `afterId`. */
  latest(limit: number, afterId: number): Promise<RecordedEvent[]>;
  /** Those after `afterId`, oldest first (the cluster feed's catch-up). */
  after(afterId: number, limit: number): Promise<RecordedEvent[]>;
  /** These ones, oldest first (those that do not exist are left out). */
  byIds(ids: readonly number[]): Promise<RecordedEvent[]>;
  /** The newest event's id, 0 when there is none. */
  maxId(): Promise<number>;
}

/**
 * Where a new event is announced to the other nodes (PostgreSQL only: cluster/feed.ts): a
 * `pg_notify(channel, "<id> <origin>")` in the very statement that inserts it, so the notice is
 * delivered when (and only if) the transaction commits, in commit order. `inserted` is told each
 * id at once, before the commit (the feed knows its own events by it).
 */
export interface EventNotice {
  channel: string;
  origin: string;
  inserted(id: number): void;
}

type EventRow = Omit<RecordedEvent, 'data'> & { data: string | null };

export class SqliteEventRepository implements EventRepository {
  private readonly sql: Sql;
  private readonly notice: EventNotice | undefined;
  private readonly s;

  constructor(sql: Sql, notice?: EventNotice) {
    this.sql = sql;
    this.notice = sql.engine === 'postgres' ? notice : undefined;
    const insert = `INSERT INTO events (at, type, entity_id, invitation_id, agent_id, message, data, actor)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`;
    this.s = {
      insert,
      // PostgreSQL: the notice leaves with the row, at its commit (a rolled-back event is never announced).
      insertNotified: `WITH e AS (${insert}) SELECT id, pg_notify(?, CAST(id AS text) || ' ' || ?) FROM e`,
      after: `SELECT * FROM events WHERE id > ? ORDER BY id LIMIT ?`,
      maxId: `SELECT coalesce(max(id), 0) FROM events`,
      byAgent: `SELECT * FROM events WHERE agent_id = ? ORDER BY id DESC LIMIT ?`,
      byInvitation: `SELECT * FROM events WHERE invitation_id = ? ORDER BY id DESC LIMIT ?`,
      recent: `SELECT * FROM events WHERE id > ? ORDER BY id DESC LIMIT ?`,
    };
  }

  async insert(event: Omit<RecordedEvent, 'id'>): Promise<number> {
    const data = event.data === null ? null : JSON.stringify(event.data);
    const values = [event.at, event.type, event.entity_id, event.invitation_id, event.agent_id, event.message, data, event.actor];
    const notice = this.notice;
    if (!notice) return Number(await this.sql.value<number>(this.s.insert, values));
    const id = Number(await this.sql.value<number>(this.s.insertNotified, [...values, notice.channel, notice.origin]));
    notice.inserted(id);
    return id;
  }

  async after(afterId: number, limit: number): Promise<RecordedEvent[]> {
    return ((await this.sql.all(this.s.after, [afterId, limit])) as EventRow[]).map(parse);
  }

  async byIds(ids: readonly number[]): Promise<RecordedEvent[]> {
    const found: RecordedEvent[] = [];
    for (let start = 0; start < ids.length; start += 500) {
      const chunk = ids.slice(start, start + 500);
      const text = `SELECT * FROM events WHERE id IN (${chunk.map(() => '?').join(', ')}) ORDER BY id`;
      found.push(...((await this.sql.all(text, chunk)) as EventRow[]).map(parse));
    }
    return found.sort((a, b) => a.id - b.id);
  }

  async maxId(): Promise<number> {
    return Number((await this.sql.value<number>(this.s.maxId)) ?? 0);
  }

  async forAgent(agentId: number, limit: number): Promise<RecordedEvent[]> {
    return ((await this.sql.all(this.s.byAgent, [agentId, limit])) as EventRow[]).map(parse);
  }

  async forInvitation(invitationId: number, limit: number): Promise<RecordedEvent[]> {
    return ((await this.sql.all(this.s.byInvitation, [invitationId, limit])) as EventRow[]).map(parse);
  }

  async latest(limit: number, afterId: number): Promise<RecordedEvent[]> {
    return ((await this.sql.all(this.s.recent, [afterId, limit])) as EventRow[]).map(parse);
  }
}

/** A row as its type's event: what `record` stored under that type (the table is written by it alone). */
function parse(row: EventRow): RecordedEvent {
  return { ...row, data: row.data ? JSON.parse(row.data) : null } as RecordedEvent;
}
