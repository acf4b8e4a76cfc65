import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError } from '../errors.ts';
import { currentFleetScope, inFleetScope } from '../fleets/scope.ts';
import {
  ALERT_KIND_INFO,
  describeAlertCondition,
  isValidEmail,
  normalizeEmail,
  type AlertIncident,
  type AlertIncidentsQuery,
  type AlertKind,
  type AlertRule,
  type AlertRuleCreate,
  type AlertRulePatch,
} from '../../../src-shared/contract/index.ts';
import type { AlertEngine } from './engine.ts';
import type { AlertRepository, IncidentRow, RuleRow } from './repository.ts';

/** What the rules check of fleets and webhooks they name. */
export interface AlertRuleTargets {
  /** Throws a 404 when the fleet does not exist (or is out of the caller's scope). */
  fleetName(id: number): Promise<string>;
  webhookExists(id: number): Promise<boolean>;
}

/**
 * Alert rules as admins set them (a condition, its threshold, an optional fleet, the emails and
 * webhooks to notify) and their incidents. Every change is an event with its before and after (so
 * an audit entry); the engine (engine.ts) evaluates the rules.
 */
export class AlertService {
  private readonly repo: AlertRepository;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly engine: AlertEngine;
  private readonly targets: AlertRuleTargets;

  constructor(deps: {
    repo: AlertRepository;
    events: EventLog;
    work: UnitOfWork;
    engine: AlertEngine;
    targets: AlertRuleTargets;
  }) {
    this.repo = deps.repo;
    this.events = deps.events;
    this.work = deps.work;
    this.engine = deps.engine;
    this.targets = deps.targets;
  }

  /** The rules; an actor scoped to fleets sees those of its fleets only (a rule over every fleet names devices of others). */
  async list(): Promise<AlertRule[]> {
    const webhooks = await this.repo.allWebhookIds();
    return (await this.repo.rules())
      .filter((row) => inFleetScope(row.fleet_id))
      .map((row) => view(row, webhooks.get(row.id) ?? []));
  }

  async get(id: number): Promise<AlertRule> {
    return view(await this.row(id), await this.repo.webhookIds(id));
  }

  async create(body: AlertRuleCreate): Promise<AlertRule> {
    const threshold = thresholdOf(body.kind, body.threshold);
    const fleetId = body.fleet_id ?? null;
    const fleetName = fleetId === null ? null : await this.targets.fleetName(fleetId);
    const emails = this.emails(body.emails ?? []);
    const webhookIds = await this.webhooks(body.webhook_ids ?? []);
    const name = body.name?.trim() || describeAlertCondition(body.kind, threshold) + (fleetName ? ` (${fleetName})` : '');
    return this.work.run(async () => {
      const at = new Date(this.engine.now()).toISOString();
      const id = await this.repo.insertRule({
        name,
        kind: body.kind,
        enabled: body.enabled ?? true,
        threshold,
        fleetId,
        emails,
        at,
      });
      await this.repo.setWebhooks(id, webhookIds);
      const created = await this.get(id);
      await this.events.record(
        'alert.rule_created',
        `Alert rule "${name}" created: ${created.condition}`,
        {},
        {
          id,
          name,
          before: null,
          after: auditView(created),
        },
      );
      await this.work.afterCommit(() => this.engine.schedule(0));
      return created;
    });
  }

  async update(id: number, patch: AlertRulePatch): Promise<AlertRule> {
    const before = await this.get(id);
    const threshold = patch.threshold === undefined ? before.threshold : thresholdOf(before.kind, patch.threshold);
    const fleetId = patch.fleet_id === undefined ? before.fleet_id : patch.fleet_id;
    if (fleetId !== null && fleetId !== before.fleet_id) await this.targets.fleetName(fleetId);
    const emails = patch.emails === undefined ? before.emails : this.emails(patch.emails);
    const webhookIds = patch.webhook_ids === undefined ? before.webhook_ids : await this.webhooks(patch.webhook_ids);
    const enabled = patch.enabled ?? before.enabled;
    const name = patch.name?.trim() || before.name;
    return this.work.run(async () => {
      const at = new Date(this.engine.now()).toISOString();
      await this.repo.updateRule(id, { name, kind: before.kind, enabled, threshold, fleetId, emails, at });
      if (patch.webhook_ids !== undefined) await this.repo.setWebhooks(id, webhookIds);
      // A disabled rule watches nothing: its incidents close without a notice.
      if (before.enabled && !enabled) await this.engine.closeQuietly(id);
      const after = await this.get(id);
      const verb = before.enabled === after.enabled ? 'changed' : after.enabled ? 'enabled' : 'disabled';
      await this.events.record(
        'alert.rule_updated',
        `Alert rule "${name}" ${verb}`,
        {},
        {
          id,
          name,
          before: auditView(before),
          after: auditView(after),
        },
      );
      await this.work.afterCommit(() => this.engine.schedule(0));
      return after;
    });
  }

