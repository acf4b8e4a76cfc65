// The broker's connections (connection-cap.ts) over real sockets: one Set entry per connection and
// handlers shared by every socket (what a held connection costs here), the cap making room by
// closing the oldest connection that has not logged in, and a logged-in one never closed for it.
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BrokerConnections } from '../../../src-main/backend/broker/connection-cap.ts';

let server: Server | undefined;
const clients: Socket[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  if (server) await new Promise((resolve) => server!.close(resolve));
  server = undefined;
});

/** A listener with BrokerConnections; `accepted` are its server-side sockets, in order. */
async function listener(max: number) {
  server = createServer();
  const connections = new BrokerConnections([server], max);
  const accepted: Socket[] = [];
  server.on('connection', (socket: Socket) => accepted.push(socket));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const open = async () => {
    const client = connect({ port, host: '127.0.0.1' });
    client.on('error', () => {});
    clients.push(client);
    await once(client, 'connect');
    await until(() => accepted.length >= clients.length);
    return client;
  };
  return { connections, accepted, open };
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(done()).toBe(true);
}

describe('BrokerConnections', () => {
  it('counts each connection once, with one close and one error handler shared by every socket', async () => {
    const { connections, accepted, open } = await listener(100);
    for (let i = 0; i < 5; i++) await open();
    expect(connections.size).toBe(5);
    const closeHandlers = new Set(accepted.flatMap((socket) => socket.listeners('close')));
    const errorHandlers = new Set(accepted.flatMap((socket) => socket.listeners('error')));
    expect(closeHandlers.size).toBe(1);
    expect(errorHandlers.size).toBe(1);
    clients[0]!.destroy();
    await until(() => connections.size === 4);
  });

  it('makes room by closing the oldest connection not logged in; a logged-in one is never closed for it', async () => {
    const { connections, accepted, open } = await listener(2);
    await open();
    await open();
    connections.loggedIn(accepted[0]!);
    // Full: the newcomer takes the place of the oldest that has not logged in (the second).
    await open();
    await until(() => accepted[1]!.destroyed);
    expect(accepted[0]!.destroyed).toBe(false);
    expect(accepted[2]!.destroyed).toBe(false);
    expect(connections.size).toBe(2);
    // Every place logged in: a newcomer is refused.
    connections.loggedIn(accepted[2]!);
    await open();
    await until(() => accepted[3]!.destroyed);
    expect(accepted[0]!.destroyed || accepted[2]!.destroyed).toBe(false);
    expect(connections.size).toBe(2);
    connections.destroyAll();
    await until(() => connections.size === 0);
  });
});
