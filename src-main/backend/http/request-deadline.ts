import type { FastifyInstance, FastifyRequest } from 'fastify';

/** What both listeners allow a client to take to send its request (headers, then body). */
export const REQUEST_TIMEOUT_MS = 30_000;
export const HEADERS_TIMEOUT_MS = 30_000;

/**
 * The admin listener's request time-out. Node's own `requestTimeout` (the agent listener's) cuts
 * any request not received in full within the limit, which would cut a 4 GiB upload; here a
 * request must arrive within `timeoutMs`, except those `isLongUpload` picks, which only
 * must not stall (no byte for that long). A request cut short loses its connection.
 */
export function enforceRequestDeadline(
  app: FastifyInstance,
  isLongUpload: (request: FastifyRequest) => boolean,
  timeoutMs = REQUEST_TIMEOUT_MS,
): void {
  app.server.headersTimeout = Math.min(HEADERS_TIMEOUT_MS, timeoutMs);
  app.addHook('onRequest', async (request, reply) => {
    const raw = request.raw;
    if (raw.complete) return;
    const socket = raw.socket;
    const started = Date.now();
    const long = isLongUpload(request);
    let lastBytes = socket.bytesRead;
    let lastProgress = started;
    const check = setInterval(
      () => {
        if (raw.complete || socket.destroyed) return clearInterval(check);
        const now = Date.now();
        if (socket.bytesRead !== lastBytes) {
          lastBytes = socket.bytesRead;
          lastProgress = now;
        }
        const late = long ? now - lastProgress > timeoutMs : now - started > timeoutMs;
        if (late) {
          clearInterval(check);
          socket.destroy();
        }
      },
      Math.min(1000, timeoutMs / 4),
    ).unref();
    raw.once('end', () => clearInterval(check));
    reply.raw.once('close', () => clearInterval(check));
  });
}

/**
 * An answer sent before the request's body was read in full (a 401 to a dripping upload) closes
 * the connection, instead of Node reading the rest of the body to keep it alive.
 */
export function closeWhenBodyUnread(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply) => {
    if (!request.raw.complete) reply.header('connection', 'close');
  });
}
