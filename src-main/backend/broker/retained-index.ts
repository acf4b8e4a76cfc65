// Retained messages indexed by topic level, for aedes' in-memory persistence.
//
// aedes-persistence keeps retained messages in one Map and, for every SUBSCRIBE, tests each of
// them against each filter: with N agents each holding a retained `T/Status/Online`, every
// connecting agent (which subscribes to `T/#` and `MdmManifest/#`) scans all N, so connecting N
// agents costs N² topic matches — the broker's connection rate fell with every thousand agents
// held. A tree of topic levels finds the messages of `T/#` by walking T's levels: the cost of a
// SUBSCRIBE no longer depends on how many other agents are connected.

/** What aedes stores as a retained message (a copy of the packet; payload empty = delete). */
export interface RetainedPacket {
  topic: string;
  payload: Buffer | string;
  [key: string]: unknown;
}

interface Level {
  packet: RetainedPacket | undefined;
  children: Map<string, Level> | undefined;
}

const newLevel = (): Level => ({ packet: undefined, children: undefined });

/**
 * Retained messages by topic level. Filters match exactly as aedes-persistence's matcher (qlobber)
 * matches them: `+` is one non-empty level, `#` (last) this level and everything below.
 */
export class RetainedIndex {
  private readonly root = newLevel();
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Stores a copy of the packet, or removes the topic's message when the payload is empty. */
  store(packet: RetainedPacket): void {
    const levels = packet.topic.split('/');
    if (packet.payload.length === 0) {
      this.remove(this.root, levels, 0);
      return;
    }
    let level = this.root;
    for (const name of levels) {
      level.children ??= new Map();
      let child = level.children.get(name);
      if (!child) level.children.set(name, (child = newLevel()));
      level = child;
    }
    if (!level.packet) this.count++;
    level.packet = { ...packet };
  }

  /** The messages whose topic matches `filter` (`+` one level, `#` this level and all below). */
  match(filter: string): RetainedPacket[] {
    const out: RetainedPacket[] = [];
    this.collect(this.root, filter.split('/'), 0, out);
    return out;
  }

  /** Every message matching each filter in turn (a message matching two filters comes twice, as in aedes). */
  *matchAll(filters: readonly string[]): Generator<RetainedPacket> {
    for (const filter of filters) yield* this.match(filter);
  }

  private collect(level: Level, filter: string[], index: number, out: RetainedPacket[]): void {
    if (index === filter.length) {
      if (level.packet) out.push(level.packet);
      return;
    }
    const name = filter[index]!;
    if (name === '#') {
      everything(level, out);
      return;
    }
    if (!level.children) return;
    if (name === '+') {
      // One non-empty level: aedes' matcher (qlobber) never matches `+` with an empty level.
      for (const [childName, child] of level.children) if (childName !== '') this.collect(child, filter, index + 1, out);
      return;
    }
    const child = level.children.get(name);
    if (child) this.collect(child, filter, index + 1, out);
  }

  /** Removes the message at `levels`; prunes levels left empty. Returns whether `level` is now empty. */
  private remove(level: Level, levels: string[], index: number): boolean {
    if (index === levels.length) {
      if (level.packet) {
        level.packet = undefined;
        this.count--;
      }
    } else {
      const child = level.children?.get(levels[index]!);
      if (child && this.remove(child, levels, index + 1)) {
        level.children!.delete(levels[index]!);
        if (level.children!.size === 0) level.children = undefined;
      }
    }
    return level.packet === undefined && level.children === undefined;
  }
}

function everything(level: Level, out: RetainedPacket[]): void {
  if (level.packet) out.push(level.packet);
  if (level.children) for (const child of level.children.values()) everything(child, out);
}

/** The part of aedes-persistence's in-memory store that holds retained messages. */
interface RetainedStore {
  storeRetained(packet: RetainedPacket): Promise<void>;
  createRetainedStream(pattern: string): Iterable<RetainedPacket>;
  createRetainedStreamCombi(patterns: string[]): Iterable<RetainedPacket>;
}

/**
 * Puts the index in place of the retained messages of aedes' default in-memory persistence.
 * Returns false (and changes nothing) when the persistence is not the one this was written for:
 * the broker then works as before, only slower with many retained messages.
 */
export function indexRetainedMessages(persistence: unknown): boolean {
  const store = (persistence as { asyncPersistence?: Partial<RetainedStore> } | null)?.asyncPersistence;
  if (
    !store ||
    typeof store.storeRetained !== 'function' ||
    typeof store.createRetainedStream !== 'function' ||
    typeof store.createRetainedStreamCombi !== 'function'
  ) {
    return false;
  }
  const index = new RetainedIndex();
  store.storeRetained = async (packet) => index.store(packet);
  store.createRetainedStream = (pattern) => index.match(pattern);
  store.createRetainedStreamCombi = (patterns) => index.matchAll(patterns);
  return true;
}
