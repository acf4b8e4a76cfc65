/**
 * Bounds what downloads in progress may cost, whatever their readers do:
 * - at most `maxConcurrent` byte downloads per listener; beyond, a 503 the device can retry;
 * - at most one chunk read ahead per download, held until the socket has taken it (backpressure),
 *   and chunks above the minimum drawn from one shared pool of bytes, so that a thousand stalled
 *   readers cost the pool plus a minimum chunk each, instead of megabytes each.
 */
import { readSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { OpenFiles, type OpenFile } from './open-files.ts';

/**
 * Bytes read from disk (and written to the socket) at a time. Node's default of 64 KiB made a
 * 1 MiB range cost 16 reads and 16 socket writes: with 1 MiB the server spends about half the CPU
 * per byte sent (bench: downloads). Chunks above MIN_CHUNK come from the shared pool.
 */
export const MAX_CHUNK = 1024 * 1024;
export const MIN_CHUNK = 64 * 1024;

export interface DownloadLimitOptions {
  /** Byte downloads in progress at once on the listener. */
  maxConcurrent: number;
  /** Bytes of read-ahead shared by every download above their MIN_CHUNK each. */
  poolBytes: number;
  /** The descriptors the downloads' open files take from (http/socket-limits.ts); none: only maxConcurrent. */
  descriptors?: { canAcquire(): boolean; acquire(): void; release(): void } | undefined;
}

export const DEFAULT_DOWNLOAD_LIMITS: DownloadLimitOptions = { maxConcurrent: 1024, poolBytes: 32 * 1024 * 1024 };

export class DownloadLimits {
  readonly maxConcurrent: number;
  private poolLeft: number;
  private active = 0;
  private readonly descriptors: DownloadLimitOptions['descriptors'];
  /** Stored files kept open between the downloads that read them (open-files.ts). */
  readonly files = new OpenFiles();

  constructor(options: DownloadLimitOptions = DEFAULT_DOWNLOAD_LIMITS) {
    this.maxConcurrent = options.maxConcurrent;
    this.poolLeft = options.poolBytes;
    this.descriptors = options.descriptors;
  }

  get inProgress(): number {
    return this.active;
  }

  /** Bytes of the shared pool no download holds now. */
  get poolFree(): number {
    return this.poolLeft;
  }

  /** A slot for one download, or null when all are taken; `release` once the response is over. */
  acquire(): { release(): void } | null {
    if (this.active >= this.maxConcurrent) return null;
    if (this.descriptors && !this.descriptors.canAcquire()) return null;
    this.descriptors?.acquire();
    this.active++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        this.descriptors?.release();
      },
    };
  }

  /** Up to `bytes` from the pool (maybe 0); give back what was taken with `giveBack`. */
  take(bytes: number): number {
    const taken = Math.max(0, Math.min(bytes, this.poolLeft));
    this.poolLeft -= taken;
    return taken;
  }

  giveBack(bytes: number): void {
    this.poolLeft += bytes;
  }

  /**
   * A buffer of `size` bytes for one chunk: one handed back by an earlier chunk when there is one
   * of that size (MAX_CHUNK, MIN_CHUNK: nearly every chunk), else a new one. Before, every chunk
   * was a new 1 MiB buffer: a GiB sent made 1,024 of them for the garbage collector, and the
   * collector took more of the server's CPU than the reads (bench: downloads, docs/benchmarks.md).
   */
  buffer(size: number): Buffer {
    const shelf = this.shelfOf(size);
    return shelf?.pop() ?? Buffer.allocUnsafeSlow(size);
  }

  /** Hands back a chunk's buffer once the socket no longer needs it (see FileRangeStream). */
  recycle(buffer: Buffer): void {
    const shelf = this.shelfOf(buffer.length);
    if (shelf && shelf.length * buffer.length < SHELF_BYTES) shelf.push(buffer);
  }

  private shelfOf(size: number): Buffer[] | undefined {
    return size === MAX_CHUNK ? this.largeShelf : size === MIN_CHUNK ? this.smallShelf : undefined;
  }

  private readonly largeShelf: Buffer[] = [];
  private readonly smallShelf: Buffer[] = [];
}

/** The most each shelf of spare buffers keeps (idle memory after a burst of downloads). */
const SHELF_BYTES = 8 * MAX_CHUNK;

