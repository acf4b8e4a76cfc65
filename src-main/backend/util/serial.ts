/**
 * Runs pieces of asynchronous work one after the other, in the order they were asked for: what a
 * synchronous read-then-write used to get for free (nothing else ran in between) when the reads
 * and writes now await. Within one process only; what must hold across processes is in the SQL.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.catch(() => {});
    return result;
  }
}
