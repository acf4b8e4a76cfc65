import type { Db } from './database.ts';

/**
 * One SQLite transaction around a piece of work, and what must wait for its commit: events are
 * emitted to the live stream only once the rows they describe are durable, and never if the work
 * rolls back. Nested `run` calls join the outer transaction.
 */
export class UnitOfWork {
  private readonly db: Db;
  private pending: Array<() => void> = [];
  /** Wrapped once: better-sqlite3 builds four functions for each `transaction()` call. */
  private readonly transaction: <T>(work: () => T) => T;

  constructor(db: Db) {
    this.db = db;
    this.transaction = db.transaction((work: () => unknown) => work()) as <T>(work: () => T) => T;
  }

  run<T>(work: () => T): T {
    const outer = !this.db.inTransaction;
    try {
      const result = this.transaction(work);
      if (outer) this.flush();
      return result;
    } catch (error) {
      if (outer) this.pending = [];
      throw error;
    }
  }

  /** Runs `effect` after the open transaction commits, or now when none is open. */
  afterCommit(effect: () => void): void {
    if (this.db.inTransaction) this.pending.push(effect);
    else effect();
  }

  private flush(): void {
    const effects = this.pending;
    this.pending = [];
    for (const effect of effects) effect();
  }
}