/**
 * Writes bytes `start`..`end` (inclusive) of an open file to `response`, whose status and headers
 * are set, straight from the file to the response with no stream in between (a Readable piped into
 * the response cost more than the rest of a 1 MiB range's handling: bench downloads).
 *
 * One chunk at a time: the next chunk is read only once the response has handed the previous one
 * to the kernel ('drain' after a write that filled it), so each download holds at most one chunk,
 * and that chunk's buffer can be reused by the next one. A chunk above MIN_CHUNK takes its excess
 * from the limits' shared pool, given back at the next read or when the response is over.
 *
 * Reads are synchronous (`pread` on the event loop): the package a deployment sends is in the page
 * cache, where a 1 MiB read is a copy of ~0.1 ms, and the threadpool's round trip (a thread woken,
 * its result queued back to the loop) cost the server more CPU than the copy itself. A file not in
 * the cache holds the loop for a disk read, as nginx's worker is held in its default set-up.
 *
 * `first` is the first chunk, read by `readFirstChunk` before any header was set (so that a read
 * error can still become an error answer). Returns once the first chunk is written; the rest
 * follows on 'drain'. A read error later destroys the response (the client sees it cut short).
 */
export function writeFileRange(response: ServerResponse, first: Chunk, end: number, limits: DownloadLimits): void {
  const file = first.file;
  const reuseAbove = response.writableHighWaterMark;
  /** The chunk to write next (read, not yet written). */
  let chunk: Chunk | null = first;
  /** Pool bytes held by the chunk written last, given back at the next read. */
  let pooled = 0;
  /** The buffer of a chunk the socket may still hold: recycled once it has 'drain'ed or 'finish'ed. */
  let inFlight: Buffer | null = null;
  let over = false;
  const stop = () => {
    if (over) return;
    over = true;
    limits.giveBack(pooled + (chunk?.pooled ?? 0));
    pooled = 0;
    chunk = null;
    response.off('drain', next);
    file.release();
  };
  response.once('finish', () => {
    if (inFlight) limits.recycle(inFlight);
    inFlight = null;
    stop();
  });
  // Cut short (the client gone): the socket may still hold the last buffer, which is not reused.
  response.once('close', stop);
  // Already closed (the client hung up before this was called): 'close' has come and gone, and a
  // write would wait for a 'drain' that never comes. Give back the file and the first chunk's pool bytes.
  if (response.destroyed) {
    stop();
    limits.recycle(first.buffer);
    return;
  }

  function next(): void {
    if (over) return;
    if (inFlight) limits.recycle(inFlight);
    inFlight = null;
    for (;;) {
      let current: Chunk | null = chunk;
      if (!current) {
        limits.giveBack(pooled);
        pooled = 0;
        try {
          current = readChunk(file, position, end, limits);
        } catch (error) {
          response.destroy(error as Error);
          return;
        }
      }
      chunk = null;
      pooled = current.pooled;
      position = current.next;
      const reuse = current.bytes.length > reuseAbove;
      if (position > end) {
        if (reuse) inFlight = current.buffer;
        response.end(current.bytes);
        return;
      }
      if (!response.write(current.bytes)) {
        // Larger than the response's high-water mark: 'drain' comes once the socket sent all of it.
        if (reuse) inFlight = current.buffer;
        response.once('drain', next);
        return;
      }
      // Written without filling the response (a small chunk): its buffer may still be queued.
    }
  }
  let position = first.next;
  next();
}

/** One chunk read from a file: `bytes` (a view of `buffer`), and where the next one starts. */
export interface Chunk {
  file: OpenFile;
  buffer: Buffer;
  bytes: Buffer;
  next: number;
  /** Bytes of the shared pool this chunk took. */
  pooled: number;
}

/**
 * Reads the chunk of `file` starting at `position` (through `end` at most). Throws the read's error,
 * or an Error when the file ended before `end` (it shrank under us: Content-Length tells the client).
 */
export function readChunk(file: OpenFile, position: number, end: number, limits: DownloadLimits): Chunk {
  const left = end - position + 1;
  const base = Math.min(MIN_CHUNK, left);
  const pooled = limits.take(Math.min(MAX_CHUNK, left) - base);
  const buffer = limits.buffer(base + pooled);
  let bytesRead: number;
  try {
    bytesRead = readSync(file.handle.fd, buffer, 0, buffer.length, position);
    if (bytesRead === 0) throw new Error('file ended before the announced length');
  } catch (error) {
    limits.giveBack(pooled);
    throw error;
  }
  return {
    file,
    buffer,
    bytes: bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead),
    next: position + bytesRead,
    pooled,
  };
}
