import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AgentSummary } from '../agents/agents.ts';
import type { EventLog, RecordedEvent } from '../events/event-log.ts';
import {
  SSE_HEARTBEAT_MS,
  sseEventFrame,
  sseHeartbeatFrame,
  sseRetryFrame,
  type EventStreamQuery,
} from '../../../src-shared/contract/index.ts';

/** The device-list row of an agent, or null once it is gone. */
export type AgentRowLookup = (agentId: number) => AgentSummary | null;

/**
 * One SSE frame per event object, shared by every open stream: the row is read and the JSON
 * written once per event, however many consoles are connected.
 */
const frames = new WeakMap<RecordedEvent, string>();

/**
 * An event that names an agent (`agent.*`, and e.g. `mqtt.login_refused`) carries `agent`: the
 * agent's device-list row as it stands after the event (null once it is gone), so a console
 * updates the row without fetching it.
 */
function frameOf(event: RecordedEvent, agentRow: AgentRowLookup): string {
  let frame = frames.get(event);
  if (frame === undefined) {
    const payload = event.agent_id !== null ? { ...event, agent: agentRow(event.agent_id) } : event;
    frame = sseEventFrame(payload);
    frames.set(event, frame);
  }
  return frame;
}

/**
 * Server-Sent Events: every recorded event as `event: <type>` with the JSON event as data and
 * its id, so a reconnecting EventSource (Last-Event-ID) first gets what it missed.
 */
export function streamEvents(
  events: EventLog,
  agentRow: AgentRowLookup,
  request: FastifyRequest<{ Querystring: EventStreamQuery }>,
  reply: FastifyReply,
): void {
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
    res.write(frameOf(event, agentRow));
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
