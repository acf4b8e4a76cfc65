// Every node's committed events, for what must see them all: the admin event stream, the caches
// another node's change makes stale (settings), bulk jobs' awaited answers, the alert triggers.
// `EventLog.subscribe` stays local (side effects, such as publishing to MQTT, stay on the node that
// did the work); the feed adds the other nodes' events.
//
// On SQLite (one node) the feed is the local events. On PostgreSQL each event's INSERT also does
// `pg_notify('mdm_events', '<id> <origin>')` in the same statement (events/event-repository.ts),
// so the notice is delivered at the commit (never for a rolled-back event), to every listening
// connection, in commit order. Each node holds one dedicated connection that LISTENs
// (db/postgres-listener.ts); a notice from another node has its event read from the events table
// by id and handed to the subscribers, in the order of the notices (commit order).
//
// When the listening connection drops, it is made again and what was committed meanwhile is read
// from the events table: those after the highest id seen, and the "gaps" below it (ids skipped
// and not seen yet, remembered for GAP_MS). Nothing committed while it was down is missed.
//
// Ids and commit order. Transactions on PostgreSQL are serialized by an advisory lock taken first
// in each (db/postgres-sql.ts serializeTransactions), so ids are drawn and committed in the same
// order, with two exceptions: a rolled-back transaction leaves its ids unused forever, and an
// event recorded outside any transaction (an autocommit INSERT: it takes no lock) may commit
// before a lower id still open in a transaction. The live path does not rely on id order (it
// follows the notices, in commit order); the catch-up does, which is why the gaps are remembered
// (an id below the highest seen that commits later is still read and delivered, out of id order).
// If the advisory lock went (concurrent writers), that becomes the common case rather than the
// rare one: a catch-up after a long disconnection could miss an event whose id is older than
// GAP_MS's worth of gaps, and the admin stream's Last-Event-ID replay (`id > last`) — which is
// not this feed's — would miss an event that committed after the client's last id was sent but
// with a lower id. A commit sequence (or xid8 with pg_snapshot_xmin) would be the cursor then.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { EventLog, RecordedEvent } from '../events/event-log.ts';
import type { EventNotice, EventRepository } from '../events/event-repository.ts';
import type { Sql } from '../db/sql.ts';
import { PostgresSql } from '../db/postgres-sql.ts';
import { PostgresListener, type ListenOptions } from '../db/postgres-listener.ts';

/** Whether an event was recorded by this node or by another. */
export type FeedOrigin = 'here' | 'elsewhere';
export type FeedListener = (event: RecordedEvent, origin: FeedOrigin) => unknown;

/** What the feed's subscribers use: every node's committed events. */
export interface EventFeed {
  /** `listener` is awaited before the next event is handed to it; its errors are its own. */
  subscribe(listener: FeedListener): () => void;
}

/** The channel every node notifies and listens on. */
export const FEED_CHANNEL = 'mdm_events';
/** How long an id skipped by the ones seen is awaited (a transaction still open, or rolled back). */
const GAP_MS = 5 * 60_000;
/** Gaps remembered at most (the oldest go first). */
const MAX_GAPS = 10_000;
/** Events read per statement in a catch-up. */
const PAGE = 1000;

/**
 * This process's name on the channel and the ids of the events it inserted (until the feed sees
 * them committed): its own notices and rows are not handed over again as another node's.
 */
export class FeedIdentity implements EventNotice {
  readonly channel = FEED_CHANNEL;
  /** The node's name, then what tells this run apart (two runs never share it, even by mistake). */
  readonly origin: string;
  /** Id → when inserted. */
  readonly own = new Map<number, number>();

  constructor(nodeName?: string) {
    const name = (nodeName ?? hostname()).replace(/\s+/g, '_').slice(0, 100) || 'node';
    this.origin = `${name}#${process.pid}.${randomBytes(4).toString('hex')}`;
  }

  inserted(id: number): void {
    this.own.set(id, Date.now());
  }

  /** Forgets the ids inserted long ago that were never seen committed (rolled back). */
  prune(now = Date.now()): void {
    for (const [id, at] of this.own) {
      if (now - at < GAP_MS) break; // oldest first
      this.own.delete(id);
    }
  }
}

/** The subscribers, each awaited in turn; one's failure is not the others'. */
class Fanout {
  private readonly listeners = new Set<FeedListener>();

  add(listener: FeedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async deliver(event: RecordedEvent, origin: FeedOrigin): Promise<void> {
    for (const listener of [...this.listeners]) {
      try {
        await listener(event, origin);
      } catch {
        // A subscriber's failure (the database closing under it) is its own.
      }
    }
  }
}

/** One node: the feed is the local events, as they are emitted after their commit. */
export class LocalFeed implements EventFeed {
  protected readonly fanout = new Fanout();
  private readonly unsubscribe: () => void;

  constructor(events: Pick<EventLog, 'subscribe'>) {
    this.unsubscribe = events.subscribe((event) => this.fanout.deliver(event, 'here'));
  }

  subscribe(listener: FeedListener): () => void {
    return this.fanout.add(listener);
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.unsubscribe();
    return Promise.resolve();
  }
}

/** The ids noted so far: the highest, and those below it not seen yet (gaps), for a while. */
class SeenIds {
  max = 0;
  /** Id → when it became a gap; insertion order is age order. */
  readonly gaps = new Map<number, number>();

  note(id: number, now = Date.now()): void {
    if (id > this.max) {
      for (let gap = Math.max(this.max + 1, id - MAX_GAPS); gap < id; gap++) this.gaps.set(gap, now);
      this.max = id;
      while (this.gaps.size > MAX_GAPS) this.gaps.delete(this.gaps.keys().next().value!);
    } else this.gaps.delete(id);
  }

