/**
 * A full disk is not a bug: SQLite reports SQLITE_FULL (the WAL or the database could not grow),
 * the file system ENOSPC or EDQUOT. Both listeners answer it as uploads do, 507 with a message
 * that says so, and nothing is half written (SQLite rolled the transaction back).
 */
export const DISK_FULL_CODE = 'ERROR_INSUFFICIENT_STORAGE';
export const DISK_FULL_MESSAGE =
  "The server's disk is full: nothing was saved. Free some disk space on the server, then try again.";

export function isDiskFull(error: unknown): boolean {
  if (typeof error !== 'object' || error === null || !('code' in error)) return false;
  const code = (error as { code: unknown }).code;
  return code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * Runs the bookkeeping of an event handler (MQTT traffic, timers): on a full disk what could not
 * be saved is dropped, rather than the error escaping the handler and ending the whole process.
 * Asynchronous work is not awaited (the handler returns at once); any other error it ends with is
 * reported on stderr rather than left as an unhandled rejection that would end the process.
 */
export function unlessDiskFull(work: () => void | Promise<unknown>): void {
  let pending: void | Promise<unknown>;
  try {
    pending = work();
  } catch (error) {
    if (!isDiskFull(error)) throw error;
    return;
  }
  if (pending instanceof Promise) {
    pending.catch((error: unknown) => {
      if (!isDiskFull(error)) console.error(error);
    });
  }
}

/** better-sqlite3's error for a statement on a closed connection (the server is closing). */
export function isClosedDatabase(error: unknown): boolean {
  return error instanceof TypeError && error.message.includes('database connection is not open');
}
