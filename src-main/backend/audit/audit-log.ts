import { nowIso } from '../db/database.ts';
import { requestContext, type RequestActor } from './context.ts';
import type { AuditFilter, AuditRepository, AuditRow } from './repository.ts';

export type { AuditRow, AuditFilter };

export interface AuditTarget {
  kind: string | null;
  id: number | null;
  name?: string | null;
}

/**
 * The audit trail: who (an admin, and the API token used), from where, did what to which object.
 * Written with the connection of the change, so inside a unit of work it commits or rolls back
 * with it: a refused or undone change leaves no entry.
 */
export class AuditLog {
  private readonly store: AuditRepository;

  constructor(store: AuditRepository) {
    this.store = store;
  }

  /** Records `action` for the current request's actor; nothing outside an admin request (agents, the server itself). */
  recordForRequest(action: string, message: string, target: AuditTarget): void {
    const context = requestContext.current();
    if (!context?.actor) return;
    this.record(context.actor, context.address, action, message, target);
    context.audited = true;
  }

  /** Records for a known actor (sign-in happens before a request has one); `actor` null: someone unknown. */
  record(actor: RequestActor | null, address: string | null, action: string, message: string, target: AuditTarget): void {
    this.store.insert({
      at: nowIso(),
      account_id: actor?.accountId ?? null,
      actor: actor?.name ?? 'unknown',
      token_id: actor?.tokenId ?? null,
      token_name: actor?.tokenName ?? null,
      role: actor?.role ?? null,
      address,
      action,
      target_kind: target.kind,
      target_id: target.id,
      target_name: target.name ?? null,
      message,
    });
  }

  list(filter: AuditFilter): AuditRow[] {
    return this.store.list(filter);
  }
}
