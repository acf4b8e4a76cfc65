import type { Db } from '../db/database.ts';
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
  insert(event: Omit<RecordedEvent, 'id'>): number;
  forAgent(agentId: number, limit: number): RecordedEvent[];
  forInvitation(invitationId: number, limit: number): RecordedEvent[];
  /** Those after `afterId`. */
  latest(limit: number, afterId: number): RecordedEvent[];
}

type EventRow = Omit<RecordedEvent, 'data'> & { data: string | null };

export class SqliteEventRepository implements EventRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO events (at, type, entity_id, invitation_id, agent_id, message, data, actor)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      byAgent: db.prepare(`SELECT * FROM events WHERE agent_id = ? ORDER BY id DESC LIMIT ?`),
      byInvitation: db.prepare(`SELECT * FROM events WHERE invitation_id = ? ORDER BY id DESC LIMIT ?`),
      recent: db.prepare(`SELECT * FROM events WHERE id > ? ORDER BY id DESC LIMIT ?`),
    };
  }

  insert(event: Omit<RecordedEvent, 'id'>): number {
    const data = event.data === null ? null : JSON.stringify(event.data);
    const result = this.s.insert.run(
      event.at,
      event.type,
      event.entity_id,
      event.invitation_id,
      event.agent_id,
      event.message,
      data,
      event.actor,
    );
    return Number(result.lastInsertRowid);
  }

  forAgent(agentId: number, limit: number): RecordedEvent[] {
    return (this.s.byAgent.all(agentId, limit) as EventRow[]).map(parse);
  }

  forInvitation(invitationId: number, limit: number): RecordedEvent[] {
    return (this.s.byInvitation.all(invitationId, limit) as EventRow[]).map(parse);
  }

  latest(limit: number, afterId: number): RecordedEvent[] {
    return (this.s.recent.all(afterId, limit) as EventRow[]).map(parse);
  }
}

/** A row as its type's event: what `record` stored under that type (the table is written by it alone). */
function parse(row: EventRow): RecordedEvent {
  return { ...row, data: row.data ? JSON.parse(row.data) : null } as RecordedEvent;
}
