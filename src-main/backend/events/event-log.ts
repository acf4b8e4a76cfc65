import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventRefs, EventRepository, RecordedEvent } from './event-repository.ts';
import { actorLabel, type AuditLog, type AuditTarget } from '../audit/audit-log.ts';
import { requestContext } from '../audit/context.ts';
import { changedFields, redactFields } from '../audit/redact.ts';
import type { EventDataArgs, ServerEvent, ServerEventType } from '../../../src-shared/contract/events.ts';

export type { EventRefs, RecordedEvent };

/**
 * The append-only history of what happened (events table) and the live feed of it: every
 * recorded event is also emitted, which is what the admin event stream relays.
 */
export class EventLog {
  private readonly store: EventRepository;
  private readonly work: UnitOfWork;
  /** Told of each event once it is committed, in order; a listener's promise is awaited before the next. */
  private readonly listeners = new Set<(event: RecordedEvent) => unknown>();
  private readonly audit: Pick<AuditLog, 'recordForRequest'> | undefined;

  /** With `audit`, what an admin request records is also an audit entry of its actor, in the same transaction. */
  constructor(store: EventRepository, work: UnitOfWork, audit?: Pick<AuditLog, 'recordForRequest'>) {
    this.store = store;
    this.work = work;
    this.audit = audit;
  }

  /**
   * Records an event; inside a unit of work it is emitted only after the commit. `type` is a key of
   * the contract's ServerEvents map and `data` its shape there (optional only where that is null).
   */
  async record<K extends ServerEventType>(
    type: K,
    message: string,
    refs: EventRefs = {},
    ...[data]: EventDataArgs<K>
  ): Promise<ServerEvent<K>> {
    // A change's before/after (ChangeData) is kept without its secrets, here and in the audit trail.
    const change = changeOf(data);
    const kept = change ? { ...data, before: change.before, after: change.after } : (data ?? null);
    const actor = requestContext.current()?.actor ?? null;
    const fields = {
      at: nowIso(),
      type,
      entity_id: refs.entityId ?? null,
      invitation_id: refs.invitationId ?? null,
      agent_id: refs.agentId ?? null,
      message,
      data: kept,
      actor: actor ? actorLabel(actor) : null,
    } as Omit<ServerEvent<K>, 'id'>;
    const event = { id: await this.store.insert(fields), ...fields } as ServerEvent<K>;
    await this.audit?.recordForRequest(
      type,
      message,
      targetOf(type, refs, data ?? undefined),
      change ? changedFields(change.before, change.after) : null,
    );
    await this.work.afterCommit(() => this.emit(event as RecordedEvent));
    return event;
  }

  /** `listener` may return a promise: the event's transaction is done once it settles. */
  subscribe(listener: (event: RecordedEvent) => unknown): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async emit(event: RecordedEvent): Promise<void> {
    for (const listener of [...this.listeners]) await listener(event);
  }

  forAgent(agentId: number, limit = 200): Promise<RecordedEvent[]> {
    return this.store.forAgent(agentId, limit);
  }

  forInvitation(invitationId: number, limit = 200): Promise<RecordedEvent[]> {
    return this.store.forInvitation(invitationId, limit);
  }

  /** Newest first; `afterId` lets a reconnecting stream catch up. */
  latest(limit = 100, afterId = 0): Promise<RecordedEvent[]> {
    return this.store.latest(limit, afterId);
  }
}

/** The data's before/after, redacted, when it carries a change (the contract's ChangeData). */
function changeOf(data: object | null | undefined) {
  if (!data || !('before' in data) || !('after' in data)) return null;
  const side = (value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) ? redactFields(value as Record<string, unknown>) : null;
  return { before: side(data.before), after: side(data.after) };
}

/** The object an event is about: its kind from the type (`agent.locked` → agent), its id and name from the refs or the data. */
function targetOf(type: string, refs: EventRefs, fields: object | undefined): AuditTarget {
  const data = fields as Record<string, unknown> | undefined;
  const kind = type.split('.')[0] ?? null;
  const number = (value: unknown) => (typeof value === 'number' && Number.isSafeInteger(value) ? value : null);
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  if (refs.agentId != null)
    return { kind: 'agent', id: refs.agentId, name: refs.agentName ?? text(data?.name) ?? text(data?.serial) };
  if (refs.invitationId != null) return { kind: 'invitation', id: refs.invitationId, name: text(data?.email) };
  if (number(data?.token_id) !== null) return { kind: 'api_token', id: number(data?.token_id) };
  if (number(data?.account_id) !== null) {
    return { kind: 'account', id: number(data?.account_id), name: text(data?.email) ?? text(data?.name) };
  }
  const id = number(data?.id) ?? number(data?.[`${kind}_id`]) ?? null;
  return { kind, id, name: text(data?.name) ?? text(data?.email) };
}
