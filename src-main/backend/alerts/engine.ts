import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventFeed } from '../cluster/feed.ts';
import type { EventLog, RecordedEvent } from '../events/event-log.ts';
import { requestContext } from '../audit/context.ts';
import { ALERT_KIND_INFO, describeAlertCondition, type AlertKind } from '../../../src-shared/contract/index.ts';
import type { ConditionRepository } from './condition-repository.ts';
import type { AlertRepository, FiringSubject, IncidentRow, RuleRow } from './repository.ts';

/** Where notices go: the mail worker's queue and the webhooks' (ports, so alerts import neither room's internals). */
export interface AlertChannels {
  queueEmail(to: string[], subject: string, body: string): Promise<void>;
  queueWebhooks(webhookIds: number[], event: string, data: Record<string, unknown>): Promise<void>;
}

/** The state of the outside services the connectivity rules watch: null, fine; a text, what is wrong. */
export interface AlertProbes {
  broker(): string | null;
  /** Null also when no SMTP server is configured (mail goes to the outbox). */
  smtp(): Promise<string | null>;
}

export interface AlertEngineOptions {
  /** How often every rule is evaluated (time-based conditions); events trigger an evaluation sooner. Default 60 s. */
  intervalMs?: number;
  /** The alert clock (tests drive it); default the real one. */
  now?: () => number;
}

/** Events after which the rules are evaluated again at once rather than at the next minute. */
const TRIGGERS = new Set([
  'agent.online',
  'agent.offline',
  'agent.enrolled',
  'agent.reenrolled',
  'agent.approved',
  'agent.rejected',
  'agent.deleted',
  'agent.unenrolled',
  'agent.fleet_changed',
  'task.status',
  'task.verified',
  'deployment.created',
  'deployment.removed',
  'invitation.created',
  'invitation.revoked',
  'invitation.deleted',
  'broker.unreachable',
  'broker.connected',
  'broker.started',
]);

/** How many incidents a notice lists (the count says how many there are). */
const LISTED = 50;

/**
 * Evaluates the enabled rules (each minute, and soon after an event that may change a condition)
 * and keeps one open incident per rule and subject: a subject newly found opens an incident and
 * goes into that evaluation's one "fired" notice; one found again only has its last_seen_at moved
 * (no notice: an alert that keeps firing is not repeated); one no longer found is resolved and goes
 * into that evaluation's one "resolved" notice. So each incident is announced once and resolved
 * once, however often the rules run.
 */
export class AlertEngine {
  private readonly repo: AlertRepository;
  private readonly conditions: ConditionRepository;
  private readonly events: EventLog;
  private readonly feed: Pick<EventLog, 'subscribe'>;
  private readonly work: UnitOfWork;
  private readonly channels: AlertChannels;
  private readonly probes: AlertProbes;
  private readonly consoleUrl: () => string;
  readonly now: () => number;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | null = null;
  private soon: NodeJS.Timeout | null = null;
  private running: Promise<{ opened: number; resolved: number }> | null = null;
  private again = false;
  private unsubscribe: (() => void) | null = null;
  private closed = false;

  constructor(
    deps: {
      repo: AlertRepository;
      conditions: ConditionRepository;
      events: EventLog;
      /** Every node's events (cluster/feed.ts); default the local ones. */
      feed?: EventFeed | undefined;
      work: UnitOfWork;
      channels: AlertChannels;
      probes: AlertProbes;
      consoleUrl: () => string;
    },
    options: AlertEngineOptions = {},
  ) {
    this.repo = deps.repo;
    this.conditions = deps.conditions;
    this.events = deps.events;
    this.feed = deps.feed ?? deps.events;
    this.work = deps.work;
    this.channels = deps.channels;
    this.probes = deps.probes;
    this.consoleUrl = deps.consoleUrl;
    this.now = options.now ?? Date.now;
    this.intervalMs = options.intervalMs ?? 60_000;
  }

  /**
   * Evaluates now, then each interval and after the events that may change a condition: the duty
   * `alert-evaluation` (cluster/duties.ts), one node at a time. `stop` undoes it; it may start again.
   */
  start(): void {
    if (this.closed || this.timer) return;
    // Every node's events: a device going offline on another node calls for an evaluation here too.
    this.unsubscribe = this.feed.subscribe((event: RecordedEvent) => {
      // A second's grace: a thousand devices connecting at once make one evaluation, not a thousand.
      if (TRIGGERS.has(event.type)) this.schedule(1000);
    });
    this.timer = requestContext.outside(() =>
      setInterval(() => {
        void this.evaluate().catch(() => {}); // a failed evaluation is tried again at the next tick
      }, this.intervalMs),
    );
    this.timer.unref();
    this.schedule();
  }

  /** No more evaluations on the timer or after events (the duty went to another node); one under way finishes. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.soon) clearTimeout(this.soon);
    this.soon = null;
    await this.running?.catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stop();
  }

  /** An evaluation soon (coalesced: a burst of events makes one). */
  schedule(delayMs = 200): void {
    if (this.closed || this.soon) return;
    this.soon = requestContext.outside(() =>
      setTimeout(() => {
        this.soon = null;
        void this.evaluate().catch(() => {});
      }, delayMs),
    );
    this.soon.unref();
  }

