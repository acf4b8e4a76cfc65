import type { FastifyReply, FastifyRequest } from 'fastify';
import { SSE_HEARTBEAT_MS, sseEventFrame, sseHeartbeatFrame, sseRetryFrame, type EventStreamQuery } from '../../../src-shared/contract/index.ts';
import type { EventLog, RecordedEvent } from '../events/event-log.ts';

/**
 * Server-Sent Events: every recorded event as `event: <type>` with the JSON event as data and
 * its id, so a reconnecting EventSource (Last-Event-ID) first gets what it missed.
 */
export function streamEvents(events: EventLog, request: FastifyRequest<{ Querystring: EventStreamQuery }>, reply: FastifyReply): void {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  // A HEAD asks for the headers only: answer them and end, rather than hold a stream open.
  if (request.method === 'HEAD') {
    res.end();
    return;
  }
  const send = (event: RecordedEvent) => {
    res.write(sseEventFrame(event));
  };
  res.write(sseRetryFrame());
  const lastId = Number(request.headers['last-event-id'] ?? request.query.after ?? 0);
  if (Number.isInteger(lastId) && lastId > 0) {
    for (const event of events.latest(1000, lastId).reverse()) send(event);
  }
  const unsubscribe = events.subscribe(send);
  const heartbeat = setInterval(() => res.write(sseHeartbeatFrame()), SSE_HEARTBEAT_MS);
  const stop = () => {
    clearInterval(heartbeat);
    unsubscribe();
  };
  request.raw.on('close', stop);
  res.on('error', stop);
}
