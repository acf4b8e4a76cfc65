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
 */
export function unlessDiskFull(work: () => void): void {
  try {
    work();
  } catch (error) {
    if (!isDiskFull(error)) throw error;
  }
}
