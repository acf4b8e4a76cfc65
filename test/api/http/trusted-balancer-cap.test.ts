/**
 * Behind a load balancer (`serve --trust-proxy`), every device arrives from the balancer's address:
 * the agent listener's per-address cap (a quarter of its connections) must not apply to it, or one
 * balancer could hold only a quarter of a node's connections. Other addresses keep their cap. The
 * server runs in its own process under `ulimit -n 1024`; the "balancer" is 127.0.4.2.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planSockets } from '../../../src-main/backend/http/socket-limits.ts';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';

const FD_LIMIT = 1024;
const plan = planSockets(FD_LIMIT);
const BALANCER = '127.0.4.2';
const OTHER = '127.0.4.3';
let server: ChildBackend;

beforeAll(async () => {
  server = await startChildBackend({ trustProxy: [BALANCER] }, `ulimit -n ${FD_LIMIT} &&`);
});

afterAll(async () => {
  await server?.stop();
});

/** `count` connections from `localAddress`, each having sent half its headers; how many are still open after a moment. */
async function holdConnections(localAddress: string, count: number): Promise<{ open: () => number; sockets: Socket[] }> {
  const { hostname, port } = new URL(server.info.api_url);
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket>((resolve) => {
          const socket = connect({ host: hostname, port: Number(port), localAddress });
          socket.on('error', () => {});
          socket.once('connect', () => {
            socket.write('GET /api/initSession HTTP/1.1\r\nHost: 127.0.0.1\r\n');
            resolve(socket);
          });
          socket.once('close', () => resolve(socket));
        }),
    ),
  );
  await new Promise((resolve) => setTimeout(resolve, 1500));
  return { open: () => sockets.filter((socket) => !socket.destroyed && !socket.closed).length, sockets };
}

describe('the per-address cap behind a trusted balancer (ulimit -n 1024)', () => {
  it('the balancer holds more than one address may; another address is still capped', { timeout: 60_000 }, async () => {
    const count = plan.agentConnectionsPerAddress * 2;
    expect(count + plan.agentConnectionsPerAddress).toBeLessThan(plan.agentConnections);
    const balancer = await holdConnections(BALANCER, count);
    const other = await holdConnections(OTHER, count);
    expect(balancer.open()).toBe(count);
    expect(other.open()).toBe(plan.agentConnectionsPerAddress);
    for (const socket of [...balancer.sockets, ...other.sockets]) socket.destroy();
  });
});
