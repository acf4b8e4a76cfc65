import { EventEmitter } from 'node:events';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventRefs, EventRepository, RecordedEvent } from './event-repository.ts';

export type { EventRefs, RecordedEvent };

/**
 * The append-only history of what happened (events table) and the live feed of it: every
 * recorded event is also emitted, which is what the admin event stream relays.
 */
export class EventLog {
  private readonly store: EventRepository;
  private readonly work: UnitOfWork;
  private readonly emitter = new EventEmitter();

  constructor(store: EventRepository, work: UnitOfWork) {
    this.store = store;
    this.work = work;
    this.emitter.setMaxListeners(0);
  }

  /** Records an event; inside a unit of work it is emitted only after the commit. */
  record(type: string, message: string, refs: EventRefs = {}, data?: Record<string, unknown>): RecordedEvent {
    const fields = {
      at: nowIso(),
      type,
      entity_id: refs.entityId ?? null,
      invitation_id: refs.invitationId ?? null,
      agent_id: refs.agentId ?? null,
      message,
      data: data ?? null,
    };
    const event: RecordedEvent = { id: this.store.insert(fields), ...fields };
    this.work.afterCommit(() => this.emitter.emit('event', event));
    return event;
  }

  subscribe(listener: (event: RecordedEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  forAgent(agentId: number, limit = 200): RecordedEvent[] {
    return this.store.forAgent(agentId, limit);
  }

  forInvitation(invitationId: number, limit = 200): RecordedEvent[] {
    return this.store.forInvitation(invitationId, limit);
  }

  /** Newest first; `afterId` lets a reconnecting stream catch up. */
  latest(limit = 100, afterId = 0): RecordedEvent[] {
    return this.store.latest(limit, afterId);
  }
}
