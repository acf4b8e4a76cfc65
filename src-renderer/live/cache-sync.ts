import type { Query, QueryClient, QueryKey } from '@tanstack/react-query';
import { accountKeys } from '../api/accounts.ts';
import { codeKeys } from '../api/codes.ts';
import { jobKeys } from '../api/jobs.ts';
import { alertKeys } from '../api/alerts.ts';
import { FEED_SIZE, keys } from '../api/queries.ts';
import type { AgentSummary as Agent, LiveEvent, ServerEvent, StoredKind, StreamEvent } from '../../src-shared/contract/index.ts';

/** Agent events that change how many devices a fleet holds (presence and commands do not). */
const FLEET_COUNT_ACTIONS = new Set(['enrolled', 'reenrolled', 'deleted', 'unenrolled', 'fleet_changed']);

/** How many answers of this window's own mutations are kept waiting for their events. */
const CAUSED_KEPT = 100;

/** What one server event means for the console's caches. */
export type Effect =
  | { kind: 'invalidate'; key: QueryKey }
  | { kind: 'remove'; key: QueryKey }
  | { kind: 'agent'; id: number }
  | { kind: 'agentRemoved'; id: number };

/**
 * Maps an event (`<capability>.<action>` with its agent/invitation ids) to cache effects. Unknown
 * types still refresh what their ids point at, so new capabilities (broker presence, mail
 * delivery) show up live without a change here.
 */
export function effectsOf(event: ServerEvent): Effect[] {
  const dot = event.type.indexOf('.');
  const domain = dot === -1 ? event.type : event.type.slice(0, dot);
  const action = dot === -1 ? '' : event.type.slice(dot + 1);
  const effects: Effect[] = [{ kind: 'invalidate', key: keys.status }];
  const agentEffect = (): Effect[] =>
    event.agent_id === null
      ? [{ kind: 'invalidate', key: keys.agents }]
      : action === 'deleted' && domain === 'agent'
        ? [
            { kind: 'agentRemoved', id: event.agent_id },
            { kind: 'remove', key: keys.agent(event.agent_id) },
          ]
        : [
            { kind: 'agent', id: event.agent_id },
            { kind: 'invalidate', key: keys.agent(event.agent_id) },
          ];
  const invitationEffect = (): Effect[] => {
    if (event.invitation_id === null) return [{ kind: 'invalidate', key: keys.invitations }];
    if (domain === 'invitation' && action === 'deleted') {
      return [
        { kind: 'remove', key: keys.invitation(event.invitation_id) },
        { kind: 'invalidate', key: ['invitations', 'list'] },
        { kind: 'invalidate', key: ['invitations', 'byIds'] },
      ];
    }
    return [{ kind: 'invalidate', key: keys.invitations }];
  };

  // Who matches a filter or a saved view changes with the devices and their tasks (compliance).
  if (domain === 'agent' || domain === 'deployment' || domain === 'task' || domain === 'fleet' || domain === 'view')
    effects.push({ kind: 'invalidate', key: keys.views }, { kind: 'invalidate', key: keys.agentsWhere });

  // The reports count enrollments and deployment results as they happen: their charts follow.
  if (event.type === 'agent.enrolled') effects.push({ kind: 'invalidate', key: keys.reportsOf('enrollments') });
  if (event.type === 'task.status' && (event.data?.status === 'done' || event.data?.status === 'failed'))
    effects.push({ kind: 'invalidate', key: keys.reportsOf('deployments') });

  switch (domain) {
    case 'invitation':
      effects.push(...invitationEffect());
      if (event.agent_id !== null) effects.push(...agentEffect());
      break;
    case 'mail':
      effects.push({ kind: 'invalidate', key: keys.mail });
      if (event.invitation_id !== null) effects.push(...invitationEffect());
      break;
    case 'agent':
      effects.push(...agentEffect());
      // Uses, pending approvals and their rows on the code pages.
      if (
        (event.data !== null && 'code_id' in event.data && event.data.code_id != null) ||
        action === 'approved' ||
        action === 'rejected'
      )
        effects.push({ kind: 'invalidate', key: codeKeys.all });
      if (event.invitation_id !== null) effects.push(...invitationEffect());
      // Fleets list how many devices each holds: a device that comes, goes or moves changes that.
      if (FLEET_COUNT_ACTIONS.has(action)) effects.push({ kind: 'invalidate', key: keys.fleets });
      break;
    case 'deployment':
      effects.push({ kind: 'invalidate', key: keys.deployments });
      break;
    case 'task':
      // A task's status: its deployment's progress and the device's task list (not the device row).
      effects.push({ kind: 'invalidate', key: keys.deployments });
      break;
    case 'code':
      effects.push({ kind: 'invalidate', key: codeKeys.all });
      break;
    case 'fleet':
      effects.push(
        { kind: 'invalidate', key: keys.fleets },
        { kind: 'invalidate', key: keys.agents },
        { kind: 'invalidate', key: keys.invitations },
        { kind: 'invalidate', key: keys.deployments },
      );
      break;
    case 'settings':
      effects.push(
        { kind: 'invalidate', key: keys.settings },
        { kind: 'invalidate', key: keys.invitations },
        { kind: 'invalidate', key: keys.mailSettings },
      );
      effects.push({ kind: 'invalidate', key: codeKeys.all }); // their deeplinks follow the settings
      break;
    case 'account':
      // An admin invited, changed or gone (perhaps this admin's own role), or their invitation's email:
      // the Accounts page, what the console lets one do, and the tokens' view.
      effects.push(
        { kind: 'invalidate', key: accountKeys.accounts },
        { kind: 'invalidate', key: accountKeys.me },
        { kind: 'invalidate', key: accountKeys.tokens },
      );
      break;
    case 'job':
      // A bulk job's progress; once done, the devices it changed (lock flags, fleets) are read again.
      effects.push({ kind: 'invalidate', key: jobKeys.all });
      if (action === 'finished') effects.push({ kind: 'invalidate', key: keys.agents });
      break;
    case 'alert':
    case 'webhook':
      // Rules, incidents, webhooks and their delivery logs.
      effects.push({ kind: 'invalidate', key: alertKeys.all });
      if (event.agent_id !== null) effects.push(...agentEffect());
      break;
    case 'file':
    case 'package':
      effects.push({ kind: 'invalidate', key: keys.stored(domain as StoredKind) });
      break;
    default:
      if (event.agent_id !== null) effects.push(...agentEffect());
      if (event.invitation_id !== null) effects.push(...invitationEffect());
  }
  return effects;
}

