import { nowIso } from '../db/database.ts';
import { requestContext, type RequestActor } from './context.ts';
import type { FieldChanges } from './redact.ts';
import type { AuditFilter, AuditRepository, AuditRow } from './repository.ts';

export type { AuditRow, AuditFilter, FieldChanges };

export interface AuditTarget {
  kind: string | null;
  id: number | null;
  name?: string | null;
}

/** How an actor reads in a history: the person, or the API token and its role ("token ci-bot (admin)"). */
export function actorLabel(actor: RequestActor): string {
  return actor.tokenName !== null ? `token ${actor.tokenName} (${actor.role})` : actor.name;
}

/**
 * The audit trail: who (an admin, and the API token used), from where, did what to which object,
 * and which fields changed (before and after, secrets redacted: audit/redact.ts). Written with the
 * connection of the change, so inside a unit of work it commits or rolls back with it: a refused
 * or undone change leaves no entry.
 */
export class AuditLog {
  private readonly store: AuditRepository;

  constructor(store: AuditRepository) {
    this.store = store;
  }

  /** Records `action` for the current request's actor; nothing outside an admin request (agents, the server itself). */
  async recordForRequest(
    action: string,
    message: string,
    target: AuditTarget,
    changes: FieldChanges | null = null,
  ): Promise<void> {
    const context = requestContext.current();
    // A bulk job's work: the job's own entry (written when it started) stands for every device.
    if (!context?.actor || context.jobId !== undefined) return;
    await this.record(context.actor, context.address, action, message, target, changes);
    context.audited = true;
  }

  /** Records for a known actor (sign-in happens before a request has one); `actor` null: someone unknown. */
  async record(
    actor: RequestActor | null,
    address: string | null,
    action: string,
    message: string,
    target: AuditTarget,
    changes: FieldChanges | null = null,
  ): Promise<void> {
    await this.store.insert({
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
      changes,
    });
  }

  list(filter: AuditFilter): Promise<AuditRow[]> {
    return this.store.list(filter);
  }

  /** Every entry the filter matches (no limit), newest first, read as they are used: an export's rows. */
  iterate(filter: Omit<AuditFilter, 'limit'>): AsyncIterableIterator<AuditRow> {
    return this.store.iterate(filter);
  }
}
