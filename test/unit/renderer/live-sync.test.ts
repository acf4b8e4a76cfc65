import { QueryClient } from '@tanstack/react-query';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { codeKeys } from '../../../src-renderer/api/codes.ts';
import { accountKeys } from '../../../src-renderer/api/accounts.ts';
import { keys } from '../../../src-renderer/api/queries.ts';
import type { AgentSummary as Agent, LiveEvent, ServerEventType, StreamEvent } from '../../../src-shared/contract/index.ts';
import { effectsOf, LiveSync, upsertAgents } from '../../../src-renderer/live/cache-sync.ts';
import { openEventStream, type StreamState } from '../../../src-renderer/live/event-stream.ts';

let nextId = 1;
// A frame as it comes off the wire: some tests send types of no ServerEvents entry (a newer server's).
function event(
  type: ServerEventType | (string & {}),
  refs: Partial<Pick<StreamEvent, 'agent_id' | 'invitation_id'>> = {},
): StreamEvent {
  const frame = {
    id: nextId++,
    at: new Date().toISOString(),
    type,
    entity_id: 1,
    agent_id: null,
    invitation_id: null,
    message: type,
    data: null,
    ...refs,
  };
  return frame as StreamEvent;
}

function agent(id: number, patch: Partial<Agent> = {}): Agent {
  return {
    id,
    name: `A${id}`,
    serial: `S${id}`,
    uuid: null,
    type: 'android',
    version: '1.0.0',
    enroll_status: 'enrolled',
    is_online: false,
    last_contact: null,
    last_report: null,
    lock: 0,
    wipe: 0,
    fleet_id: 1,
    fleet: 'Default fleet',
    email: null,
    firstname: null,
    lastname: null,
    computer_id: id,
    invitation_id: null,
    enrollment_code_id: null,
    enrollment_code: null,
    topic: `/1/agent/S${id}`,
    entity_id: 1,
    created_at: '',
    updated_at: '',
    model: null,
    manufacturer: null,
    os_name: null,
    os_version: null,
    ...patch,
  };
}

