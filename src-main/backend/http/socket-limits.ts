/**
 * Sockets are file descriptors, and a process has a fixed number of them (`ulimit -n`). Without
 * caps, 1,100 slow connections on the agent listener used them all, and then neither listener
 * could accept anything. The plan below keeps a part for the process itself (database, log, mail,
 * Node's own) and shares the rest *by need* between the admin listener, the agent listener's
 * connections, the files of downloads in progress and the MQTT broker (DescriptorBudget). Each
 * HTTP share keeps a small reserve that no one else may take, so an admin and an enrolling device
 * always get in; beyond its reserve, whoever asks first takes a descriptor. Devices hold one MQTT
 * connection all day and HTTP only in bursts, so the broker may take everything but the reserves:
 * at a 20,000-descriptor limit, 19,848 agents (mosquitto holds 19,843 there). Before, MQTT had a
 * fixed half and the embedded broker held 9,872. One client address may hold only a part of the
 * agent listener, so a single host cannot take it all.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { REQUEST_TIMEOUT_MS } from './request-deadline.ts';

export interface SocketPlan {
  /** The descriptor limit the plan was made for (null: unknown, defaults used). */
  fdLimit: number | null;
  /** Descriptors the listeners and downloads share (the limit less the process's own part). */
  shared: number;
  /** The most the agent listener holds (when the broker leaves room). */
  agentConnections: number;
  agentConnectionsPerAddress: number;
  /** The most byte downloads in progress at once (each holds its file open). */
  agentDownloads: number;
  adminConnections: number;
  /** The most the embedded broker holds (plain and TLS listeners together): everything but the HTTP reserves. */
  mqttConnections: number;
  /** What each HTTP share keeps whatever the broker holds. */
  reserves: { admin: number; agent: number; downloads: number };
  /** How long a client may take to send a whole request (headers too), on both listeners. */
  requestTimeoutMs: number;
}

/**
 * The process's own descriptors: database and its WAL, log, lock, mail, uploads, Node's own (33 at
 * rest on SQLite; ~44 on PostgreSQL, its pool of 10 and the feed's listener), and up to 8 stored
 * files kept open between downloads (files/open-files.ts): 52 at most at rest, 20 to spare.
 */
const PROCESS_RESERVE = 72;
/** Kept for the admin listener whatever the broker holds: the console and the CLI. */
const ADMIN_RESERVE = 16;
/** Kept for the agent listener: enrollments and agent requests always get in. */
const AGENT_RESERVE = 48;
/** Kept for the files of downloads in progress. */
const DOWNLOADS_RESERVE = 16;
const ADMIN_CONNECTIONS = 128;
const MAX_AGENT_CONNECTIONS = 10_000;
const MAX_DOWNLOADS = 1024;
/** Beyond this many agents, an external broker is the answer (docs/brokers.md: when to move off the embedded one). */
const MAX_MQTT_CONNECTIONS = 20_000;

/** The soft limit on open files of this process (Linux: /proc/self/limits), or null. */
export function openFileLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.split(/\s{2,}/)[1];
    const value = Number(soft);
    return Number.isInteger(value) && value > 0 ? value : null; // "unlimited" → null
  } catch {
    return null;
  }
}

export function planSockets(fdLimit: number | null = openFileLimit()): SocketPlan {
  // Unknown (macOS, Windows): Node raises the soft limit to the hard one at start; assume 10,240.
  const limit = fdLimit ?? 10_240;
  const reserves = { admin: ADMIN_RESERVE, agent: AGENT_RESERVE, downloads: DOWNLOADS_RESERVE };
  const reserved = reserves.admin + reserves.agent + reserves.downloads;
  const shared = Math.max(reserved + 64, limit - PROCESS_RESERVE);
  // HTTP's maxima when the broker leaves room: a third of the shared part for the agent
  // listener, a sixth for downloads (caps against floods, not shares: what they do not use, MQTT may).
  const agentConnections = Math.max(reserves.agent, Math.min(MAX_AGENT_CONNECTIONS, Math.floor(shared / 3)));
  return {
    fdLimit,
    shared,
    agentConnections,
    agentConnectionsPerAddress: Math.max(16, Math.floor(agentConnections / 4)),
    agentDownloads: Math.max(reserves.downloads, Math.min(MAX_DOWNLOADS, Math.floor(shared / 6))),
    adminConnections: ADMIN_CONNECTIONS,
    mqttConnections: Math.min(MAX_MQTT_CONNECTIONS, shared - reserved),
    reserves,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
  };
}

/**
 * Descriptors shared by need. Each share may always hold up to its reserve; beyond, it takes from
 * what no share holds or keeps in reserve. The invariant: the sum over shares of
 * max(held, reserve) never exceeds `total`, so every reserve stays available to its share
 * whatever the others hold.
 */
