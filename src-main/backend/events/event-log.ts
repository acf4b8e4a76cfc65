import { EventEmitter } from 'node:events';
import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { LiveEvent } from '../../../src-shared/contract/index.ts';

export interface EventRefs {
  entityId?: number | null;
  invitationId?: number | null;
  agentId?: number | null;
}

/** A recorded event as the admin API and the live stream send it: the contract's LiveEvent. */
export type RecordedEvent = LiveEvent;

interface EventRow extends Omit<RecordedEvent, 'data'> {
  data: string | null;
}

/**
 * The append-only history of what happened (events table) and the live feed of it: every
 * recorded event is also emitted, which is what the admin event stream relays.
 */
export class EventLog {
  private readonly work: UnitOfWork;
  private readonly emitter = new EventEmitter();
  private readonly insert;
  private readonly byAgent;
  private readonly byInvitation;
  private readonly recent;

  constructor(db: Db, work: UnitOfWork) {
    this.work = work;
    this.emitter.setMaxListeners(0);
    this.insert = db.prepare(
      `INSERT INTO events (at, type, entity_id, invitation_id, agent_id, message, data)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    this.byAgent = db.prepare(`SELECT * FROM events WHERE agent_id = ? ORDER BY id DESC LIMIT ?`);
    this.byInvitation = db.prepare(`SELECT * FROM events WHERE invitation_id = ? ORDER BY id DESC LIMIT ?`);
    this.recent = db.prepare(`SELECT * FROM events WHERE id > ? ORDER BY id DESC LIMIT ?`);
  }

  /** Records an event; inside a unit of work it is emitted only after the commit. */
  record(type: string, message: string, refs: EventRefs = {}, data?: Record<string, unknown>): RecordedEvent {
    const at = nowIso();
    const json = data === undefined ? null : JSON.stringify(data);
    const result = this.insert.run(at, type, refs.entityId ?? null, refs.invitationId ?? null, refs.agentId ?? null, message, json);
    const event: RecordedEvent = {
      id: Number(result.lastInsertRowid),
      at,
      type,
      entity_id: refs.entityId ?? null,
      invitation_id: refs.invitationId ?? null,
      agent_id: refs.agentId ?? null,
      message,
      data: data ?? null,
    };
    this.work.afterCommit(() => this.emitter.emit('event', event));
    return event;
  }

  subscribe(listener: (event: RecordedEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  forAgent(agentId: number, limit = 200): RecordedEvent[] {
    return (this.byAgent.all(agentId, limit) as EventRow[]).map(parse);
  }

  forInvitation(invitationId: number, limit = 200): RecordedEvent[] {
    return (this.byInvitation.all(invitationId, limit) as EventRow[]).map(parse);
  }

  /** Newest first; `afterId` lets a reconnecting stream catch up. */
  latest(limit = 100, afterId = 0): RecordedEvent[] {
    return (this.recent.all(afterId, limit) as EventRow[]).map(parse);
  }
}

function parse(row: EventRow): RecordedEvent {
  return { ...row, data: row.data ? (JSON.parse(row.data) as Record<string, unknown>) : null };
}
