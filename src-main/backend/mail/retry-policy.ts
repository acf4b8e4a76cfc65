/**
 * Which SMTP failures are worth trying again, and when. Greylisting servers answer 451 to a first
 * attempt on purpose, and a busy or restarting server times out or drops the connection: those
 * go through later. A 5xx reply is the server's final word (RFC 5321), and so is a broken
 * configuration (bad certificate, no STARTTLS, broken template): retrying would only repeat it.
 */

/** Waits before retry 1, 2, …: the first within 2 minutes; 8 attempts over about 4 hours in all. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [
  60_000,
  3 * 60_000,
  10 * 60_000,
  20 * 60_000,
  30 * 60_000,
  60 * 60_000,
  90 * 60_000,
];

export interface RetryPolicy {
  /** Delay before each retry; its length bounds the retries (attempts = length + 1). */
  delaysMs: readonly number[];
}

interface SmtpError {
  code?: string;
  responseCode?: number;
  message?: string;
}

/** Nodemailer's codes for a connection that failed, dropped or timed out (greeting included). */
const CONNECTION_CODES = new Set(['ECONNECTION', 'ESOCKET', 'ETIMEDOUT', 'EDNS']);

export function isTransientSmtpError(error: unknown): boolean {
  const e = (error ?? {}) as SmtpError;
  const reply = typeof e.responseCode === 'number' ? e.responseCode : null;
  if (reply !== null && reply >= 400 && reply < 500) return true;
  // 503 "bad sequence" is about the session, not the message: a new connection may succeed.
  if (reply !== null && reply >= 500 && reply !== 503) return false;
  if (!e.code || !CONNECTION_CODES.has(e.code)) return false;
  // A certificate we refuse stays refused until the settings change.
  return !/certificate|self[- ]signed/i.test(e.message ?? '');
}

/**
 * When the next attempt should run after `attempts` failed ones, or null when the bound is reached
 * or the invitation would have expired by then.
 */
export function nextRetryAt(attempts: number, now: Date, policy: RetryPolicy, expiresAt?: string): Date | null {
  const delay = policy.delaysMs[attempts - 1];
  if (delay === undefined) return null;
  const at = new Date(now.getTime() + delay);
  if (expiresAt && at.getTime() >= Date.parse(expiresAt)) return null;
  return at;
}