export class DescriptorBudget {
  readonly total: number;
  /** Σ max(held, reserve) over the shares. */
  private committed = 0;
  private readonly shares = new Map<string, DescriptorShare>();

  constructor(total: number) {
    this.total = total;
  }

  /** A share that may always hold `reserve` descriptors (and more when others leave room). */
  share(name: string, reserve = 0): DescriptorShare {
    if (this.shares.has(name)) throw new Error(`descriptor share ${name} exists already`);
    if (this.committed + reserve > this.total) throw new Error(`descriptor reserves exceed ${this.total}`);
    this.committed += reserve;
    let held = 0;
    const share: DescriptorShare = {
      name,
      reserve,
      held: () => held,
      canAcquire: () => held < reserve || this.committed < this.total,
      acquire: () => {
        if (held >= reserve) this.committed++;
        held++;
      },
      release: () => {
        if (held === 0) return;
        held--;
        if (held >= reserve) this.committed--;
      },
    };
    this.shares.set(name, share);
    return share;
  }

  /** Descriptors no share holds or keeps in reserve. */
  free(): number {
    return this.total - this.committed;
  }
}

export interface DescriptorShare {
  readonly name: string;
  readonly reserve: number;
  held(): number;
  /** Whether one more descriptor may be taken now. */
  canAcquire(): boolean;
  /** Takes one (after canAcquire, or when handing over one just released). */
  acquire(): void;
  release(): void;
}

/** The budget of a plan, with its four shares. */
export function shareDescriptors(plan: SocketPlan): {
  budget: DescriptorBudget;
  admin: DescriptorShare;
  agent: DescriptorShare;
  downloads: DescriptorShare;
  mqtt: DescriptorShare;
} {
  const budget = new DescriptorBudget(plan.shared);
  return {
    budget,
    admin: budget.share('admin', plan.reserves.admin),
    agent: budget.share('agent', plan.reserves.agent),
    downloads: budget.share('downloads', plan.reserves.downloads),
    mqtt: budget.share('mqtt'),
  };
}

export interface ConnectionCaps {
  max: number;
  /** Per remote address; Infinity for none (the admin listener: every client is local). */
  perAddress: number;
  /** Addresses not capped per address (trusted balancers: every device behind one arrives from it). */
  uncapped?: ((address: string) => boolean) | undefined;
  /** The body of the 503 written to a connection refused for its address. */
  refusal: string;
  /** The listener's share of the process's descriptors; when it has none left, as when full. */
  share?: DescriptorShare | undefined;
}

/** Refused connections given a moment to read their 503 before being closed; beyond, closed at once. */
const MAX_LINGERING = 64;
const LINGER_MS = 1000;

export interface ConnectionCap {
  count(): number;
  /**
   * The connection carries an authenticated download: it no longer counts against its address's
   * cap and is never evicted. Many phones behind one NAT (an office) pulling one package at once
   * must not be cut off; the caps are against hosts holding connections they do nothing with.
   */
  trust(socket: Socket): void;
  /**
   * A request on the connection was authenticated (the admin listener: the token or a signed-in
   * cookie). A full listener closes such a connection only when no unauthenticated one is left to
   * close, and never while it is answering (or receiving) a request.
   */
  authenticated(socket: Socket): void;
}

interface Tracked {
  address: string;
  /** The request being received or answered on it; null between requests. */
  request: IncomingMessage | null;
  authenticated: boolean;
}

/**
 * Caps the connections `server` accepts, without letting connections that do nothing hold it.
 *
 * A connection is *waiting* while it has no complete request being answered: just opened, still
 * sending its headers or body (a slow or dripping client), or idle between requests. When its
 * address is at its cap, or the listener is full, a newcomer takes the place of the oldest waiting
 * connection (unauthenticated ones first) rather than being refused: 3,000 slow connections from
 * one address (a host behind the same NAT as the phones, a local process on the admin port) no
 * longer lock that address, or the admin console, out. A connection being answered is never
 * closed for a newcomer; only when all of an address's connections are busy is the newcomer
 * refused, with a short 503 saying why (past the listener's own cap, closed at once, as Node's
 * maxConnections does: descriptors are what is short). The MQTT listener does the same
 * (broker/connection-cap.ts).
 */