  delete(id: number): Promise<AlertRule> {
    return this.work.run(async () => {
      const before = await this.get(id);
      await this.repo.deleteRule(id);
      await this.events.record(
        'alert.rule_deleted',
        `Alert rule "${before.name}" deleted`,
        {},
        {
          id,
          name: before.name,
          before: auditView(before),
          after: null,
        },
      );
      return before;
    });
  }

  /** Newest first; an actor scoped to fleets sees the incidents of its fleets' rules only. */
  async incidents(query: AlertIncidentsQuery): Promise<AlertIncident[]> {
    const limit = query.limit ?? 200;
    const scope = currentFleetScope();
    if (scope === null)
      return (await this.repo.incidents({ state: query.state, ruleId: query.rule_id, limit })).map(incidentView);
    const visible = new Set((await this.list()).map((rule) => rule.id));
    return (await this.repo.incidents({ state: query.state, ruleId: query.rule_id, limit: 10 * limit }))
      .filter((row) => visible.has(row.rule_id))
      .slice(0, limit)
      .map(incidentView);
  }

  private async row(id: number): Promise<RuleRow> {
    const row = await this.repo.rule(id);
    if (!row) throw new ApiError(404, 'ERROR_NOT_FOUND', `No alert rule #${id}`);
    return row;
  }

  private emails(given: string[]): string[] {
    const bad = given.filter((email) => !isValidEmail(email));
    if (bad.length > 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', `Not an email address: ${bad.join(', ')}`);
    return [...new Set(given.map(normalizeEmail))];
  }

  private async webhooks(ids: number[]): Promise<number[]> {
    const unknown: number[] = [];
    for (const id of ids) if (!(await this.targets.webhookExists(id))) unknown.push(id);
    if (unknown.length > 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', `No webhook #${unknown.join(', #')}`);
    return ids;
  }
}

/** The rule's threshold: the kind's default when none is given; refused for a kind that takes none, or above its bound. */
function thresholdOf(kind: AlertKind, given: number | null | undefined): number | null {
  const info = ALERT_KIND_INFO[kind].threshold;
  if (info === null) {
    if (given !== undefined && given !== null) {
      throw new ApiError(400, 'ERROR_BAD_REQUEST', `The rule ${kind} takes no threshold`);
    }
    return null;
  }
  const value = given ?? info.default;
  if (value > info.max)
    throw new ApiError(400, 'ERROR_BAD_REQUEST', `The threshold of ${kind} is at most ${info.max} ${info.unit}`);
  return value;
}

function view(row: RuleRow, webhookIds: number[]): AlertRule {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    condition: describeAlertCondition(row.kind, row.threshold),
    enabled: row.enabled === 1,
    threshold: row.threshold,
    fleet_id: row.fleet_id,
    fleet_name: row.fleet_name,
    emails: JSON.parse(row.emails) as string[],
    webhook_ids: webhookIds,
    open_incidents: row.open_incidents,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function auditView(rule: AlertRule): Record<string, unknown> {
  return {
    name: rule.name,
    kind: rule.kind,
    enabled: rule.enabled,
    threshold: rule.threshold,
    fleet_id: rule.fleet_id,
    emails: rule.emails,
    webhook_ids: rule.webhook_ids,
  };
}

export function incidentView(row: IncidentRow): AlertIncident {
  return {
    id: row.id,
    rule_id: row.rule_id,
    rule_name: row.rule_name,
    kind: row.kind,
    subject_key: row.subject_key,
    subject: row.subject,
    agent_id: row.agent_id,
    detail: row.detail,
    state: row.state,
    opened_at: row.opened_at,
    last_seen_at: row.last_seen_at,
    resolved_at: row.resolved_at,
  };
}
