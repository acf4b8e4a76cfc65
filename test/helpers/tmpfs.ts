// A small tmpfs that tests fill until the kernel says ENOSPC: a full disk, for real. Mounting needs
// root; where the machine does not allow it, `mounted` is false and the test says it is skipped.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SmallDisk {
  mountPoint: string;
  mounted: boolean;
  /** Writes to the file system until it refuses: the disk is now full. */
  fill(): void;
  /** Removes what fill() wrote: space again. */
  free(): void;
  /** Unmounts (if mounted) and removes the mount point. */
  remove(): void;
}

/** Mounts a 6 MiB tmpfs under a fresh temporary directory named by `prefix`. */
export function mountSmallDisk(prefix: string, skippedWarning: string): SmallDisk {
  const mountPoint = mkdtempSync(join(tmpdir(), prefix));
  const mounted = (() => {
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mountPoint], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  if (!mounted) console.warn(skippedWarning);
  const filler = join(mountPoint, 'filler');
  return {
    mountPoint,
    mounted,
    fill: () => {
      const fd = openSync(filler, 'a');
      const block = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) writeSync(fd, block);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
      try {
        for (;;) writeSync(fd, block.subarray(0, 512)); // the last few bytes too
      } catch {
        // full to the byte
      } finally {
        closeSync(fd);
      }
    },
    free: () => rmSync(filler),
    remove: () => {
      if (mounted) execFileSync('umount', [mountPoint]);
      rmSync(mountPoint, { recursive: true, force: true });
    },
  };
}
