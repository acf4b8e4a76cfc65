import type { Server, Socket } from 'node:net';

type Endpoint = { remoteAddress?: string; remotePort?: number };

/** What identifies one TCP connection on a listener: the client's address and port. */
const keyOf = (socket: Endpoint) => `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;

/**
 * Caps each broker listener at `max` connections without letting idle ones hold it. Devices keep
 * one connection open for hours, so the cap cannot simply refuse newcomers: 153 sockets from one
 * host that never sent a CONNECT held the whole listener until aedes' 30 s connect time-out, and
 * could come right back. A full listener closes its oldest connection that has not logged in to
 * take a newcomer; logged-in devices are never closed for it, and only when every place is a
 * logged-in device is the newcomer refused.
 */
export function capBrokerConnections(servers: Server[], max: number): { loggedIn(connection: Endpoint): void } {
  const forgetters: ((key: string) => void)[] = [];
  for (const server of servers) {
    const counted = new Set<Socket>();
    // Not logged in yet, oldest first (a Map keeps insertion order).
    const waiting = new Map<string, Socket>();
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
    forgetters.push((key) => waiting.delete(key));
  }
  return { loggedIn: (connection) => forgetters.forEach((forget) => forget(keyOf(connection))) };
}
