/**
 * Sockets are file descriptors, and a process has a fixed number of them (`ulimit -n`). Without
 * caps, 1,100 slow connections on the agent listener used them all, and then neither listener
 * could accept anything. The plan below splits the descriptors: a reserve for the database, files
 * being served and mail; a share kept for the admin listener; the agent listener's connections and
 * downloads (each holds a file open too); the MQTT broker. One client address may hold only a
 * part of the agent listener, so a single host cannot take it all.
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { REQUEST_TIMEOUT_MS } from './request-deadline.ts';

export interface SocketPlan {
  /** The descriptor limit the plan was made for (null: unknown, defaults used). */
  fdLimit: number | null;
  agentConnections: number;
  agentConnectionsPerAddress: number;
  agentDownloads: number;
  adminConnections: number;
  /** The embedded broker's connections, plain and TLS listeners together. */
  mqttConnections: number;
  /** How long a client may take to send a whole request (headers too), on both listeners. */
  requestTimeoutMs: number;
}

const RESERVE = 128;
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
  const usable = Math.max(64, limit - RESERVE - ADMIN_CONNECTIONS);
  const agentShare = Math.floor(usable / 2);
  const agentConnections = Math.min(MAX_AGENT_CONNECTIONS, Math.floor((agentShare * 2) / 3));
  return {
    fdLimit,
    agentConnections,
    agentConnectionsPerAddress: Math.max(16, Math.floor(agentConnections / 4)),
    agentDownloads: Math.max(8, Math.min(MAX_DOWNLOADS, agentShare - agentConnections)),
    adminConnections: ADMIN_CONNECTIONS,
    // The other half: every device holds one MQTT connection all day, HTTP only in bursts.
    mqttConnections: Math.min(MAX_MQTT_CONNECTIONS, usable - agentShare),
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
  };
}

export interface ConnectionCaps {
  max: number;
  /** Per remote address; Infinity for none (the admin listener: every client is local). */
  perAddress: number;
  /** The body of the 503 written to a connection refused for its address. */
  refusal: string;
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
}

/**
 * Caps the connections `server` accepts. A connection over the listener's cap is closed at once
 * (as Node's maxConnections does: descriptors are what is short); one over its address's cap gets
 * a short 503 first, so a well-behaved client learns why.
 */
export function capConnections(server: Server, caps: ConnectionCaps): ConnectionCap {
  // Each address's untrusted open sockets, oldest first (a Set keeps insertion order).
  const byAddress = new Map<string, Set<Socket>>();
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

  /**
   * A full listener still takes a newcomer whose address holds fewer connections than the
   * greediest address, by closing that address's oldest one. Without it, a few hosts each under
   * the per-address cap (4 × 64 of 256) held the whole listener with slow connections, and no
   * other device could enroll until their requests timed out. Now they must be as many as the
   * connections they want to hold.
   */
  const evictForFairShare = (newcomers: number): boolean => {
    let greediest: Set<Socket> | undefined;
    for (const sockets of byAddress.values()) if (!greediest || sockets.size > greediest.size) greediest = sockets;
    if (!greediest || greediest.size <= newcomers + 1) return false;
    const oldest = greediest.values().next().value as Socket;
    greediest.delete(oldest); // counted out at once, so its 'close' does not count it again
    total--;
    oldest.destroy();
    return true;
  };

  // Connections are counted before http sees them: a refused one never reaches a parser.
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: unknown[]) => boolean;
  server.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event !== 'connection') return emit(event, ...args);
    const socket = args[0] as Socket;
    const address = socket.remoteAddress ?? '';
    const mine = byAddress.get(address)?.size ?? 0;
    if (mine >= caps.perAddress) {
      refuse(socket);
      return false;
    }
    if (total >= caps.max && !evictForFairShare(mine)) {
      socket.destroy();
      return false;
    }
    total++;
    let sockets = byAddress.get(address);
    if (!sockets) byAddress.set(address, (sockets = new Set()));
    sockets.add(socket);
    socket.once('close', () => {
      // An evicted socket was counted out already.
      if (sockets.delete(socket) || trusted.has(socket)) total--;
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
  };
}
