/**
 * Stored files kept open between the downloads that read them. A deployment is a thousand devices
 * reading one package by ranges: opening, checking and closing the file for each request cost the
 * server more CPU than sending the megabyte it asked for (bench: downloads, 1 MiB ranges; before,
 * 0.4 ms of 0.7 ms per request went to open, fstat and close). A store's content never changes
 * under its name (a new upload is a new name), so a file opened once serves every request for it;
 * reads are positional, so any number of downloads share one descriptor.
 *
 * A file is closed once no download has used it for `idleMs`, or when more than `maxIdle` files
 * wait unused (the least recently used first), or at `closeAll`. An item deleted meanwhile is
 * refused by its route (no row) while its last readers finish, as before; its disk space comes back
 * when the file is closed, at most `idleMs` later.
 */
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** Not following a link at the last step; 0 where the platform has no such flag (Windows: links need privileges there). */
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

/** A file opened for one download; `release` once the download is over (finished or cut short). */
export interface OpenFile {
  handle: FileHandle;
  release(): void;
}

/** Thrown when the path is not a regular file (a directory, a device…): the caller answers 404. */
export class NotARegularFile extends Error {
  constructor(path: string) {
    super(`${path} is not a regular file`);
  }
}

interface Entry {
  opened: Promise<FileHandle>;
  users: number;
  /** When the last user released it (for closing idle files). */
  idleSince: number;
}

export interface OpenFilesOptions {
  /** Files kept open with no download reading them. */
  maxIdle: number;
  /** How long an unused file stays open. */
  idleMs: number;
}

export class OpenFiles {
  private readonly entries = new Map<string, Entry>();
  private readonly options: OpenFilesOptions;
  private sweeper: NodeJS.Timeout | null = null;

  constructor(options: Partial<OpenFilesOptions> = {}) {
    // 8 idle files at most: they count against the process's own descriptors (http/socket-limits.ts).
    this.options = { maxIdle: 8, idleMs: 5_000, ...options };
  }

  /**
   * The file at `path`, opened read-only without following a link at its last step (a link put in
   * the store is refused, ELOOP), and only if it is a regular file (else NotARegularFile). Errors of
   * the opening reach every caller waiting for it; the next call tries again.
   */
  async open(path: string): Promise<OpenFile> {
    let entry = this.entries.get(path);
    if (!entry) {
      const opened = openRegularFile(path);
      entry = { opened, users: 0, idleSince: 0 };
      this.entries.set(path, entry);
      const created = entry;
      opened.catch(() => {
        if (this.entries.get(path) === created) this.entries.delete(path);
      });
    }
    entry.users++;
    const claimed = entry;
    let handle: FileHandle;
    try {
      handle = await claimed.opened;
    } catch (error) {
      claimed.users--;
      throw error;
    }
    let released = false;
    return {
      handle,
      release: () => {
        if (released) return;
        released = true;
        claimed.users--;
        if (claimed.users === 0) {
          claimed.idleSince = Date.now();
          this.trim();
        }
      },
    };
  }

  /** Files open now (in use or idle). */
  get size(): number {
    return this.entries.size;
  }

  /** Downloads holding one of these files now (each open() not yet released). */
  get users(): number {
    let users = 0;
    for (const entry of this.entries.values()) users += entry.users;
    return users;
  }

  /** Closes every file no download is reading; those in use close once released. */
  async closeAll(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    const idle = [...this.entries].filter(([, entry]) => entry.users === 0);
    for (const [path] of idle) this.entries.delete(path);
    await Promise.all(idle.map(([, entry]) => closeQuietly(entry.opened)));
  }

  /** Closes idle files beyond `maxIdle` (least recently used first) and those idle too long. */
  private trim(now = Date.now()): void {
    const idle = [...this.entries].filter(([, entry]) => entry.users === 0).sort((a, b) => a[1].idleSince - b[1].idleSince);
    let left = idle.length;
    for (const [path, entry] of idle) {
      if (left <= this.options.maxIdle && now - entry.idleSince < this.options.idleMs) continue;
      this.entries.delete(path);
      void closeQuietly(entry.opened);
      left--;
    }
    // Idle files left: looked at again until they are used or closed.
    if (left > 0 && !this.sweeper) {
      this.sweeper = setInterval(() => this.trim(), Math.max(100, this.options.idleMs / 2));
      this.sweeper.unref();
    } else if (left === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}

async function openRegularFile(path: string): Promise<FileHandle> {
  const handle = await open(path, constants.O_RDONLY | NO_FOLLOW);
  try {
    if (!(await handle.stat()).isFile()) throw new NotARegularFile(path);
    return handle;
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
}

async function closeQuietly(opened: Promise<FileHandle>): Promise<void> {
  try {
    await (await opened).close();
  } catch {
    // failed to open (nothing to close), or closed already
  }
}