describe('what an event means for the caches', () => {
  it('maps capabilities to the queries they change', () => {
    expect(effectsOf(event('invitation.created', { invitation_id: 4 }))).toEqual([
      { kind: 'invalidate', key: keys.status },
      { kind: 'invalidate', key: keys.invitations },
    ]);
    // Who matches a filter or a saved view follows the devices and their tasks.
    const matches = [
      { kind: 'invalidate', key: keys.views },
      { kind: 'invalidate', key: keys.agentsWhere },
    ];
    expect(effectsOf(event('agent.enrolled', { agent_id: 9, invitation_id: 4 }))).toEqual([
      { kind: 'invalidate', key: keys.status },
      ...matches,
      // The Reports page's enrollments chart counts it at once.
      { kind: 'invalidate', key: keys.reportsOf('enrollments') },
      { kind: 'agent', id: 9 },
      { kind: 'invalidate', key: keys.agent(9) },
      { kind: 'invalidate', key: keys.invitations },
      { kind: 'invalidate', key: keys.fleets },
    ]);
    // Deployments and task statuses refresh the progress bars and the device's task list.
    expect(effectsOf(event('task.status', { agent_id: 9 }))).toEqual([
      { kind: 'invalidate', key: keys.status },
      ...matches,
      { kind: 'invalidate', key: keys.deployments },
    ]);
    // A deployment task done or failed is a point of the Reports page's deployments chart; pending is not.
    const result = (status: string): StreamEvent => ({
      ...event('task.status', { agent_id: 9 }),
      type: 'task.status',
      data: { deployment_id: 1, task_id: 2, status, reason: null, source: 'mqtt', fleet_id: 1 },
    });
    expect(effectsOf(result('failed'))).toContainEqual({ kind: 'invalidate', key: keys.reportsOf('deployments') });
    expect(effectsOf(result('done'))).toContainEqual({ kind: 'invalidate', key: keys.reportsOf('deployments') });
    expect(effectsOf(result('pending'))).not.toContainEqual({ kind: 'invalidate', key: keys.reportsOf('deployments') });
    expect(effectsOf(event('deployment.created'))).toContainEqual({ kind: 'invalidate', key: keys.deployments });
    expect(effectsOf(event('view.created'))).toEqual([{ kind: 'invalidate', key: keys.status }, ...matches]);
    expect(effectsOf(event('invitation.created', { invitation_id: 4 }))).not.toContainEqual(matches[0]);
    // An admin invited, changed or removed (by another window, the CLI): the Accounts page, and one's own role.
    expect(effectsOf(event('account.role_changed'))).toEqual([
      { kind: 'invalidate', key: keys.status },
      { kind: 'invalidate', key: accountKeys.accounts },
      { kind: 'invalidate', key: accountKeys.me },
      { kind: 'invalidate', key: accountKeys.tokens },
    ]);
    // Fleet device counts follow devices that come, go or move; presence leaves them alone.
    expect(effectsOf(event('agent.fleet_changed', { agent_id: 9 }))).toContainEqual({ kind: 'invalidate', key: keys.fleets });
    expect(effectsOf(event('agent.deleted', { agent_id: 9 }))).toContainEqual({ kind: 'invalidate', key: keys.fleets });
    expect(effectsOf(event('agent.online', { agent_id: 9 }))).not.toContainEqual({ kind: 'invalidate', key: keys.fleets });
    expect(effectsOf(event('agent.deleted', { agent_id: 9 }))).toContainEqual({ kind: 'agentRemoved', id: 9 });
    expect(effectsOf(event('invitation.deleted', { invitation_id: 4 }))).toContainEqual({
      kind: 'remove',
      key: keys.invitation(4),
    });
    expect(effectsOf(event('file.added'))).toContainEqual({ kind: 'invalidate', key: keys.stored('file') });
    expect(effectsOf(event('mail.sent', { invitation_id: 4 }))).toContainEqual({ kind: 'invalidate', key: keys.mail });
    expect(effectsOf(event('settings.updated'))).toContainEqual({ kind: 'invalidate', key: keys.settings });
    // A role changed: who may do what (GET /api/me) is read again, so the controls follow.
    expect(effectsOf(event('account.role_changed'))).toContainEqual({ kind: 'invalidate', key: accountKeys.me });
  });

  it('refreshes enrollment codes on their events, on enrollments and decisions that name a code, and on settings', () => {
    const codes = { kind: 'invalidate', key: codeKeys.all };
    const enrolled = (code_id: number | null, refs: Partial<Pick<StreamEvent, 'agent_id' | 'invitation_id'>>): StreamEvent => ({
      ...event('agent.enrolled', refs),
      type: 'agent.enrolled',
      data: { serial: 'S5', uuid: null, type: 'android', version: '1.0.0', code_id, enroll_status: 'enrolled' },
    });
    expect(effectsOf(event('code.created'))).toContainEqual(codes);
    expect(effectsOf(event('code.refused'))).toContainEqual(codes);
    expect(effectsOf(enrolled(2, { agent_id: 5 }))).toContainEqual(codes);
    expect(effectsOf(event('agent.approved', { agent_id: 5 }))).toContainEqual(codes);
    expect(effectsOf(event('agent.rejected', { agent_id: 5 }))).toContainEqual(codes);
    expect(effectsOf(event('settings.updated'))).toContainEqual(codes);
    expect(effectsOf(enrolled(null, { agent_id: 5, invitation_id: 1 }))).not.toContainEqual(codes);
    expect(effectsOf(event('agent.online', { agent_id: 5 }))).not.toContainEqual(codes);
  });

  it('follows the ids of event types it does not know (new capabilities show up live too)', () => {
    expect(effectsOf(event('broker.whatever', { agent_id: 3 }))).toContainEqual({ kind: 'agent', id: 3 });
    expect(effectsOf(event('server.started'))).toEqual([{ kind: 'invalidate', key: keys.status }]);
  });
});