  /** Evaluates every enabled rule once (one at a time: a call during an evaluation runs right after it). */
  async evaluate(): Promise<{ opened: number; resolved: number }> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = requestContext.outside(async () => {
      let total = { opened: 0, resolved: 0 };
      do {
        this.again = false;
        const once = await this.evaluateOnce();
        total = { opened: total.opened + once.opened, resolved: total.resolved + once.resolved };
      } while (this.again && !this.closed);
      return total;
    });
    this.running = run.finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async evaluateOnce(): Promise<{ opened: number; resolved: number }> {
    let opened = 0;
    let resolved = 0;
    for (const rule of await this.repo.rules()) {
      if (this.closed) break;
      if (rule.enabled !== 1) continue;
      const firing = await this.firing(rule);
      const result = await this.work.run(() => this.apply(rule.id, firing));
      opened += result.opened;
      resolved += result.resolved;
    }
    return { opened, resolved };
  }

  /** The subjects for which the rule's condition holds now. */
  private async firing(rule: RuleRow): Promise<FiringSubject[]> {
    const now = this.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    const threshold = rule.threshold ?? ALERT_KIND_INFO[rule.kind].threshold?.default ?? 0;
    const fleet = rule.fleet_id;
    switch (rule.kind) {
      case 'device_silent':
        return (await this.conditions.silentDevices(iso(now - threshold * DAY), fleet)).map((d) => ({
          key: `agent:${d.id}`,
          subject: deviceLabel(d.name, d.serial),
          agentId: d.id,
          detail: `last seen ${readable(d.seen_at)}, ${ago(now, d.seen_at)} ago`,
        }));
      case 'task_failed':
        return (await this.conditions.failedTasks(fleet)).map((t) => ({
          key: `task:${t.id}`,
          subject: `${t.item_name || t.policy} on ${t.agent_name}`,
          agentId: t.agent_id,
          detail: `${t.policy} failed${t.reason ? `: ${t.reason}` : ''} (${readable(t.updated_at)})`,
        }));
      case 'approval_waiting':
        return (await this.conditions.waitingDevices(iso(now - threshold * HOUR), fleet)).map((d) => ({
          key: `agent:${d.id}`,
          subject: deviceLabel(d.name, d.serial),
          agentId: d.id,
          detail: `waiting for approval since ${readable(d.created_at)} (${ago(now, d.created_at)})`,
        }));
      case 'compliance_lost':
        return (await this.conditions.failingDevices(fleet)).map((d) => ({
          key: `agent:${d.id}`,
          subject: d.name,
          agentId: d.id,
          detail: `${d.failing} ${d.failing === 1 ? 'policy' : 'policies'} failed or incompatible`,
        }));
      case 'invitation_expiring':
        return (await this.conditions.expiringInvitations(iso(now), iso(now + threshold * HOUR), fleet)).map((i) => ({
          key: `invitation:${i.id}`,
          subject: `Invitation of ${i.email}`,
          agentId: null,
          detail: `expires ${readable(i.expires_at)} (in ${duration(Date.parse(i.expires_at) - now)}), not used yet`,
        }));
      case 'broker_unreachable': {
        const problem = this.probes.broker();
        return problem === null ? [] : [{ key: 'broker', subject: 'MQTT broker', agentId: null, detail: problem }];
      }
      case 'smtp_unreachable': {
        const problem = await this.probes.smtp();
        return problem === null ? [] : [{ key: 'smtp', subject: 'SMTP server', agentId: null, detail: problem }];
      }
    }
  }

  /** Opens, keeps and resolves the rule's incidents against what fires now; queues the notices. In a unit of work. */
  private async apply(ruleId: number, firing: FiringSubject[]): Promise<{ opened: number; resolved: number }> {
    const rule = await this.repo.rule(ruleId);
    if (!rule || rule.enabled !== 1) return { opened: 0, resolved: 0 }; // deleted or disabled meanwhile
    const at = new Date(this.now()).toISOString();
    const open = await this.repo.openIncidents(ruleId);
    const openKeys = new Set(open.map((incident) => incident.subject_key));
    const firingKeys = new Set(firing.map((subject) => subject.key));
    // Each incident is announced by the evaluation whose statement changed its row, so another node
    // evaluating too (a console's "evaluate now", a node taking the duty over from one that froze)
    // announces nothing twice, even were its transaction not serialized after this one (db/postgres-sql.ts).
    const cleared: IncidentRow[] = [];
    for (const incident of open.filter((incident) => !firingKeys.has(incident.subject_key)))
      if (await this.repo.resolveIncident(incident.id, at)) cleared.push(incident);
    const fresh: IncidentRow[] = [];
    for (const subject of firing.filter((s) => !openKeys.has(s.key))) {
      const id = await this.repo.openIncident(ruleId, subject, at);
      if (id !== null) fresh.push((await this.repo.incident(id))!);
    }
    await this.repo.touchOpen(ruleId, at);
    if (fresh.length > 0) await this.notify(rule, 'alert.fired', fresh);
    if (cleared.length > 0)
      await this.notify(
        rule,
        'alert.resolved',
        cleared.map((incident) => ({ ...incident, resolved_at: at })),
      );
    return { opened: fresh.length, resolved: cleared.length };
  }