export interface LiveSyncOptions {
  /** Reads one agent's row (for events that do not carry it); null when it no longer exists. */
  fetchAgent: (id: number) => Promise<Agent | null>;
  /** Events are gathered this long, then applied together (a bulk import is one refresh). */
  flushDelayMs?: number;
  /** More changed agents than this in one flush: refetch the list instead of row by row. */
  bulkAgentThreshold?: number;
}

/**
 * Applies the event stream to the query cache: the live feed at once, the rest coalesced per
 * flush — each key invalidated once, changed agents patched into the (possibly 10,000-row)
 * device list rather than refetching it: from the row an event naming the agent carries, or else
 * fetched one by one. A query whose fetch began after the event arrived already shows it (the
 * server emits after commit) and is left alone; so is one whose fetch began after the answer of
 * this window's own mutation that caused the event (`meta.causes`), as the stream may bring the
 * event a little later: a window that just created an invitation, and fetched it, does not fetch
 * it again for its own event.
 */
export class LiveSync {
  private readonly client: QueryClient;
  private readonly options: Required<LiveSyncOptions>;
  /** Keys to invalidate, each with the order number of the latest event that asked for it. */
  private readonly invalidations = new Map<string, { key: QueryKey; since: number }>();
  private readonly removals = new Map<string, QueryKey>();
  private readonly changedAgents = new Set<number>();
  /** Rows the stream delivered for changed agents, the latest per agent; the others are fetched. */
  private readonly deliveredRows = new Map<number, Agent | null>();
  private readonly removedAgents = new Set<number>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<void> = Promise.resolve();
  /** Orders events handled and fetches begun, to tell which fetch came after which event. */
  private order = 0;
  private readonly fetchBegan = new Map<string, number>();
  /**
   * Events this window caused, by `type:id`, with the order number of the answer that created
   * them: the server records the event before it answers, so what is fetched after that answer
   * already shows the event, even when the event itself arrives on the stream later.
   */
  private readonly caused = new Map<string, number>();
  private readonly stopWatchingFetches: () => void;
  private readonly stopWatchingMutations: () => void;

  constructor(client: QueryClient, options: LiveSyncOptions) {
    this.client = client;
    this.options = { flushDelayMs: 60, bulkAgentThreshold: 50, ...options };
    this.stopWatchingFetches = client.getQueryCache().subscribe((change) => {
      if (change.type === 'updated' && change.action.type === 'fetch') this.fetchBegan.set(change.query.queryHash, ++this.order);
      else if (change.type === 'removed') this.fetchBegan.delete(change.query.queryHash);
    });
    // A mutation whose options say `meta: { causes: '<event type>' }` and whose answer has the `id`
    // of what it made (e.g. creating an invitation): its event counts from that answer on.
    this.stopWatchingMutations = client.getMutationCache().subscribe((change) => {
      if (change.type !== 'updated' || change.action.type !== 'success') return;
      const causes = change.mutation.options.meta?.causes;
      const data: unknown = change.action.data;
      const id = typeof data === 'object' && data !== null && 'id' in data ? data.id : undefined;
      if (typeof causes !== 'string' || typeof id !== 'number') return;
      this.caused.set(`${causes}:${id}`, ++this.order);
      // Its event may have come first (then nothing waits for it): keep only the latest few.
      for (const key of this.caused.keys()) {
        if (this.caused.size <= CAUSED_KEPT) break;
        this.caused.delete(key);
      }
    });
  }

