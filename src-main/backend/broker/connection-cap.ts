import type { Server, Socket } from 'node:net';

type Endpoint = { remoteAddress?: string; remotePort?: number; localPort?: number };

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

/**
 * Caps the broker's listeners at `max` connections in all without letting idle ones hold it. Devices keep
 * one connection open for hours, so the cap cannot simply refuse newcomers: 153 sockets from one
 * host that never sent a CONNECT held the whole listener until aedes' 30 s connect time-out, and
 * could come right back. A full listener closes its oldest connection that has not logged in to
 * take a newcomer; logged-in devices are never closed for it, and only when every place is a
 * logged-in device is the newcomer refused. With a `share`, the listeners also stop where it has
 * nothing left (the HTTP listeners' reserves), and take more as HTTP gives descriptors back.
 */
export function capBrokerConnections(
  servers: Server[],
  max: number,
  share?: ConnectionShare,
): { loggedIn(connection: Endpoint): void } {
  // One count for all listeners (plain and TLS): a device uses one or the other.
  const counted = new Set<Socket>();
  // Not logged in yet, oldest first (a Map keeps insertion order).
  const waiting = new Map<string, Socket>();
  for (const server of servers) {
    server.on('connection', (socket: Socket) => {
      if (counted.size >= max || (share !== undefined && !share.canAcquire())) {
        const oldest = waiting.entries().next().value as [string, Socket] | undefined;
        if (!oldest) {
          socket.destroy();
          return;
        }
        waiting.delete(oldest[0]);
        counted.delete(oldest[1]);
        share?.release();
        oldest[1].destroy();
      }
      const key = keyOf(socket);
      counted.add(socket);
      share?.acquire();
      waiting.set(key, socket);
      socket.once('close', () => {
        if (counted.delete(socket)) share?.release();
        if (waiting.get(key) === socket) waiting.delete(key);
      });
    });
  }
  return { loggedIn: (connection) => waiting.delete(keyOf(connection)) };
}