describe('LiveSync', () => {
  afterEach(() => vi.useRealTimers());

  it('prepends events to the feed at once, without duplicates, newest first, capped', () => {
    const client = new QueryClient();
    const sync = new LiveSync(client, { fetchAgent: async () => null });
    client.setQueryData<LiveEvent[]>(
      keys.events,
      Array.from({ length: 100 }, (_, i) => ({ ...event('x'), id: 100 - i })),
    );
    const fresh = { ...event('agent.enrolled'), id: 500 };
    sync.handle(fresh);
    sync.handle(fresh);
    const feed = client.getQueryData<LiveEvent[]>(keys.events)!;
    expect(feed).toHaveLength(100);
    expect(feed[0]!.id).toBe(500);
    expect(feed.filter((e) => e.id === 500)).toHaveLength(1);
    sync.dispose();
  });

  it('coalesces a burst (a bulk import) into one invalidation per query', async () => {
    const client = new QueryClient();
    const invalidate = vi.spyOn(client, 'invalidateQueries');
    const sync = new LiveSync(client, { fetchAgent: async () => null, flushDelayMs: 5 });
    for (let i = 0; i < 500; i++) sync.handle(event('invitation.created', { invitation_id: i + 1 }));
    await sync.settled();
    expect(invalidate.mock.calls.map(([filters]) => filters?.queryKey)).toEqual([keys.status, keys.invitations]);
  });

  it('leaves alone a query fetched after the event arrived (a created invitation is fetched once)', async () => {
    const client = new QueryClient();
    const sync = new LiveSync(client, { fetchAgent: async () => null, flushDelayMs: 5 });
    const list = keys.invitationList({});
    await client.fetchQuery({ queryKey: list, queryFn: async () => ({ items: [], total: 0 }) });
    sync.handle(event('invitation.created', { invitation_id: 7 }));
    // This window fetches the invitation it just created, after its event arrived.
    const fetches = vi.fn(async () => ({ id: 7 }));
    await client.fetchQuery({ queryKey: keys.invitation(7), queryFn: fetches });
    await sync.settled();
    expect(client.getQueryState(list)!.isInvalidated).toBe(true);
    expect(client.getQueryState(keys.invitation(7))!.isInvalidated).toBe(false);
    // A later event about it does refresh it.
    sync.handle(event('invitation.revoked', { invitation_id: 7 }));
    await sync.settled();
    expect(client.getQueryState(keys.invitation(7))!.isInvalidated).toBe(true);
    expect(fetches).toHaveBeenCalledTimes(1);
    sync.dispose();
  });

  it('leaves alone a query fetched after the answer that caused the event, when the event comes later', async () => {
    const client = new QueryClient();
    const sync = new LiveSync(client, { fetchAgent: async () => null, flushDelayMs: 5 });
    const list = keys.invitationList({});
    await client.fetchQuery({ queryKey: list, queryFn: async () => ({ items: [], total: 0 }) });
    // This window creates an invitation (the server records its event before answering) ...
    const create = (id: number, meta?: Record<string, unknown>) =>
      client
        .getMutationCache()
        .build(client, { mutationFn: async () => ({ id }), ...(meta ? { meta } : {}) })
        .execute(undefined);
    await create(8, { causes: 'invitation.created' });
    // ... opens it, and only then does the stream bring the event.
    const fetches = vi.fn(async () => ({ id: 8 }));
    await client.fetchQuery({ queryKey: keys.invitation(8), queryFn: fetches });
    sync.handle(event('invitation.created', { invitation_id: 8 }));
    await sync.settled();
    expect(client.getQueryState(keys.invitation(8))!.isInvalidated).toBe(false);
    expect(client.getQueryState(list)!.isInvalidated).toBe(true);
    // Only its own event: another invitation's, or a later event about it, refreshes as before.
    await create(9);
    await client.fetchQuery({ queryKey: keys.invitation(9), queryFn: async () => ({ id: 9 }) });
    sync.handle(event('invitation.created', { invitation_id: 9 }));
    sync.handle(event('invitation.revoked', { invitation_id: 8 }));
    await sync.settled();
    expect(client.getQueryState(keys.invitation(9))!.isInvalidated).toBe(true);
    expect(client.getQueryState(keys.invitation(8))!.isInvalidated).toBe(true);
    sync.dispose();
  });

  it('patches changed agents into the device list instead of refetching it', async () => {
    const client = new QueryClient();
    client.setQueryData<Agent[]>(keys.agentList, [agent(2), agent(1)]);
    const fetched: number[] = [];
    const sync = new LiveSync(client, {
      flushDelayMs: 5,
      fetchAgent: async (id) => {
        fetched.push(id);
        return id === 2 ? null : agent(id, { is_online: true });
      },
    });
    const invalidate = vi.spyOn(client, 'invalidateQueries');
    sync.handle(event('agent.enrolled', { agent_id: 3 }));
    sync.handle(event('agent.online', { agent_id: 1 }));
    sync.handle(event('agent.online', { agent_id: 1 }));
    sync.handle(event('agent.updated', { agent_id: 2 }));
    await sync.settled();
    expect(fetched.sort()).toEqual([1, 2, 3]);
    const list = client.getQueryData<Agent[]>(keys.agentList)!;
    expect(list.map((a) => [a.id, a.is_online])).toEqual([
      [3, true],
      [1, true],
    ]);
    expect(invalidate.mock.calls.some(([filters]) => JSON.stringify(filters?.queryKey) === JSON.stringify(keys.agentList))).toBe(
      false,
    );
  });

  it('patches rows the events carry without fetching, the latest per agent; fetches only when a later event carries none', async () => {
    const client = new QueryClient();
    client.setQueryData<Agent[]>(keys.agentList, [agent(3), agent(2), agent(1)]);
    client.setQueryData<LiveEvent[]>(keys.events, []);
    const fetchAgent = vi.fn(async (id: number) => agent(id, { name: 'fetched' }));
    // Four agents changed, over the threshold of one, but only one needs a fetch: no list refetch.
    const sync = new LiveSync(client, { flushDelayMs: 5, bulkAgentThreshold: 1, fetchAgent });
    const invalidate = vi.spyOn(client, 'invalidateQueries');
    sync.handle({ ...event('agent.online', { agent_id: 1 }), agent: agent(1, { is_online: true }) });
    sync.handle({ ...event('agent.offline', { agent_id: 1 }), agent: agent(1, { is_online: false, last_contact: 'later' }) });
    sync.handle({ ...event('agent.enrolled', { agent_id: 4 }), agent: agent(4) });
    sync.handle({ ...event('agent.status', { agent_id: 2 }), agent: null });
    sync.handle({ ...event('agent.online', { agent_id: 3 }), agent: agent(3, { is_online: true }) });
    sync.handle(event('mqtt.resubscribed', { agent_id: 3 }));
    await sync.settled();
    expect(fetchAgent.mock.calls).toEqual([[3]]);
    expect(client.getQueryData<Agent[]>(keys.agentList)!.map((a) => [a.id, a.is_online, a.last_contact, a.name])).toEqual([
      [4, false, null, 'A4'],
      [3, false, null, 'fetched'],
      [1, false, 'later', 'A1'],
    ]);
    expect(invalidate.mock.calls.some(([filters]) => JSON.stringify(filters?.queryKey) === JSON.stringify(keys.agentList))).toBe(
      false,
    );
    // The feed keeps the events as GET /events lists them, without the rows.
    expect(client.getQueryData<LiveEvent[]>(keys.events)!.some((e) => 'agent' in e)).toBe(false);
  });

  it('refetches the list once when very many agents changed, and drops deleted ones at once', async () => {
    const client = new QueryClient();
    client.setQueryData<Agent[]>(keys.agentList, [agent(1), agent(2)]);
    const fetchAgent = vi.fn(async () => null);
    const sync = new LiveSync(client, { flushDelayMs: 5, bulkAgentThreshold: 3, fetchAgent });
    const invalidate = vi.spyOn(client, 'invalidateQueries').mockResolvedValue();
    for (let id = 10; id < 20; id++) sync.handle(event('agent.enrolled', { agent_id: id }));
    sync.handle(event('agent.deleted', { agent_id: 2 }));
    await sync.settled();
    expect(fetchAgent).not.toHaveBeenCalled();
    expect(
      invalidate.mock.calls.filter(([filters]) => JSON.stringify(filters?.queryKey) === JSON.stringify(keys.agentList)),
    ).toHaveLength(1);
    expect(client.getQueryData<Agent[]>(keys.agentList)!.map((a) => a.id)).toEqual([1]);
  });

  it('leaves the list alone when it is not loaded, and keeps rows whose fetch failed', async () => {
    expect(upsertAgents([agent(1)], [[1, undefined]])).toEqual([agent(1)]);
    const list = [agent(1)];
    expect(upsertAgents(list, [])).toBe(list);
    const client = new QueryClient();
    const fetchAgent = vi.fn(async () => agent(1));
    const sync = new LiveSync(client, { flushDelayMs: 5, fetchAgent });
    sync.handle(event('agent.enrolled', { agent_id: 1 }));
    await sync.settled();
    expect(fetchAgent).not.toHaveBeenCalled();
    expect(client.getQueryData(keys.agentList)).toBeUndefined();
  });
});

