import { AsyncLocalStorage } from 'node:async_hooks';

/** Who a piece of work is done for: an admin (and the API token used), from an address. */
export interface RequestActor {
  accountId: number;
  /** The person's name (or email). */
  name: string;
  tokenId: number | null;
  tokenName: string | null;
  /** The role the request acts with. */
  role: string;
}

export interface RequestContext {
  actor: RequestActor | null;
  address: string | null;
  /** Set once an audit entry was written for this request. */
  audited: boolean;
  /**
   * The fleets this request may see and act on (fleets/scope.ts): null or absent, every fleet;
   * a list, those only (an operator or observer scoped to fleets).
   */
  fleets?: readonly number[] | null;
  /**
   * Work done by a bulk job (jobs/) for this actor: what it records carries the actor, but its
   * audit entry is the job's own, written once when the job started (not one per device).
   */
  jobId?: number;
}

const storage = new AsyncLocalStorage<RequestContext>();

/**
 * The small request context services see without being handed it: the admin API runs each
 * authenticated request inside one (admin-api/app.ts), so what it changes is recorded with its actor.
 */
export const requestContext = {
  run<T>(context: RequestContext, work: () => T): T {
    return storage.run(context, work);
  },
  current(): RequestContext | undefined {
    return storage.getStore();
  },
  /** Runs `work` outside any request: the server's own work (a timer, a worker) started from a request is nobody's action. */
  outside<T>(work: () => T): T {
    return storage.exit(work);
  },
};