  handle(event: StreamEvent): void {
    let order = ++this.order;
    const causedKey = `${event.type}:${event.invitation_id ?? event.agent_id}`;
    const answered = this.caused.get(causedKey);
    if (answered !== undefined) {
      this.caused.delete(causedKey);
      order = Math.min(order, answered);
    }
    this.client.setQueryData<LiveEvent[]>(keys.events, (feed) => {
      if (!feed) return feed;
      if (feed.some((item) => item.id === event.id)) return feed;
      const { agent: _row, ...entry } = event; // the feed holds events as GET /events lists them
      return [entry, ...feed].sort((a, b) => b.id - a.id).slice(0, FEED_SIZE);
    });
    for (const effect of effectsOf(event)) {
      switch (effect.kind) {
        case 'invalidate':
          this.invalidations.set(JSON.stringify(effect.key), { key: effect.key, since: order });
          break;
        case 'remove':
          this.removals.set(JSON.stringify(effect.key), effect.key);
          break;
        case 'agent':
          this.removedAgents.delete(effect.id);
          this.changedAgents.add(effect.id);
          if (event.agent !== undefined && event.agent_id === effect.id) this.deliveredRows.set(effect.id, event.agent);
          else this.deliveredRows.delete(effect.id);
          break;
        case 'agentRemoved':
          this.changedAgents.delete(effect.id);
          this.deliveredRows.delete(effect.id);
          this.removedAgents.add(effect.id);
          break;
      }
    }
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.running = this.running.then(() => this.flush());
    }, this.options.flushDelayMs);
  }

  /** Everything may have changed (e.g. after a long disconnection): refetch what is shown. */
  refreshAll(): Promise<void> {
    return this.client.invalidateQueries();
  }

  /** Resolves once the pending flush (if any) has been applied. */
  async settled(): Promise<void> {
    while (this.timer !== null) await new Promise((resolve) => setTimeout(resolve, this.options.flushDelayMs));
    await this.running;
  }

  dispose(): void {
    this.stopWatchingFetches();
    this.stopWatchingMutations();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Whether the query's latest fetch began after event number `since` (and did not fail). */
  private fetchedSince(query: Query, since: number): boolean {
    return (this.fetchBegan.get(query.queryHash) ?? 0) > since && query.state.status !== 'error';
  }

  private async flush(): Promise<void> {
    const removals = [...this.removals.values()];
    const invalidations = [...this.invalidations.values()];
    const delivered = [...this.deliveredRows];
    const toFetch = [...this.changedAgents].filter((id) => !this.deliveredRows.has(id));
    const removed = [...this.removedAgents];
    this.removals.clear();
    this.invalidations.clear();
    this.changedAgents.clear();
    this.deliveredRows.clear();
    this.removedAgents.clear();

    for (const key of removals) this.client.removeQueries({ queryKey: key, exact: true });
    if (removed.length) {
      const gone = new Set(removed);
      this.client.setQueryData<Agent[]>(keys.agentList, (list) => list?.filter((agent) => !gone.has(agent.id)));
    }
    const work: Promise<unknown>[] = invalidations.map(({ key, since }) =>
      this.client.invalidateQueries({ queryKey: key, predicate: (query) => !this.fetchedSince(query, since) }),
    );
    const listLoaded = this.client.getQueryData(keys.agentList) !== undefined;
    if (toFetch.length > this.options.bulkAgentThreshold) {
      work.push(this.client.invalidateQueries({ queryKey: keys.agentList }));
    } else if ((toFetch.length || delivered.length) && listLoaded) {
      work.push(
        Promise.all(
          toFetch.map((id) =>
            this.options.fetchAgent(id).then(
              (agent) => [id, agent] as const,
              () => [id, undefined] as const,
            ),
          ),
        ).then((fetched) => {
          this.client.setQueryData<Agent[]>(keys.agentList, (list) =>
            list ? upsertAgents(list, [...delivered, ...fetched]) : list,
          );
        }),
      );
    }
    await Promise.allSettled(work);
  }
}

/**
 * Patches fetched agents into the list: replaced in place, new ones first, null (gone) removed,
 * undefined (fetch failed) left as they were. Returns the same array when nothing changed.
 */
export function upsertAgents(list: Agent[], results: ReadonlyArray<readonly [number, Agent | null | undefined]>): Agent[] {
  const updates = new Map<number, Agent | null>();
  for (const [id, agent] of results) if (agent !== undefined) updates.set(id, agent);
  if (updates.size === 0) return list;
  const next: Agent[] = [];
  for (const agent of list) {
    if (!updates.has(agent.id)) next.push(agent);
    else {
      const update = updates.get(agent.id)!;
      updates.delete(agent.id);
      if (update) next.push(update);
    }
  }
  const added = [...updates.values()].filter((agent): agent is Agent => agent !== null).sort((a, b) => b.id - a.id);
  return [...added, ...next];
}
