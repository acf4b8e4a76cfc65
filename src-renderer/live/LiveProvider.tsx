import { useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import { admin, AdminApiError } from '../api/client.ts';
import { useFeed } from '../api/queries.ts';
import type { StreamEvent } from '../../src-shared/contract/index.ts';
import { LiveSync } from './cache-sync.ts';
import { openEventStream, type StreamState } from './event-stream.ts';

const LiveContext = createContext<StreamState>('connecting');

type LiveListener = (event: StreamEvent) => void;
const listeners = new Set<LiveListener>();

/**
 * Calls `listener` with every event the live stream brings from now on (e.g. the answer to a
 * ping that was just sent); returns the function that stops it.
 */
export function onLiveEvent(listener: LiveListener): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

export function useLiveState(): StreamState {
  return useContext(LiveContext);
}

/**
 * Keeps every query of the console current from the server's event stream: no polling, no
 * reloads. It starts after the first page of the activity feed so the stream resumes right after
 * the newest event the console has seen (nothing between the two is lost).
 */
export function LiveProvider({ children }: { children: ReactNode }) {
  const client = useQueryClient();
  const feed = useFeed();
  const [state, setState] = useState<StreamState>('connecting');
  const started = useRef(false);

  const feedReady = feed.isSuccess || feed.isError;
  useEffect(() => {
    if (!feedReady || started.current) return;
    started.current = true;
    const sync = new LiveSync(client, {
      fetchAgent: (id) =>
        admin.agents.get(id).catch((error: unknown) => {
          if (error instanceof AdminApiError && error.status === 404) return null;
          throw error;
        }),
    });
    const stream = openEventStream({
      url: '/api/events/stream',
      lastEventId: feed.data?.[0]?.id ?? 0,
      onEvent: (event) => {
        sync.handle(event);
        for (const listener of listeners) listener(event);
      },
      onState: (next, detail) => {
        setState(next);
        if (next === 'live' && detail?.reconnected) void sync.refreshAll();
      },
    });
    return () => {
      started.current = false;
      stream.close();
      sync.dispose();
    };
    // The stream is opened once per mount; later feed updates come from the stream itself.
    // eslint-disable-next-line react-hooks/exhaustive-deps -- opened once per mount, as said above
  }, [feedReady, client]);

  return <LiveContext.Provider value={state}>{children}</LiveContext.Provider>;
}
