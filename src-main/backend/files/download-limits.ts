/**
 * Bounds what downloads in progress may cost, whatever their readers do:
 * - at most `maxConcurrent` byte downloads per listener; beyond, a 503 the device can retry;
 * - at most one chunk read ahead per download, held until the socket has taken it (backpressure),
 *   and chunks above the minimum drawn from one shared pool of bytes, so that a thousand stalled
 *   readers cost the pool plus a minimum chunk each, instead of megabytes each.
 */
import { Readable } from 'node:stream';
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
 * Bytes `start`..`end` (inclusive) of an open file, read one chunk at a time and only when the
 * consumer asks: highWaterMark 0 means nothing is read ahead while the socket still holds the last
 * chunk (a pipe asks again only after 'drain'). The pool share of a chunk is given back when the
 * next one is asked for, i.e. once the socket has handed the previous one to the kernel.
 */
export class FileRangeStream extends Readable {
  private position: number;
  private readonly end: number;
  private readonly file: OpenFile;
  private readonly limits: DownloadLimits;
  private pooled = 0;
  /** The buffer of the chunk pushed last, handed back at the next read (null: not to be reused). */
  private last: Buffer | null = null;
  private readonly reuseAbove: number;

  /**
   * `destinationHighWaterMark`: that of the response the stream is piped to. A chunk larger than it
   * makes the response's write return false, so the pipe asks for the next chunk only after
   * 'drain', once the socket has handed every byte of it to the kernel: its buffer may then be
   * reused. Smaller chunks may still be queued when the next is asked for: theirs never are.
   */
  constructor(file: OpenFile, start: number, end: number, limits: DownloadLimits, destinationHighWaterMark = Infinity) {
    super({ highWaterMark: 0 });
    this.file = file;
    this.position = start;
    this.end = end;
    this.limits = limits;
    this.reuseAbove = destinationHighWaterMark;
  }

  override _read(): void {
    this.limits.giveBack(this.pooled);
    this.pooled = 0;
    if (this.last) {
      this.limits.recycle(this.last);
      this.last = null;
    }
    const left = this.end - this.position + 1;
    if (left <= 0) {
      this.push(null);
      return;
    }
    const base = Math.min(MIN_CHUNK, left);
    this.pooled = this.limits.take(Math.min(MAX_CHUNK, left) - base);
    const buffer = this.limits.buffer(base + this.pooled);
    this.file.handle.read(buffer, 0, buffer.length, this.position).then(
      ({ bytesRead }) => {
        if (bytesRead === 0) {
          // The file shrank under us: end early rather than loop; Content-Length tells the client.
          this.destroy(new Error('file ended before the announced length'));
          return;
        }
        this.position += bytesRead;
        if (bytesRead > this.reuseAbove && !this.destroyed) this.last = buffer;
        this.push(bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead));
      },
      (error: Error) => this.destroy(error),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.limits.giveBack(this.pooled);
    this.pooled = 0;
    this.last = null; // cut short: the socket may still hold it
    // The file stays open for the next download of it (open-files.ts); a read still under way
    // finishes first: FileHandle closes only once its operations are done.
    this.file.release();
    callback(error);
  }
}
