import { isClosedDatabase, isDiskFull, unlessDiskFull } from '../db/disk-full.ts';
import type { EventLog } from '../events/event-log.ts';
import { requestContext } from '../audit/context.ts';
import { WEBHOOK_HEADERS } from '../../../src-shared/contract/index.ts';
import type { AttemptOutcome, ClaimedDelivery, WebhookClaim, WebhookRepository } from './repository.ts';
import { signDelivery } from './signature.ts';

/** When failed attempts are tried again, how often, and how long one attempt may take. */
export interface WebhookTiming {
  /** The wait after the first failed attempt; it doubles after each one (30 s, 1 min, 2 min … ). */
  baseDelayMs: number;
  /** The longest wait between two attempts. */
  maxDelayMs: number;
  /** Attempts in all, the first included; then the delivery is failed. */
  maxAttempts: number;
  /** An attempt without a complete answer by then is a failure (a receiver that never answers). */
  timeoutMs: number;
  /** Deliveries in flight at once, over every webhook (each webhook has at most one). */
  concurrency: number;
  /**
   * How long (real time) a node's claim on a delivery holds unless renewed; renewed every third of
   * it while the attempt runs. A node that dies has its deliveries taken by another after this.
   */
  claimTtlMs: number;
  /** How often an idle worker looks for deliveries queued on other nodes (real time); 0: never (one node). */
  pollMs: number;
}

export const DEFAULT_WEBHOOK_TIMING: WebhookTiming = {
  baseDelayMs: 30_000,
  maxDelayMs: 60 * 60_000,
  maxAttempts: 8,
  timeoutMs: 10_000,
  concurrency: 8,
  claimTtlMs: 15_000,
  pollMs: 1_500,
};

/** The wait before attempt `attempts + 1`, after `attempts` failed ones. */
export function backoffMs(attempts: number, timing: Pick<WebhookTiming, 'baseDelayMs' | 'maxDelayMs'>): number {
  return Math.min(timing.maxDelayMs, timing.baseDelayMs * 2 ** Math.max(0, attempts - 1));
}

/**
 * Sends queued webhook deliveries (webhook_deliveries) in the background: each a signed JSON POST,
 * a 2xx answer within the time-out delivers it; anything else (another status, a time-out, a
 * refused connection) schedules the next attempt with exponential back-off, until the last one
 * fails it. At most one delivery per webhook is in flight, so a receiver that never answers holds
 * only its own queue, never the others'. The queue is the table: a restart resumes it.
 */
export class WebhookWorker {
  private readonly repo: WebhookRepository;
  private readonly events: EventLog;
  private readonly now: () => number;
  readonly timing: WebhookTiming;
  private readonly isOpen: () => boolean;
  private started = false;
  private stopping = false;
  private scheduled = false;
  /** A pump is running (it awaits its claims): a kick meanwhile asks for one more round, never a second pump. */
  private pumping = false;
  private pumpAgain = false;
  private readonly inFlight = new Set<AbortController>();
  /** The deliveries this node holds claims on: renewed until each attempt ends. */
  private readonly held = new Set<number>();
  private readonly node: string;
  private renewTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private idle: (() => void)[] = [];
  private timer: NodeJS.Timeout | null = null;
  private timerAt = 0;

  constructor(deps: {
    repo: WebhookRepository;
    events: EventLog;
    timing?: Partial<WebhookTiming>;
    now?: () => number;
    isOpen: () => boolean;
    /** This node's name: its claims carry it (several nodes drain one queue). */
    node: string;
  }) {
    this.node = deps.node;
    this.repo = deps.repo;
    this.events = deps.events;
    this.timing = { ...DEFAULT_WEBHOOK_TIMING, ...deps.timing };
    this.now = deps.now ?? Date.now;
    this.isOpen = deps.isOpen;
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    // What this node's previous run held goes back to the queue now; other nodes' claims expire by themselves.
    await this.repo.requeueInterrupted(this.node, this.iso());
    this.renewTimer = setInterval(() => void this.renewClaims(), Math.max(50, Math.floor(this.timing.claimTtlMs / 3)));
    this.renewTimer.unref();
    if (this.timing.pollMs > 0) {
      this.pollTimer = setInterval(() => this.kick(), this.timing.pollMs);
      this.pollTimer.unref();
    }
    this.kick();
  }