describe('the event stream', () => {
  function sseResponse(chunks: string[], { hold = false } = {}) {
    const encoder = new TextEncoder();
    return new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
          if (!hold) controller.close();
        },
      }),
      { status: 200, headers: { 'content-type': 'text/event-stream' } },
    );
  }
  const frame = (e: LiveEvent) => `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

  it('delivers every event type, then reconnects with Last-Event-ID after the stream ends', async () => {
    const first = { ...event('agent.enrolled', { agent_id: 1 }), id: 41 };
    const second = { ...event('custom.thing'), id: 42 };
    const requests: Record<string, string>[] = [];
    const fetchImpl = vi.fn(async (_url: string | URL | Request, init?: RequestInit) => {
      requests.push({ ...(init?.headers as Record<string, string>) });
      return requests.length === 1
        ? sseResponse(['retry: 5\n\n', frame(first).slice(0, 20), frame(first).slice(20)])
        : sseResponse([frame(second)], { hold: true });
    });
    const received: LiveEvent[] = [];
    const states: string[] = [];
    const stream = openEventStream({
      url: '/api/events/stream',
      lastEventId: 40,
      fetchImpl: fetchImpl as unknown as typeof fetch,
      onEvent: (e) => received.push(e),
      onState: (state: StreamState, detail) => states.push(detail?.reconnected ? `${state} (again)` : state),
    });
    await vi.waitFor(() => expect(received.map((e) => e.id)).toEqual([41, 42]));
    stream.close();
    expect(requests[0]!['last-event-id']).toBe('40');
    expect(requests[1]!['last-event-id']).toBe('41');
    expect(states).toEqual(['connecting', 'live', 'reconnecting', 'live (again)']);
  });

  it('stops when signed out, and backs off while the server is away', async () => {
    const states: string[] = [];
    let calls = 0;
    const stream = openEventStream({
      url: '/x',
      retryMs: 1,
      fetchImpl: (async () => {
        calls++;
        if (calls < 3) throw new TypeError('fetch failed');
        return new Response('', { status: 401 });
      }) as unknown as typeof fetch,
      onEvent: () => {},
      onState: (state) => states.push(state),
    });
    await vi.waitFor(() => expect(states.at(-1)).toBe('signed-out'));
    stream.close();
    expect(calls).toBe(3);
    expect(states).toEqual(['connecting', 'reconnecting', 'connecting', 'reconnecting', 'connecting', 'signed-out']);
  });
});