export function capConnections(server: Server, caps: ConnectionCaps): ConnectionCap {
  // Each address's untrusted open sockets, in the order they last started waiting (a Set keeps insertion order).
  const byAddress = new Map<string, Set<Socket>>();
  const tracked = new WeakMap<Socket, Tracked>();
  const trusted = new WeakSet<Socket>();
  let total = 0;
  let lingering = 0;
  const response = (body: string) =>
    `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

  const refuse = (socket: Socket) => {
    if (lingering >= MAX_LINGERING) {
      socket.destroy();
      return;
    }
    lingering++;
    socket.on('error', () => {});
    socket.on('data', () => {}); // read and drop the request, so closing does not reset the 503
    socket.once('close', () => lingering--);
    socket.end(response(caps.refusal));
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  };

  /** Busy: a complete request (or, once authenticated, any request: an upload) is being answered. */
  const isBusy = (state: Tracked | undefined) => state?.request != null && (state.request.complete || state.authenticated);

  /** The oldest waiting connection of `sockets`, unauthenticated ones first. */
  const waitingOf = (sockets: Set<Socket> | undefined): Socket | undefined => {
    if (!sockets) return undefined;
    let authenticated: Socket | undefined;
    for (const socket of sockets) {
      const state = tracked.get(socket);
      if (isBusy(state)) continue;
      if (!state?.authenticated) return socket;
      authenticated ??= socket;
    }
    return authenticated;
  };

  const evict = (socket: Socket) => {
    const state = tracked.get(socket);
    byAddress.get(state?.address ?? '')?.delete(socket); // counted out at once, so its 'close' does not count it again
    total--;
    caps.share?.release();
    socket.destroy();
  };

  /**
   * A full listener takes a newcomer in place of a waiting connection. Of an address holding more
   * connections than the newcomer's (so a few hosts cannot hold it all: before, 4 × 64 slow
   * connections held 256 places), its oldest; else of the newcomer's own address. Without it, a
   * few hosts each under the per-address cap held the whole listener with slow connections, and
   * no other device could enroll until their requests timed out.
   */
  const makeRoom = (address: string, mine: number): boolean => {
    let greediest: Set<Socket> | undefined;
    for (const sockets of byAddress.values()) if (!greediest || sockets.size > greediest.size) greediest = sockets;
    if (greediest && greediest.size > mine + 1) {
      const victim = waitingOf(greediest) ?? (greediest.values().next().value as Socket | undefined);
      if (victim) {
        evict(victim);
        return true;
      }
    }
    const own = waitingOf(byAddress.get(address));
    if (!own) return false;
    evict(own);
    return true;
  };

  /** The request is answered: the connection waits again, as the newest of its address. */
  const answered = (socket: Socket, request: IncomingMessage) => {
    const state = tracked.get(socket);
    if (!state || state.request !== request) return;
    state.request = null;
    const sockets = byAddress.get(state.address);
    if (sockets?.delete(socket)) sockets.add(socket);
  };

  // Connections are counted before http sees them: a refused one never reaches a parser.
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: unknown[]) => boolean;
  server.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event === 'request') {
      const [request, reply] = args as [IncomingMessage, ServerResponse];
      const socket = request.socket;
      const state = tracked.get(socket);
      if (state) {
        state.request = request;
        reply.once('finish', () => answered(socket, request));
        reply.once('close', () => answered(socket, request));
      }
      return emit(event, ...args);
    }
    if (event !== 'connection') return emit(event, ...args);
    const socket = args[0] as Socket;
    const address = socket.remoteAddress ?? '';
    let mine = byAddress.get(address)?.size ?? 0;
    if (mine >= caps.perAddress && !caps.uncapped?.(address)) {
      const oldest = waitingOf(byAddress.get(address));
      if (!oldest) {
        refuse(socket);
        return false;
      }
      evict(oldest);
      mine--;
    }
    const full = total >= caps.max || (caps.share !== undefined && !caps.share.canAcquire());
    if (full && !makeRoom(address, mine)) {
      socket.destroy();
      return false;
    }
    total++;
    caps.share?.acquire();
    let sockets = byAddress.get(address);
    if (!sockets) byAddress.set(address, (sockets = new Set()));
    sockets.add(socket);
    tracked.set(socket, { address, request: null, authenticated: false });
    socket.once('close', () => {
      // An evicted socket was counted out already.
      if (sockets.delete(socket) || trusted.has(socket)) {
        total--;
        caps.share?.release();
      }
      if (sockets.size === 0 && byAddress.get(address) === sockets) byAddress.delete(address);
    });
    return emit(event, ...args);
  }) as typeof server.emit;
  return {
    count: () => total,
    trust: (socket) => {
      if (trusted.has(socket)) return;
      const sockets = byAddress.get(socket.remoteAddress ?? '');
      // Still counted (not evicted, not closed): it leaves its address's set, stays in the total.
      if (!sockets?.delete(socket)) return;
      trusted.add(socket);
      if (sockets.size === 0) byAddress.delete(socket.remoteAddress ?? '');
    },
    authenticated: (socket) => {
      const state = tracked.get(socket);
      if (state) state.authenticated = true;
    },
  };
}
