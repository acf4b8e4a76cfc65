import { AsyncResource } from 'node:async_hooks';

/**
 * Group commit for many small writes that arrive in bursts (a fleet answering one bulk ping): an
 * item added while a write is under way is written by the next one, together with everything that
 * arrived meanwhile, so a burst of N items costs a handful of transactions instead of N. An item
 * arriving alone is written at once (on the next turn of the event loop): no delay at rest.
 * `add` resolves once the write holding the item has committed, and rejects with its error. The
 * writes run in the context the group was made in (never in the context of whoever added first:
 * one caller's request context must not leak into the others' writes).
 */
export class GroupWrite<T> {
  private readonly write: (items: T[]) => Promise<void>;
  private readonly max: number;
  private queue: { item: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private draining = false;
  private readonly start: () => void;

  constructor(write: (items: T[]) => Promise<void>, max = 500) {
    this.write = write;
    this.max = max;
    this.start = AsyncResource.bind(() => void setImmediate(() => void this.drain()));
  }

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.draining) return;
      this.draining = true;
      this.start();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.max);
      try {
        await this.write(batch.map((entry) => entry.item));
        for (const entry of batch) entry.resolve();
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.draining = false;
  }
}
