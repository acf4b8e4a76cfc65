import type { Sql } from '../db/sql.ts';

/** A password accepted, waiting for its second step. */
export interface StoredChallenge {
  account_id: number;
  step: 'code' | 'enrol';
  expires_at: string;
  attempts: number;
}

/**
 * The console sign-in's state that must hold across nodes (issue 23): failed sign-ins per address
 * and per account (sign_in_failures), one-time sign-in tickets (sign_in_tickets) and passwords
 * waiting for their second step (sign_in_challenges). Tickets and challenges are kept by the
 * SHA-256 of what the browser holds (the owner's set-up links too, as `setup:<SHA-256>`, so that
 * one never passes for a sign-in link); a ticket is taken by one DELETE … RETURNING, so it signs in
 * once whichever node it reaches. Times are ISO strings computed by the caller.
 */
export class SignInRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    // A key whose last failure is older than its forgetting time and whose wait is over starts again.
    const forgotten = `sign_in_failures.last_at < @forgetBefore AND sign_in_failures.until_at < @now`;
    this.s = {
      fail: `INSERT INTO sign_in_failures (key, failures, last_at, until_at) VALUES (@key, 1, @now, @never)
        ON CONFLICT (key) DO UPDATE SET
          failures = CASE WHEN ${forgotten} THEN 1 ELSE sign_in_failures.failures + 1 END,
          until_at = CASE WHEN ${forgotten} THEN @never ELSE sign_in_failures.until_at END,
          last_at = @now
        RETURNING failures`,
      waitUntil: `UPDATE sign_in_failures SET until_at = @until WHERE key = @key AND until_at < @until`,
      failuresOf: `SELECT failures, last_at, until_at FROM sign_in_failures WHERE key = ?`,
      latestUntil: `SELECT max(until_at) FROM sign_in_failures WHERE key IN (?, ?) AND until_at > ?`,
      reset: `DELETE FROM sign_in_failures WHERE key = ?`,
      sweepFailures: `DELETE FROM sign_in_failures WHERE last_at < @forgetBefore AND until_at < @now`,
      insertTicket: `INSERT INTO sign_in_tickets (ticket_hash, account_id, expires_at) VALUES (?, ?, ?)`,
      takeTicket: `DELETE FROM sign_in_tickets WHERE ticket_hash = ? RETURNING account_id, expires_at`,
      ticketExpiry: `SELECT expires_at FROM sign_in_tickets WHERE ticket_hash = ?`,
      sweepTickets: `DELETE FROM sign_in_tickets WHERE expires_at <= ?`,
      insertChallenge: `INSERT INTO sign_in_challenges (challenge_hash, account_id, step, expires_at, attempts) VALUES (?, ?, ?, ?, 0)`,
      challenge: `SELECT account_id, step, expires_at, attempts FROM sign_in_challenges WHERE challenge_hash = ?`,
      missChallenge: `UPDATE sign_in_challenges SET attempts = attempts + 1 WHERE challenge_hash = ? RETURNING attempts`,
      removeChallenge: `DELETE FROM sign_in_challenges WHERE challenge_hash = ?`,
      sweepChallenges: `DELETE FROM sign_in_challenges WHERE expires_at <= ?`,
    };
  }

  /**
   * Counts one failure of `key` (one statement): the count since its failures were last forgotten
   * (none for `forgetBefore` and its wait over: it starts again at 1).
   */
  async fail(key: string, now: string, forgetBefore: string): Promise<number> {
    const failures = await this.sql.value<number>(this.s.fail, { key, now, forgetBefore, never: NEVER });
    return Number(failures);
  }

  /** `key` waits until `until` (or later, if another node made it wait longer already). */
  async waitUntil(key: string, until: string): Promise<void> {
    await this.sql.run(this.s.waitUntil, { key, until });
  }

  async failuresOf(key: string): Promise<{ failures: number; last_at: string; until_at: string } | undefined> {
    const row = await this.sql.get<{ failures: number; last_at: string; until_at: string }>(this.s.failuresOf, [key]);
    return row && { ...row, failures: Number(row.failures) };
  }

  /** The latest time either key waits until, if later than `now`. */
  async latestUntil(a: string, b: string, now: string): Promise<string | null> {
    return (await this.sql.value<string | null>(this.s.latestUntil, [a, b, now])) ?? null;
  }

  async reset(key: string): Promise<void> {
    await this.sql.run(this.s.reset, [key]);
  }

  async insertTicket(ticketHash: string, accountId: number | null, expiresAt: string): Promise<void> {
    await this.sql.run(this.s.insertTicket, [ticketHash, accountId, expiresAt]);
  }

  /** The ticket, gone from the table: only one caller ever gets it. */
  async takeTicket(ticketHash: string): Promise<{ account_id: number | null; expires_at: string } | undefined> {
    const row = await this.sql.get<{ account_id: number | null; expires_at: string }>(this.s.takeTicket, [ticketHash]);
    return row && { account_id: row.account_id === null ? null : Number(row.account_id), expires_at: row.expires_at };
  }

  /** When the ticket expires, without taking it; undefined when there is none. */
  async ticketExpiry(ticketHash: string): Promise<string | undefined> {
    return this.sql.value<string>(this.s.ticketExpiry, [ticketHash]);
  }

  async insertChallenge(challengeHash: string, accountId: number, step: 'code' | 'enrol', expiresAt: string): Promise<void> {
    await this.sql.run(this.s.insertChallenge, [challengeHash, accountId, step, expiresAt]);
  }

  async challenge(challengeHash: string): Promise<StoredChallenge | undefined> {
    const row = await this.sql.get<StoredChallenge>(this.s.challenge, [challengeHash]);
    return row && { ...row, account_id: Number(row.account_id), attempts: Number(row.attempts) };
  }

  /** One more wrong code for the challenge: its count of them (0 when it is gone). */
  async missChallenge(challengeHash: string): Promise<number> {
    return Number((await this.sql.value<number>(this.s.missChallenge, [challengeHash])) ?? 0);
  }

  /** Removes the challenge; false when it was already gone (used or ended on another node). */
  async removeChallenge(challengeHash: string): Promise<boolean> {
    return (await this.sql.run(this.s.removeChallenge, [challengeHash])).changes > 0;
  }

  async sweepTickets(now: string): Promise<number> {
    return (await this.sql.run(this.s.sweepTickets, [now])).changes;
  }

  async sweepChallenges(now: string): Promise<number> {
    return (await this.sql.run(this.s.sweepChallenges, [now])).changes;
  }

  /** Forgets the failures of keys past their forgetting time whose wait is over; how many went. */
  async sweepFailures(now: string, forgetBefore: string): Promise<number> {
    return (await this.sql.run(this.s.sweepFailures, { now, forgetBefore })).changes;
  }
}

/** until_at of a key that does not wait. */
const NEVER = new Date(0).toISOString();
