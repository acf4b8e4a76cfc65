import { AsyncLocalStorage } from 'node:async_hooks';
import type { Sql } from './sql.ts';

type Effect = () => unknown;

/** One outermost transaction's effects, in the order they were asked for. */
interface Pending {
  effects: Effect[];
  /** Committed (effects may run), rolled back (dropped), or still open. */
  state: 'open' | 'committed' | 'rolled back';
}

/**
 * One transaction around a piece of work, and what must wait for its commit: events are emitted to
 * the live stream only once the rows they describe are durable, and never if the work rolls back.
 * Nested `run` calls join the outer transaction. Each outermost transaction keeps its own effects
 * (in its async context: two requests interleave), and effects leave in commit order, one after
 * the other, each awaited: `run` returns once its effects are done (an event's listeners, such as
 * the deployments following a device's move, have done their work before the request answers).
 */
export class UnitOfWork {
  private readonly sql: Sql;
  private readonly current = new AsyncLocalStorage<Pending>();
  /** Transactions whose work has finished, oldest first: their effects leave in this order. */
  private readonly committing: Pending[] = [];
  /** The effects being run, one flush after the other. */
  private flushed: Promise<void> = Promise.resolve();
  /** Set while effects run: a transaction an effect makes runs its own effects at once (no waiting on itself). */
  private readonly inEffect = new AsyncLocalStorage<true>();

  constructor(sql: Sql) {
    this.sql = sql;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    const open = this.current.getStore();
    if (open?.state === 'open' && this.sql.inTransaction()) return this.sql.transaction(work);
    const pending: Pending = { effects: [], state: 'open' };
    let queued = false;
    try {
      const result = await this.sql.transaction(() =>
        this.current.run(pending, async () => {
          const value = await work();
          // Queued as the last thing inside the transaction: the order of commits.
          this.committing.push(pending);
          queued = true;
          return value;
        }),
      );
      pending.state = 'committed';
      return result;
    } catch (error) {
      pending.state = 'rolled back';
      throw error;
    } finally {
      if (!queued) pending.state = 'rolled back';
      await this.flush();
    }
  }

  /** Runs `effect` after the open transaction commits (queued: resolves at once), or now when none is open. */
  async afterCommit(effect: Effect): Promise<void> {
    const open = this.current.getStore();
    if (open?.state === 'open' && this.sql.inTransaction()) open.effects.push(effect);
    else await effect();
  }

  /** Runs the effects of every committed transaction at the head of the line, in order; drops rolled-back ones. */
  private flush(): Promise<void> {
    if (this.inEffect.getStore()) return this.drain();
    const flushing = this.flushed.then(() => this.inEffect.run(true, () => this.drain()));
    this.flushed = flushing.catch(() => {});
    return flushing;
  }

  private async drain(): Promise<void> {
    while (this.committing.length > 0) {
      const head = this.committing[0]!;
      if (head.state === 'open') return;
      this.committing.shift();
      if (head.state !== 'committed') continue;
      for (const effect of head.effects.splice(0)) await effect();
    }
  }
}
