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
}

type EventRow = Omit<RecordedEvent, 'data'> & { data: string | null };

export class SqliteEventRepository implements EventRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      insert: `INSERT INTO events (at, type, entity_id, invitation_id, agent_id, message, data, actor)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      byAgent: `SELECT * FROM events WHERE agent_id = ? ORDER BY id DESC LIMIT ?`,
      byInvitation: `SELECT * FROM events WHERE invitation_id = ? ORDER BY id DESC LIMIT ?`,
      recent: `SELECT * FROM events WHERE id > ? ORDER BY id DESC LIMIT ?`,
    };
  }

  async insert(event: Omit<RecordedEvent, 'id'>): Promise<number> {
    const data = event.data === null ? null : JSON.stringify(event.data);
    const id = await this.sql.value<number>(this.s.insert, [
      event.at,
      event.type,
      event.entity_id,
      event.invitation_id,
      event.agent_id,
      event.message,
      data,
      event.actor,
    ]);
    return Number(id);
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
