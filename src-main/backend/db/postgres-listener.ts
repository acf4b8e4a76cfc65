import type pg from 'pg';
import type { PostgresSql } from './postgres-sql.ts';

export interface ListenHandlers {
  /** A notification on the channel (its payload), in the order the notifying transactions committed. */
  notified(payload: string): void;
  /**
   * LISTEN is in place: every commit from now on is notified. `again`: after a lost connection,
   * so what was committed while it was down was not notified and must be read (the caller's
   * catch-up). Awaited before the notifications that follow are handed over.
   */
  listening(again: boolean): Promise<void> | void;
  /** The connection was lost (it is being made again). */
  lost?(reason: string): void;
}

export interface ListenOptions {
  /** Waits between attempts to connect again, the last one repeated (default 100 ms up to 5 s). */
  retryMs?: readonly number[];
  /** How often the connection is checked with a query (a silent network loss shows no error); default 10 s. */
  checkEveryMs?: number;
}

const DEFAULT_RETRY_MS = [100, 250, 500, 1000, 2000, 5000];

/**
 * One dedicated PostgreSQL connection (outside the pool: a pooled one would be handed to other
 * queries) that LISTENs on a channel, and keeps listening: when the connection drops (the server
 * restarted, `pg_terminate_backend`, a network loss seen by the periodic check) it connects and
 * LISTENs again, retrying with growing waits, and says so (`listening(true)`) so the caller reads
 * what was committed meanwhile. Notifications that arrive while the caller's `listening` runs are
 * held and handed over after it, in order.
 */
export class PostgresListener {
  private readonly sql: PostgresSql;
  private readonly channel: string;
  private readonly handlers: ListenHandlers;
  private readonly retryMs: readonly number[];
  private readonly checkEveryMs: number;
  private client: pg.Client | null = null;
  private closed = false;
  private reconnecting: Promise<void> | null = null;
  private check: NodeJS.Timeout | null = null;
  /** Notifications held while `listening` runs. */
  private held: string[] | null = null;
  /** Times the connection was made again (tests, status). */
  reconnects = 0;

  constructor(sql: PostgresSql, channel: string, handlers: ListenHandlers, options: ListenOptions = {}) {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new RangeError(`Not a plain channel name: ${channel}`);
    this.sql = sql;
    this.channel = channel;
    this.handlers = handlers;
    this.retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
    this.checkEveryMs = options.checkEveryMs ?? 10_000;
  }

  /** Connects and LISTENs (a failure here is the caller's: the database was reachable a moment ago). */
  async start(): Promise<void> {
    await this.connect(false);
    this.check = setInterval(() => void this.checkAlive(), this.checkEveryMs);
    this.check.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.check) clearInterval(this.check);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => {});
    await this.reconnecting?.catch(() => {});
  }

  /** The process id of the listening connection on the server (tests end it with pg_terminate_backend). */
  async backendPid(): Promise<number | null> {
    const client = this.client;
    if (!client) return null;
    const result = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return result.rows[0]?.pid ?? null;
  }

  private async connect(again: boolean): Promise<void> {
    const client = await this.sql.dedicatedClient('mdm-console-listen');
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    let gone = false;
    const drop = (reason: string) => {
      if (gone) return;
      gone = true;
      if (this.client === client) this.client = null;
      void client.end().catch(() => {});
      if (!this.closed) this.lost(reason);
    };
    client.on('error', (error) => drop(error.message));
    client.on('end', () => drop('connection ended'));
    client.on('notification', (message) => {
      if (message.channel !== this.channel || gone) return;
      const payload = message.payload ?? '';
      if (this.held) this.held.push(payload);
      else this.handlers.notified(payload);
    });
    this.held = [];
    try {
      await client.query(`LISTEN ${this.channel}`);
      this.client = client;
      await this.handlers.listening(again);
    } catch (error) {
      // The caller (start, or the reconnecting loop) tries again or reports it.
      this.held = null;
      gone = true;
      if (this.client === client) this.client = null;
      await client.end().catch(() => {});
      throw error;
    } finally {
      const held = this.held ?? [];
      this.held = null;
      for (const payload of held) this.handlers.notified(payload);
    }
  }

  private lost(reason: string): void {
    this.handlers.lost?.(reason);
    if (this.reconnecting) return;
    this.reconnecting = (async () => {
      for (let attempt = 0; !this.closed; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, this.retryMs[Math.min(attempt, this.retryMs.length - 1)]));
        if (this.closed) return;
        try {
          await this.connect(true);
          this.reconnects++;
          return;
        } catch {
          // Not yet: the next attempt waits longer.
        }
      }
    })().finally(() => {
      this.reconnecting = null;
    });
  }

  /** A query on the listening connection: one that fails (or never answers) means it is gone. */
  private async checkAlive(): Promise<void> {
    const client = this.client;
    if (!client || this.reconnecting) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.query('SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('the listening connection did not answer')), this.checkEveryMs);
        }),
      ]);
    } catch (error) {
      if (this.client === client) client.emit('error', error as Error);
    } finally {
      clearTimeout(timer);
    }
  }
}
