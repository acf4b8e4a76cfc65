import type { Server, Socket } from 'node:net';

type Endpoint = { remoteAddress?: string; remotePort?: number; localPort?: number };

/** What identifies one TCP connection: the client's address and port, and the listener's port. */
const keyOf = (socket: Endpoint) => `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}|${socket.localPort ?? ''}`;

/**
 * Caps the broker's listeners at `max` connections in all without letting idle ones hold it. Devices keep
 * one connection open for hours, so the cap cannot simply refuse newcomers: 153 sockets from one
 * host that never sent a CONNECT held the whole listener until aedes' 30 s connect time-out, and
 * could come right back. A full listener closes its oldest connection that has not logged in to
 * take a newcomer; logged-in devices are never closed for it, and only when every place is a
 * logged-in device is the newcomer refused.
 */
export function capBrokerConnections(servers: Server[], max: number): { loggedIn(connection: Endpoint): void } {
  // One count for all listeners (plain and TLS): a device uses one or the other.
  const counted = new Set<Socket>();
  // Not logged in yet, oldest first (a Map keeps insertion order).
  const waiting = new Map<string, Socket>();
  for (const server of servers) {
    server.on('connection', (socket: Socket) => {
      if (counted.size >= max) {
        const oldest = waiting.entries().next().value as [string, Socket] | undefined;
        if (!oldest) {
          socket.destroy();
          return;
        }
        waiting.delete(oldest[0]);
        counted.delete(oldest[1]);
        oldest[1].destroy();
      }
      const key = keyOf(socket);
      counted.add(socket);
      waiting.set(key, socket);
      socket.once('close', () => {
        counted.delete(socket);
        if (waiting.get(key) === socket) waiting.delete(key);
      });
    });
  }
  return { loggedIn: (connection) => waiting.delete(keyOf(connection)) };
}
