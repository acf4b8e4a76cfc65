import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AgentSummary } from '../agents/agents.ts';
import type { EventLog, RecordedEvent } from '../events/event-log.ts';
import type { FleetScope } from '../fleets/scope.ts';
import type { EventFeed } from '../cluster/feed.ts';
import { eventVisible, type FleetOf } from './event-scope.ts';
import {
  SSE_HEARTBEAT_MS,
  sseEventFrame,
  sseHeartbeatFrame,
  sseRetryFrame,
  type EventStreamQuery,
} from '../../../src-shared/contract/index.ts';

/** The device-list row of an agent, or null once it is gone. */
export type AgentRowLookup = (agentId: number) => Promise<AgentSummary | null>;

/**
 * One SSE frame per event object, shared by every open stream: the row is read and the JSON
 * written once per event, however many consoles are connected.
 */
const frames = new WeakMap<RecordedEvent, Promise<string>>();

/**
 * An event that names an agent (`agent.*`, and e.g. `mqtt.login_refused`) carries `agent`: the
 * agent's device-list row as it stands after the event (null once it is gone), so a console
 * updates the row without fetching it.
 */
function frameOf(event: RecordedEvent, agentRow: AgentRowLookup): Promise<string> {
  let frame = frames.get(event);
  if (frame === undefined) {
    const agentId = event.agent_id;
    frame = (async () => sseEventFrame(agentId !== null ? { ...event, agent: await agentRow(agentId) } : event))();
    frames.set(event, frame);
  }
  return frame;
}

/** How many event streams stay open: per signed-in client (a console session, the admin token), and in all. */
export interface StreamCaps {
  perClient: number;
  total: number;
}

/**
 * A browser holds at most 6 connections to one server, so a console never needs more streams
 * than that; the total keeps half of the admin listener's 128 connections for everything else.
 */
export const DEFAULT_STREAM_CAPS: StreamCaps = { perClient: 6, total: 64 };

/**
 * The open event streams, oldest first. A stream never ends by itself: without a cap, 128 of them
 * held every admin connection and the console could neither load nor sign in. A client opening
 * one more than its share closes its own oldest; past the total, the oldest of all is closed.
 */
export class EventStreams {
  private readonly caps: StreamCaps;
  private readonly all = new Set<{ client: string; close: () => void }>();
  private readonly byClient = new Map<string, number>();

  constructor(caps: Partial<StreamCaps> = {}) {
    this.caps = { ...DEFAULT_STREAM_CAPS, ...caps };
  }

  /** Registers a stream of `client`, closing the oldest over the caps; returns its unregister. */
  add(client: string, close: () => void): () => void {
    const entry = { client, close };
    for (const open of this.all) {
      if ((this.byClient.get(client) ?? 0) < this.caps.perClient) break;
      if (open.client === client) this.drop(open);
    }
    while (this.all.size >= this.caps.total) this.drop(this.all.values().next().value!);
    this.all.add(entry);
    this.byClient.set(client, (this.byClient.get(client) ?? 0) + 1);
    return () => this.remove(entry);
  }

  count(client?: string): number {
    return client === undefined ? this.all.size : (this.byClient.get(client) ?? 0);
  }

  private drop(entry: { client: string; close: () => void }): void {
    if (!this.remove(entry)) return;
    entry.close();
  }

  private remove(entry: { client: string; close: () => void }): boolean {
    if (!this.all.delete(entry)) return false;
    const left = (this.byClient.get(entry.client) ?? 1) - 1;
    if (left > 0) this.byClient.set(entry.client, left);
    else this.byClient.delete(entry.client);
    return true;
  }
}

/** A lookup placing nothing (an unscoped stream never asks). */
const UNPLACED: FleetOf = {
  agent: () => Promise.resolve(undefined),
  invitation: () => Promise.resolve(undefined),
  code: () => Promise.resolve(undefined),
};

/** Who a stream is for: the fleets its client may see, and where each event's fleet is looked up. */
export interface StreamScope {
  fleets: FleetScope;
  fleetOf: FleetOf;
}

/**
 * Server-Sent Events: every recorded event, this node's and the others' (the cluster feed), as
 * `event: <type>` with the JSON event as data and its id, so a reconnecting EventSource
 * (Last-Event-ID, whichever node it reaches) first gets what it missed, read from the events table. The stream
 * counts against `client`'s share of `streams`: past it, the client's oldest stream ends. A
 * client scoped to fleets gets, live and in the replay, only the events it may see (event-scope.ts).
 */
export async function streamEvents(
  events: Pick<EventLog, 'latest'>,
  feed: EventFeed,
  agentRow: AgentRowLookup,
  request: FastifyRequest<{ Querystring: EventStreamQuery }>,
  reply: FastifyReply,
  streams: EventStreams,
  client: string,
  scope: StreamScope = { fleets: null, fleetOf: UNPLACED },
): Promise<void> {
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
  // Frames leave in the order of the events, whatever each one's lookups take.
  let sending = Promise.resolve();
  const send = (event: RecordedEvent) => {
    sending = sending
      .then(async () => {
        if (!(await eventVisible(event, scope.fleets, scope.fleetOf))) return;
        const frame = await frameOf(event, agentRow);
        if (!res.writableEnded) res.write(frame);
      })
      .catch(() => {}); // the database closed under a stream: it ends with the server
  };
  res.write(sseRetryFrame());
  const lastId = Number(request.headers['last-event-id'] ?? request.query.after ?? 0);
  const since = Number.isInteger(lastId) && lastId > 0 ? lastId : 0;
  // Listening before the replay is read: what is recorded meanwhile follows it, once. (By id, not
  // "after the last replayed": another node's event may commit after a higher id. One at or below
  // Last-Event-ID is the client's already, as it says, even when this node learns of it late.)
  let replaying = true;
  const meanwhile: RecordedEvent[] = [];
  const unsubscribe = feed.subscribe((event) => {
    if (event.id <= since) return;
    if (replaying) meanwhile.push(event);
    else send(event);
  });
  const replayed = new Set<number>();
  if (since > 0) {
    for (const event of (await events.latest(1000, since)).reverse()) {
      send(event);
      replayed.add(event.id);
    }
  }
  replaying = false;
  for (const event of meanwhile) if (!replayed.has(event.id)) send(event);
  const heartbeat = setInterval(() => res.write(sseHeartbeatFrame()), SSE_HEARTBEAT_MS);
  let unregister = () => {};
  const stop = () => {
    clearInterval(heartbeat);
    unsubscribe();
    unregister();
  };
  // Closed for a newer stream: the connection goes too (a stream's socket is of no use after it).
  unregister = streams.add(client, () => {
    stop();
    res.end();
    res.socket?.destroySoon();
  });
  request.raw.on('close', stop);
  res.on('error', stop);
}