  /** Renews the claims of the attempts in progress. */
  private async renewClaims(): Promise<void> {
    if (this.held.size === 0 || !this.isOpen()) return;
    try {
      await this.repo.extend(this.node, [...this.held], this.timing.claimTtlMs);
    } catch (error) {
      // The database is away: the claims may expire (another node would then deliver again); tried next round.
      if (!isDiskFull(error) && !isClosedDatabase(error)) console.error(error);
    }
  }

  private claimOf(delivery: ClaimedDelivery): WebhookClaim {
    return { node: this.node, attempts: delivery.attempts };
  }

  /** Stops taking work and aborts attempts in flight (they are queued again at the next start). */
  async close(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    for (const controller of this.inFlight) controller.abort(new Error('server stopping'));
    if (this.inFlight.size > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = null;
  }

  /** There may be due work (queued, or the clock moved): look on a later tick, outside any request. */
  kick(): void {
    if (this.pumping) this.pumpAgain = true;
    if (!this.started || this.stopping || this.scheduled || this.pumping) return;
    this.scheduled = true;
    requestContext.outside(() =>
      setImmediate(() => {
        this.scheduled = false;
        unlessDiskFull(() => this.pump());
      }),
    );
  }

  /** Resolves once nothing is in flight (tests, after a kick). */
  async settled(): Promise<void> {
    while (this.scheduled || this.pumping || this.inFlight.size > 0) {
      await new Promise<void>((resolve) => {
        if (this.inFlight.size === 0) setTimeout(resolve, 5);
        else this.idle.push(resolve);
      });
    }
  }

  private iso(ms = this.now()): string {
    return new Date(ms).toISOString();
  }

  private async pump(): Promise<void> {
    if (this.stopping || !this.isOpen() || this.pumping) return;
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        await this.pumpOnce();
      } while (this.pumpAgain && !this.stopping);
    } finally {
      this.pumping = false;
    }
  }

  /** Claims due deliveries while there is room, starts each, then arms the timer for the next one due. */
  private async pumpOnce(): Promise<void> {
    if (this.stopping || !this.isOpen()) return;
    while (!this.stopping && this.inFlight.size < this.timing.concurrency) {
      const delivery = await this.repo.claim(this.iso(), this.node, this.timing.claimTtlMs);
      if (!delivery) break;
      const controller = new AbortController();
      this.inFlight.add(controller);
      this.held.add(delivery.id);
      void this.attempt(delivery, controller)
        .catch((error: unknown) =>
          this.finish(delivery, {
            state: 'failed',
            responseCode: null,
            responseMs: null,
            error: `Internal error: ${String(error)}`,
            nextAttemptAt: null,
          }),
        )
        .finally(() => {
          this.held.delete(delivery.id);
          this.inFlight.delete(controller);
          if (this.inFlight.size === 0) for (const wake of this.idle.splice(0)) wake();
          this.kick();
        });
    }
    await this.armTimer();
  }

  /** Wakes the worker when the earliest queued delivery is due. */
  private async armTimer(): Promise<void> {
    if (this.stopping || !this.isOpen()) return;
    const next = await this.repo.nextDueAt();
    if (!next) return;
    const at = Date.parse(next);
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    // setTimeout takes at most about 24.8 days; the clock may be a test's.
    const wait = Math.min(Math.max(0, at - this.now()) + 5, 2 ** 31 - 1);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.kick();
    }, wait);
    this.timer.unref();
  }

  private async attempt(delivery: ClaimedDelivery, controller: AbortController): Promise<void> {
    const timestamp = Math.floor(this.now() / 1000);
    const started = performance.now();
    const timeout = setTimeout(
      () => controller.abort(new Error(`no answer within ${this.timing.timeoutMs} ms`)),
      this.timing.timeoutMs,
    );
    let responseCode: number | null = null;
    let error: string | null = null;
    try {
      const response = await fetch(delivery.url, {
        method: 'POST',
        redirect: 'manual',
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'MDM-Console-Webhooks/1',
          [WEBHOOK_HEADERS.event]: delivery.event,
          [WEBHOOK_HEADERS.delivery]: String(delivery.id),
          [WEBHOOK_HEADERS.timestamp]: String(timestamp),
          [WEBHOOK_HEADERS.signature]: signDelivery(delivery.secret, timestamp, delivery.payload),
        },
        body: delivery.payload,
      });
      responseCode = response.status;
      // The answer's body is not needed, but it is read (within the time-out) so the socket can be reused.
      await response.arrayBuffer().catch(() => undefined);
      if (response.status < 200 || response.status > 299) {
        const where = response.headers.get('location');
        error = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${where ? ` (redirect to ${where}: not followed)` : ''}`;
      }
    } catch (failure) {
      error = describeFetchError(failure, controller.signal);
    } finally {
      clearTimeout(timeout);
    }
    const responseMs = Math.round(performance.now() - started);
    if (this.stopping && error !== null) {
      // Cut off by our own stop: queued again at once, for another node or the next start.
      if (this.isOpen()) await this.repo.requeue(delivery.id, this.claimOf(delivery), this.iso());
      return;
    }
    if (error === null) {
      return this.finish(delivery, { state: 'delivered', responseCode, responseMs, error: null, nextAttemptAt: null });
    }
    if (delivery.attempts >= this.timing.maxAttempts) {
      return this.finish(delivery, {
        state: 'failed',
        responseCode,
        responseMs,
        error: `${error} (gave up after ${delivery.attempts} attempts)`,
        nextAttemptAt: null,
      });
    }
    const next = this.iso(this.now() + backoffMs(delivery.attempts, this.timing));
    await this.finish(delivery, { state: 'queued', responseCode, responseMs, error, nextAttemptAt: next });
  }

  private async finish(delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<void> {
    if (!this.isOpen() || !(await this.repo.finish(delivery.id, this.claimOf(delivery), outcome, this.iso()))) return;
    const data = {
      webhook_id: delivery.webhook_id,
      delivery_id: delivery.id,
      event: delivery.event,
      attempts: delivery.attempts,
      response_code: outcome.responseCode,
      error: outcome.error,
    };
    const label = `Webhook #${delivery.webhook_id} (${delivery.event}, delivery #${delivery.id})`;
    if (outcome.state === 'delivered') {
      await this.events.record('webhook.delivered', `${label} delivered: HTTP ${outcome.responseCode}`, {}, data);
    } else if (outcome.state === 'queued') {
      await this.events.record(
        'webhook.retrying',
        `${label} attempt ${delivery.attempts} failed (${outcome.error}); next attempt at ${outcome.nextAttemptAt}`,
        {},
        { ...data, next_attempt_at: outcome.nextAttemptAt! },
      );
    } else {
      await this.events.record('webhook.failed', `${label} failed: ${outcome.error}`, {}, data);
    }
  }
}

/** "connection refused (ECONNREFUSED)", "no answer within 10000 ms", "getaddrinfo ENOTFOUND …". */
function describeFetchError(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return signal.reason instanceof Error ? signal.reason.message : 'aborted';
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED)';
  if (cause?.code === 'ECONNRESET' || cause?.code === 'UND_ERR_SOCKET')
    return `connection closed without an answer (${cause.code})`;
  if (cause?.message) return cause.code ? `${cause.message} (${cause.code})` : cause.message;
  return error instanceof Error ? error.message : String(error);
}
