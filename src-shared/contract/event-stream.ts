// The live stream of events, GET /api/events/stream: its own file because its frames carry the
// agent's row (agents.ts), while an agent's detail carries its events (events.ts).
import type { AgentSummary } from './agents.ts';
import type { LiveEvent, ServerEvent, ServerEventType } from './events.ts';

// ── GET /api/events/stream: Server-Sent Events ──────────────────────────────────────────────
// The stream opens with a `retry:` preamble, then sends every recorded event as
// `id: <id>\nevent: <type>\ndata: <StreamEvent JSON>\n\n`, and a comment line as heartbeat.
// `?after=<id>` (or the Last-Event-ID header) replays what came after that id first.

export const SSE_RETRY_MS = 2000;
export const SSE_HEARTBEAT_MS = 15_000;

/**
 * The data of an event frame: the event (its data typed by its type, from the ServerEvents map), and
 * for an event naming an agent also `agent`, the agent's device-list row as it stands after the
 * event (null once it is gone).
 */
export type StreamEvent = ServerEvent & { agent?: AgentSummary | null };

/** The frames the stream sends, as a client parses them. */
export type SseFrame =
  | { kind: 'retry'; retry: number }
  | { kind: 'event'; id: number; event: string; data: StreamEvent }
  | { kind: 'comment'; text: string };

export const sseRetryFrame = (ms = SSE_RETRY_MS) => `retry: ${ms}\n\n`;
export const sseEventFrame = (event: StreamEvent) => `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
export const sseHeartbeatFrame = () => ': keep-alive\n\n';

// Its query, EventStreamQuery, is a schema: in events.ts, with the other schemas (this file stays free of TypeBox).

/** Narrows an event by its type, its data typed from the ServerEvents map (here, not in events.ts: the console loads it, and events.ts builds schemas). */
export function isServerEvent<K extends ServerEventType>(event: LiveEvent, type: K): event is LiveEvent & ServerEvent<K> {
  return event.type === type;
}