  /** The gaps still awaited. */
  awaited(now = Date.now()): number[] {
    for (const [id, at] of this.gaps) {
      if (now - at < GAP_MS) break;
      this.gaps.delete(id);
    }
    return [...this.gaps.keys()];
  }
}

export interface PostgresFeedOptions extends ListenOptions {
  /** Told when the listening connection drops (logs). */
  onLost?: (reason: string) => void;
}

/**
 * Several nodes on PostgreSQL: the local events at once, and the other nodes' as their notices
 * arrive (read by id), or as the catch-up after a lost connection finds them.
 */
export class PostgresFeed extends LocalFeed {
  private readonly identity: FeedIdentity;
  private readonly store: Pick<EventRepository, 'after' | 'byIds' | 'maxId'>;
  private readonly listener: PostgresListener;
  private readonly seen = new SeenIds();
  /** Ids the last catch-up handed over (their notices, arriving late, are not handed over again). */
  private caught = new Set<number>();
  /** Other nodes' ids to read and hand over, in the order of their notices. */
  private readonly pending: number[] = [];
  /** Reads and deliveries, one after the other. */
  private chain: Promise<void> = Promise.resolve();
  private draining = false;
  private closed = false;
  /** Other nodes' events handed over by catch-ups (after a lost connection), in all. */
  caughtUp = 0;

  constructor(
    sql: PostgresSql,
    events: Pick<EventLog, 'subscribe'>,
    store: Pick<EventRepository, 'after' | 'byIds' | 'maxId'>,
    identity: FeedIdentity,
    options: PostgresFeedOptions = {},
  ) {
    super(events);
    this.identity = identity;
    this.store = store;
    this.listener = new PostgresListener(
      sql,
      FEED_CHANNEL,
      {
        notified: (payload) => this.notified(payload),
        listening: (again) => (again ? this.catchUp() : this.baseline()),
        lost: options.onLost,
      },
      options,
    );
  }

  override start(): Promise<void> {
    return this.listener.start();
  }

  override async close(): Promise<void> {
    this.closed = true;
    await super.close();
    await this.listener.close();
    await this.chain;
  }

  /** Times the listening connection was made again. */
  get reconnects(): number {
    return this.listener.reconnects;
  }

  /** The listening connection's server process id (tests end it). */
  listeningPid(): Promise<number | null> {
    return this.listener.backendPid();
  }

  /** First LISTEN: the events already there are history (the admin stream replays them by id). */
  private async baseline(): Promise<void> {
    this.seen.max = Math.max(this.seen.max, await this.store.maxId());
  }

  private notified(payload: string): void {
    const space = payload.indexOf(' ');
    const id = Number(payload.slice(0, space));
    if (space < 1 || !Number.isSafeInteger(id) || id < 1) return;
    this.seen.note(id);
    if (payload.slice(space + 1) === this.identity.origin) {
      this.identity.own.delete(id);
      return;
    }
    if (this.caught.has(id)) return;
    this.pending.push(id);
    this.drainSoon();
  }

  private drainSoon(): void {
    if (this.draining || this.closed) return;
    this.draining = true;
    this.chain = this.chain.then(() => this.drain());
  }

  /** Reads the pending ids (several at a time) and hands their events over in the order of their notices. */
  private async drain(): Promise<void> {
    let failures = 0;
    while (this.pending.length > 0 && !this.closed) {
      const batch = this.pending.slice(0, 500);
      let rows: RecordedEvent[];
      try {
        rows = await this.store.byIds(batch);
      } catch {
        // The pool cannot read right now (the database restarting): again shortly, nothing dropped.
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 100 * 2 ** failures++)));
        continue;
      }
      failures = 0;
      this.pending.splice(0, batch.length);
      const byId = new Map(rows.map((row) => [row.id, row]));
      for (const id of batch) {
        const event = byId.get(id);
        // Gone already (deleted with its agent's history): nothing to hand over.
        if (event) await this.fanout.deliver(event, 'elsewhere');
      }
    }
    this.draining = false;
    if (this.pending.length > 0) this.drainSoon();
  }

  /**
   * LISTEN again after a lost connection: the events committed meanwhile (after the highest id
   * seen, and the gaps below it) are read and handed over, oldest first, before the notices that
   * follow (the listener holds them until this is done).
   */
  private catchUp(): Promise<void> {
    const run = this.chain.then(async () => {
      this.identity.prune();
      const caught = new Set<number>();
      const deliver = async (event: RecordedEvent) => {
        this.seen.note(event.id);
        caught.add(event.id);
        if (this.identity.own.delete(event.id)) return;
        this.caughtUp++;
        await this.fanout.deliver(event, 'elsewhere');
      };
      // Any noticed before the loss and not read yet are read now, with the gaps (kept if this fails).
      const pending = [...this.pending];
      const gaps = [...new Set([...this.seen.awaited(), ...pending])].sort((a, b) => a - b);
      for (const event of await this.store.byIds(gaps)) await deliver(event);
      this.pending.splice(0, pending.length);
      for (;;) {
        const page = await this.store.after(this.seen.max, PAGE);
        for (const event of page) await deliver(event);
        if (page.length < PAGE) break;
      }
      this.caught = caught;
    });
    this.chain = run.catch(() => {});
    return run;
  }
}

/** The feed for this database: local on SQLite, every node's on PostgreSQL. */
export function createEventFeed(
  sql: Sql,
  events: Pick<EventLog, 'subscribe'>,
  store: Pick<EventRepository, 'after' | 'byIds' | 'maxId'>,
  identity: FeedIdentity,
  options: PostgresFeedOptions = {},
): LocalFeed {
  return sql instanceof PostgresSql ? new PostgresFeed(sql, events, store, identity, options) : new LocalFeed(events);
}
