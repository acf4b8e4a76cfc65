import type { Server, Socket } from 'node:net';

type Endpoint = { remoteAddress?: string | undefined; remotePort?: number | undefined; localPort?: number | undefined };

/** What identifies one TCP connection: the client's address and port, and the listener's port. */
const keyOf = (socket: Endpoint) => `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}|${socket.localPort ?? ''}`;

/**
 * The broker's part of descriptors shared with the HTTP listeners (http/socket-limits.ts hands one
 * over): taken per connection, given back when it closes.
 */
export interface ConnectionShare {
  canAcquire(): boolean;
  acquire(): void;
  release(): void;
}

/** A failed socket closes; nothing to do with its error here (aedes logs what concerns a client). */
const ignore = () => {};

/**
 * Every TCP connection of the broker's listeners (plain and TLS: a TLS socket closes with the TCP
 * socket under it), in one Set keyed by the socket, capped at `max` in all without letting idle ones
 * hold it. Devices keep one connection open for hours, so the cap cannot simply refuse newcomers:
 * 153 sockets from one host that never sent a CONNECT held the whole listener until aedes' 30 s
 * connect time-out, and could come right back. A full listener closes its oldest connection that has
 * not logged in to take a newcomer; logged-in devices are never closed for it, and only when every
 * place is a logged-in device is the newcomer refused. With a `share`, the listeners also stop where
 * it has nothing left (the HTTP listeners' reserves), and take more as HTTP gives descriptors back.
 *
 * What a held connection costs here is one Set entry: no closure per socket (one `close` handler
 * for all, reading the socket from `this`), and the endpoint key of the not-yet-logged-in ones only
 * until they log in.
 */
export class BrokerConnections {
  /** Open connections, counted against `max`. */
  private readonly open = new Set<Socket>();
  /** Not logged in yet, oldest first (a Map keeps insertion order), by endpoint (a TLS client's socket is not the TCP one). */
  private readonly waiting = new Map<string, Socket>();
  private readonly max: number;
  private readonly share: ConnectionShare | undefined;

  constructor(servers: Server[], max = Infinity, share?: ConnectionShare) {
    this.max = max;
    this.share = share;
    const connections = this.open;
    const waiting = this.waiting;
    // One function for every socket: `this` is the socket that closed.
    const onClose = function (this: Socket) {
      if (connections.delete(this)) share?.release();
      if (waiting.size > 0) {
        const key = keyOf(this); // the endpoint was read (and kept by the socket) when it was admitted
        if (waiting.get(key) === this) waiting.delete(key);
      }
    };
    for (const server of servers) server.on('connection', (socket: Socket) => this.admit(socket, onClose));
  }

  private admit(socket: Socket, onClose: (this: Socket) => void): void {
    if (this.open.size >= this.max || (this.share !== undefined && !this.share.canAcquire())) {
      const oldest = this.waiting.entries().next().value as [string, Socket] | undefined;
      if (!oldest) {
        socket.on('error', ignore);
        socket.destroy();
        return;
      }
      this.waiting.delete(oldest[0]);
      this.open.delete(oldest[1]);
      this.share?.release();
      oldest[1].destroy();
    }
    this.open.add(socket);
    this.share?.acquire();
    this.waiting.set(keyOf(socket), socket);
    socket.on('error', ignore);
    socket.on('close', onClose);
  }

  /** The connection's login was accepted: it is no longer closed to make room. */
  loggedIn(connection: Endpoint): void {
    if (this.waiting.size > 0) this.waiting.delete(keyOf(connection));
  }

  /** Open connections (plain and TLS). */
  get size(): number {
    return this.open.size;
  }

  /** Ends every connection left. */
  destroyAll(): void {
    for (const socket of this.open) socket.destroy();
  }
}
