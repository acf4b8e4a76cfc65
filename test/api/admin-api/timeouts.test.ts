/**
 * The admin listener's request time-out (the agent listener's value, shortened here to 5 s so the
 * test is quick; at 2 s a loaded machine's pause of the test process alone cut a dripping upload): a request whose body drips in is cut once the time is up, even authenticated;
 * an upload may take longer as long as bytes keep coming, and is cut once they stop.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';

const TIMEOUT_MS = 5000;
let t: TestBackend;
beforeAll(async () => {
  t = await startTestBackend({ sockets: { requestTimeoutMs: TIMEOUT_MS } });
});
afterAll(async () => {
  await t.stop();
});

/** Sends the head of a request with a large body, then one byte every 100 ms while `dripping()`. */
function drip(head: string, dripping: () => boolean): { socket: Socket; closedAt: Promise<number>; answer: () => string } {
  const { port } = new URL(t.backend.info.admin_url);
  const socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
  let answer = '';
  socket.on('data', (data: Buffer) => (answer += data.toString()));
  socket.on('error', (error) => (answer += `(${error.message})`));
  const timer = setInterval(() => {
    if (dripping() && socket.writable) socket.write('x');
  }, 100);
  const closedAt = new Promise<number>((resolve) =>
    socket.once('close', () => {
      clearInterval(timer);
      resolve(Date.now());
    }),
  );
  return { socket, closedAt, answer: () => answer };
}

const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<null>((resolve) => setTimeout(() => resolve(null), ms))]);

describe('admin request time-outs', () => {
  it('cuts an authenticated request whose body drips past the time-out', { timeout: 30_000 }, async () => {
    const started = Date.now();
    const { closedAt } = drip(
      `POST /api/invitations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.backend.info.admin_token}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`,
      () => true,
    );
    const closed = await within(closedAt, 3 * TIMEOUT_MS);
    expect(closed).not.toBeNull();
    expect(closed! - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
  });

  it('lets an upload run past it while bytes come, and cuts it once they stop', { timeout: 45_000 }, async () => {
    let flowing = true;
    const { socket, closedAt, answer } = drip(
      `POST /api/files?name=slow.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.backend.info.admin_token}\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n`,
      () => flowing,
    );
    expect(await within(closedAt, 2 * TIMEOUT_MS + 1000), `closed early; the server said: ${answer()}`).toBeNull(); // still uploading after twice the time-out
    flowing = false;
    const stopped = Date.now();
    const closed = await within(closedAt, 3 * TIMEOUT_MS);
    expect(closed).not.toBeNull();
    expect(closed! - stopped).toBeGreaterThanOrEqual(TIMEOUT_MS - 300);
    socket.destroy();
    // nothing half-stored
    expect((await t.admin('GET', '/files')).body).toEqual([]);
  });
});
