// Retained messages indexed by topic level, for aedes' in-memory persistence.
//
// aedes-persistence keeps retained messages in one Map and, for every SUBSCRIBE, tests each of
// them against each filter: with N agents each holding a retained `T/Status/Online`, every
// connecting agent (which subscribes to `T/#` and `MdmManifest/#`) scans all N, so connecting N
// agents costs N² topic matches — the broker's connection rate fell with every thousand agents
// held. A tree of topic levels finds the messages of `T/#` by walking T's levels: the cost of a
// SUBSCRIBE no longer depends on how many other agents are connected.
import type { AedesPacket } from 'aedes-packet';
import MemoryPersistence from 'aedes-persistence/asyncPersistence.js';
import { Readable } from 'node:stream';

/** What aedes stores as a retained message (a copy of the packet; payload empty = delete). */
export interface RetainedPacket {
  topic: string;
  payload: Buffer | string;
  [key: string]: unknown;
}

/**
 * One topic level. Most levels have a single child (`<serial>` → `Status` → `Online`): that child
 * is kept as is, a Map only once there are two, which keeps the index to ~150 bytes per agent.
 */
interface Level {
  name: string;
  packet: RetainedPacket | undefined;
  children: Level | Map<string, Level> | undefined;
}

const newLevel = (name: string): Level => ({ name, packet: undefined, children: undefined });

function childOf(level: Level, name: string): Level | undefined {
  const { children } = level;
  if (children instanceof Map) return children.get(name);
  return children?.name === name ? children : undefined;
}

function addChild(level: Level, child: Level): void {
  const { children } = level;
  if (children === undefined) level.children = child;
  else if (children instanceof Map) children.set(child.name, child);
  else
    level.children = new Map([
      [children.name, children],
      [child.name, child],
    ]);
}

function removeChild(level: Level, name: string): void {
  const { children } = level;
  if (!(children instanceof Map)) {
    if (children?.name === name) level.children = undefined;
    return;
  }
  children.delete(name);
  if (children.size === 1) level.children = children.values().next().value;
}

function childrenOf(level: Level): Iterable<Level> {
  const { children } = level;
  return children === undefined ? [] : children instanceof Map ? children.values() : [children];
}

/**
 * Retained messages by topic level. Filters match exactly as aedes-persistence's matcher (qlobber)
 * matches them: `+` is one non-empty level, `#` (last) this level and everything below.
 */
export class RetainedIndex {
  private readonly root = newLevel('');
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
      let child = childOf(level, name);
      if (!child) addChild(level, (child = newLevel(name)));
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
    if (name === '+') {
      // One non-empty level: aedes' matcher (qlobber) never matches `+` with an empty level.
      for (const child of childrenOf(level)) if (child.name !== '') this.collect(child, filter, index + 1, out);
      return;
    }
    const child = childOf(level, name);
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
      const child = childOf(level, levels[index]!);
      if (child && this.remove(child, levels, index + 1)) removeChild(level, levels[index]!);
    }
    return level.packet === undefined && level.children === undefined;
  }
}

function everything(level: Level, out: RetainedPacket[]): void {
  if (level.packet) out.push(level.packet);
  for (const child of childrenOf(level)) everything(child, out);
}

/**
 * aedes-persistence's in-memory store with its retained messages kept in a RetainedIndex: handed to
 * aedes as its `persistence` option. Subscriptions, wills and queued packets stay the store's own.
 */
export class IndexedMemoryPersistence extends MemoryPersistence {
  private readonly index = new RetainedIndex();

  override storeRetained(packet: AedesPacket): Promise<void> {
    this.index.store(packet as unknown as RetainedPacket);
    return Promise.resolve();
  }

  override createRetainedStream(pattern: string): Readable {
    return Readable.from(this.index.match(pattern));
  }

  override createRetainedStreamCombi(patterns: string[]): Readable {
    return Readable.from(this.index.matchAll(patterns));
  }

  /** The payload of the first retained message matching `filter`, or null. */
  retained(filter: string): string | null {
    const [packet] = this.index.match(filter);
    return packet ? packet.payload.toString() : null;
  }

  /** The topics of the retained messages matching `filter`. */
  retainedTopics(filter: string): string[] {
    return this.index.match(filter).map((packet) => packet.topic);
  }

  /** How many retained messages are held. */
  get retainedCount(): number {
    return this.index.size;
  }
}