  /** Resolves a rule's open incidents without a notice (the rule was disabled). */
  async closeQuietly(ruleId: number): Promise<number> {
    const at = new Date(this.now()).toISOString();
    let closed = 0;
    for (const incident of await this.repo.openIncidents(ruleId)) if (await this.repo.resolveIncident(incident.id, at)) closed++;
    return closed;
  }

  /** One notice for all the incidents one evaluation opened (or resolved): an event, an email, a delivery per webhook. */
  private async notify(rule: RuleRow, type: 'alert.fired' | 'alert.resolved', incidents: IncidentRow[]): Promise<void> {
    const fired = type === 'alert.fired';
    const condition = describeAlertCondition(rule.kind, rule.threshold);
    const what = incidents.length === 1 ? incidents[0]!.subject : `${incidents.length} ${fired ? 'new incidents' : 'incidents'}`;
    const message = fired ? `Alert "${rule.name}": ${what}` : `Resolved: alert "${rule.name}": ${what}`;
    const listed = incidents.slice(0, LISTED).map((incident) => ({
      id: incident.id,
      subject_key: incident.subject_key,
      subject: incident.subject,
      agent_id: incident.agent_id,
      detail: incident.detail,
    }));
    const single = incidents.length === 1 ? incidents[0]!.agent_id : null;
    await this.events.record(type, message, single === null ? {} : { agentId: single }, {
      rule_id: rule.id,
      name: rule.name,
      kind: rule.kind,
      count: incidents.length,
      incidents: listed,
    });
    const emails = parseEmails(rule.emails);
    const stillOpen = (await this.repo.openIncidents(rule.id)).length;
    if (emails.length > 0) {
      await this.channels.queueEmail(
        emails,
        `[MDM Console] ${message}`,
        emailBody(rule, condition, fired, incidents, stillOpen, this.consoleUrl()),
      );
    }
    const webhookIds = await this.repo.webhookIds(rule.id);
    if (webhookIds.length > 0) {
      await this.channels.queueWebhooks(webhookIds, type, {
        rule: { id: rule.id, name: rule.name, kind: rule.kind, condition, threshold: rule.threshold, fleet_id: rule.fleet_id },
        state: fired ? 'firing' : 'resolved',
        count: incidents.length,
        open_incidents: stillOpen,
        incidents: incidents.slice(0, 1000).map((incident) => ({
          id: incident.id,
          subject_key: incident.subject_key,
          subject: incident.subject,
          agent_id: incident.agent_id,
          detail: incident.detail,
          opened_at: incident.opened_at,
          resolved_at: incident.resolved_at,
        })),
        console_url: this.consoleUrl(),
      });
    }
  }
}

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

function parseEmails(text: string): string[] {
  const parsed = JSON.parse(text) as unknown;
  return Array.isArray(parsed) ? parsed.filter((email): email is string => typeof email === 'string') : [];
}

function deviceLabel(name: string, serial: string | null): string {
  return serial && !name.includes(serial) ? `${name} (${serial})` : name;
}

/** "2026-11-20 09:14 UTC". */
function readable(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** "6 days", "5 hours", "12 minutes". */
function duration(ms: number): string {
  const minutes = Math.max(0, Math.round(ms / 60_000));
  if (minutes < 120) return `${minutes} minute${minutes === 1 ? '' : 's'}`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} hours`;
  return `${Math.round(hours / 24)} days`;
}

function ago(now: number, iso: string): string {
  return duration(now - Date.parse(iso));
}

function emailBody(
  rule: RuleRow,
  condition: string,
  fired: boolean,
  incidents: IncidentRow[],
  stillOpen: number,
  consoleUrl: string,
): string {
  const scope = rule.fleet_name ? ` (fleet ${rule.fleet_name})` : '';
  const lines = incidents.slice(0, 200).map((incident) => `- ${incident.subject}: ${incident.detail}`);
  const more = incidents.length > 200 ? [`… and ${incidents.length - 200} more (see the console)`] : [];
  const head = fired
    ? `The alert "${rule.name}" fired: ${condition}${scope}.`
    : `The alert "${rule.name}" cleared: ${condition}${scope} no longer holds for:`;
  const count = fired ? `${incidents.length} new incident${incidents.length === 1 ? '' : 's'}:` : '';
  return [
    head,
    '',
    ...(count ? [count] : []),
    ...lines,
    ...more,
    '',
    `Open incidents of this rule now: ${stillOpen}.`,
    fired
      ? 'You get this once per incident; a notice follows when it resolves.'
      : 'Each incident is resolved once; a new one opens if the condition returns.',
    '',
    `Alerts in the console: ${consoleUrl}`,
    '',
  ].join('\n');
}

export type { AlertKind };
