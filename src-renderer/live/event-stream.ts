import { SseParser } from '../lib/sse.ts';
import type { StreamEvent } from '../../src-shared/contract/index.ts';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'signed-out';

export interface EventStreamOptions {
  url: string;
  /** Resume after this event id (the server replays what came after it). */
  lastEventId?: number;
  onEvent: (event: StreamEvent) => void;
  onState: (state: StreamState, detail?: { reconnected: boolean }) => void;
  fetchImpl?: typeof fetch;
  /** Delay before reconnecting, when the server sent no `retry:`. */
  retryMs?: number;
  maxRetryMs?: number;
}

/**
 * The admin event stream (Server-Sent Events) read with fetch, so every event type reaches the
 * console (EventSource only dispatches the names one listens to). Reconnects with Last-Event-ID
 * so nothing is missed, backing off while the server is away; stops when signed out.
 */
export function openEventStream(options: EventStreamOptions): { close(): void } {
  const fetchImpl = options.fetchImpl ?? fetch.bind(globalThis);
  let lastEventId = options.lastEventId ?? 0;
  let closed = false;
  let controller: AbortController | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let failures = 0;
  let connectedOnce = false;
  let serverRetry: number | null = null;

  const scheduleReconnect = () => {
    if (closed) return;
    options.onState('reconnecting');
    const base = serverRetry ?? options.retryMs ?? 2000;
    const delay = Math.min(base * 2 ** Math.max(0, failures - 1), options.maxRetryMs ?? 15_000);
    timer = setTimeout(() => void connect(), delay);
  };

  const connect = async () => {
    if (closed) return;
    timer = null;
    controller = new AbortController();
    if (!connectedOnce) options.onState('connecting');
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (lastEventId > 0) headers['last-event-id'] = String(lastEventId);
      const response = await fetchImpl(options.url, {
        headers,
        credentials: 'same-origin',
        signal: controller.signal,
        cache: 'no-store',
      });
      if (response.status === 401) {
        options.onState('signed-out');
        closed = true;
        return;
      }
      if (!response.ok || !response.body) throw new Error(`event stream answered HTTP ${response.status}`);
      const reconnected = connectedOnce;
      connectedOnce = true;
      failures = 0;
      options.onState('live', { reconnected });
      const parser = new SseParser();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const message of parser.push(value)) {
          serverRetry = parser.retry ?? serverRetry;
          let event: StreamEvent;
          try {
            event = JSON.parse(message.data) as StreamEvent;
          } catch {
            continue;
          }
          if (typeof event.id === 'number' && event.id > lastEventId) lastEventId = event.id;
          options.onEvent(event);
        }
        serverRetry = parser.retry ?? serverRetry;
      }
    } catch (error) {
      if (closed || (error as Error).name === 'AbortError') return;
    }
    failures++;
    scheduleReconnect();
  };

  void connect();
  return {
    close() {
      closed = true;
      if (timer !== null) clearTimeout(timer);
      controller?.abort();
    },
  };
}
