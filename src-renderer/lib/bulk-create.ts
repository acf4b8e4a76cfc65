import { chunk, type ImportRow } from './invitation-import.ts';

export interface BulkOutcome<T> {
  created: { row: ImportRow; item: T }[];
  failed: { row: ImportRow; message: string }[];
}

export interface BatchError {
  message: string;
  /** "row N: …" messages, N = position in the batch (1-based). */
  errors: string[];
}

/**
 * Creates rows in batches (the bulk endpoint is all or nothing per request), reporting progress
 * after each batch. A refused batch marks its rows failed — with each row's own reason when the
 * server gave one — and the next batches still run, so one bad row never blocks the rest.
 */
export async function createInBatches<T>(
  rows: ImportRow[],
  send: (batch: ImportRow[]) => Promise<T[]>,
  {
    batchSize = 25,
    onProgress = () => {},
    errorOf = (error: unknown): BatchError => ({ message: error instanceof Error ? error.message : String(error), errors: [] }),
    signal,
  }: {
    batchSize?: number;
    onProgress?: (done: number, total: number) => void;
    errorOf?: (error: unknown) => BatchError;
    signal?: AbortSignal;
  } = {},
): Promise<BulkOutcome<T>> {
  const outcome: BulkOutcome<T> = { created: [], failed: [] };
  let done = 0;
  onProgress(0, rows.length);
  for (const batch of chunk(rows, batchSize)) {
    if (signal?.aborted) {
      for (const row of rows.slice(done)) outcome.failed.push({ row, message: 'Cancelled before it was sent' });
      break;
    }
    try {
      const items = await send(batch);
      batch.forEach((row, i) => {
        const item = items[i];
        if (item !== undefined) outcome.created.push({ row, item });
        else outcome.failed.push({ row, message: 'The server did not return this invitation' });
      });
    } catch (error) {
      const { message, errors } = errorOf(error);
      const own = new Map<number, string[]>();
      for (const text of errors) {
        const match = /^row (\d+): (.*)$/.exec(text);
        if (match) own.set(Number(match[1]), [...(own.get(Number(match[1])) ?? []), match[2]!]);
      }
      batch.forEach((row, i) => {
        const reasons = own.get(i + 1);
        outcome.failed.push({
          row,
          message: reasons ? reasons.join('; ') : own.size ? 'Not created: another row of its batch was refused' : message,
        });
      });
    }
    done += batch.length;
    onProgress(done, rows.length);
  }
  return outcome;
}

/** The most rows one request of the bulk endpoints takes. */
export const BULK_REQUEST_MAX = 5000;

/**
 * Asks the server about any number of rows, in requests of at most `size`; its "row N: …" errors
 * come back numbered as positions in `rows` (1-based), whichever request found them.
 */
export async function validateInChunks<T>(
  rows: T[],
  validate: (chunk: T[]) => Promise<string[]>,
  size = BULK_REQUEST_MAX,
): Promise<string[]> {
  const errors: string[] = [];
  for (const [index, part] of chunk(rows, size).entries()) {
    const offset = index * size;
    for (const text of await validate(part))
      errors.push(text.replace(/^row (\d+):/, (_match, row: string) => `row ${Number(row) + offset}:`));
  }
  return errors;
}
