import type { Db } from '../db/database.ts';
import type { AlertKind } from '../../../src-shared/contract/index.ts';

export interface RuleRow {
  id: number;
  name: string;
  kind: AlertKind;
  enabled: number;
  threshold: number | null;
  fleet_id: number | null;
  fleet_name: string | null;
  /** JSON array of addresses. */
  emails: string;
  created_at: string;
  updated_at: string;
  open_incidents: number;
}

export interface RuleFields {
  name: string;
  kind: AlertKind;
  enabled: boolean;
  threshold: number | null;
  fleetId: number | null;
  emails: string[];
  at: string;
}

export interface IncidentRow {
  id: number;
  rule_id: number;
  rule_name: string;
  kind: AlertKind;
  subject_key: string;
  subject: string;
  agent_id: number | null;
  detail: string;
  state: 'open' | 'resolved';
  opened_at: string;
  last_seen_at: string;
  resolved_at: string | null;
}

/** A subject for which a rule's condition holds now. */
export interface FiringSubject {
  key: string;
  subject: string;
  agentId: number | null;
  detail: string;
}

/** alert_rules, their webhooks (alert_rule_webhooks) and alert_incidents. */
export interface AlertRepository {
  rules(): RuleRow[];
  rule(id: number): RuleRow | undefined;
  insertRule(fields: RuleFields): number;
  updateRule(id: number, fields: RuleFields): void;
  deleteRule(id: number): void;
  webhookIds(ruleId: number): number[];
  allWebhookIds(): Map<number, number[]>;
  setWebhooks(ruleId: number, webhookIds: number[]): void;
  openIncidents(ruleId: number): IncidentRow[];
  openIncident(ruleId: number, subject: FiringSubject, at: string): number;
  resolveIncident(id: number, at: string): boolean;
  /** Every open incident of the rule was seen again at `at` (those just resolved are no longer open). */
  touchOpen(ruleId: number, at: string): void;
  incidents(filter: { state?: 'open' | 'resolved'; ruleId?: number; limit: number }): IncidentRow[];
  incident(id: number): IncidentRow | undefined;
}

const RULE_COLUMNS = `r.*, f.name AS fleet_name,
  (SELECT count(*) FROM alert_incidents i WHERE i.rule_id = r.id AND i.state = 'open') AS open_incidents`;
const INCIDENT_COLUMNS = `i.*, r.name AS rule_name, r.kind`;

export class SqliteAlertRepository implements AlertRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      rules: db.prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules r LEFT JOIN fleets f ON f.id = r.fleet_id ORDER BY r.id`),
      rule: db.prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules r LEFT JOIN fleets f ON f.id = r.fleet_id WHERE r.id = ?`),
      insertRule: db.prepare(
        `INSERT INTO alert_rules (name, kind, enabled, threshold, fleet_id, emails, created_at, updated_at)
         VALUES (@name, @kind, @enabled, @threshold, @fleet_id, @emails, @at, @at) RETURNING id`,
      ),
      updateRule: db.prepare(
        `UPDATE alert_rules SET name = @name, enabled = @enabled, threshold = @threshold, fleet_id = @fleet_id, emails = @emails,
           updated_at = @at WHERE id = @id`,
      ),
      deleteRule: db.prepare(`DELETE FROM alert_rules WHERE id = ?`),
      webhookIds: db.prepare(`SELECT webhook_id FROM alert_rule_webhooks WHERE rule_id = ? ORDER BY webhook_id`),
      allWebhookIds: db.prepare(`SELECT rule_id, webhook_id FROM alert_rule_webhooks ORDER BY rule_id, webhook_id`),
      clearWebhooks: db.prepare(`DELETE FROM alert_rule_webhooks WHERE rule_id = ?`),
      addWebhook: db.prepare(`INSERT INTO alert_rule_webhooks (rule_id, webhook_id) VALUES (?, ?) ON CONFLICT DO NOTHING`),
      openIncidents: db.prepare(
        `SELECT ${INCIDENT_COLUMNS} FROM alert_incidents i JOIN alert_rules r ON r.id = i.rule_id
         WHERE i.rule_id = ? AND i.state = 'open' ORDER BY i.id`,
      ),
      openIncident: db.prepare(
        `INSERT INTO alert_incidents (rule_id, subject_key, subject, agent_id, detail, state, opened_at, last_seen_at)
         VALUES (@rule_id, @key, @subject, @agent_id, @detail, 'open', @at, @at) RETURNING id`,
      ),
      resolveIncident: db.prepare(
        `UPDATE alert_incidents SET state = 'resolved', resolved_at = ? WHERE id = ? AND state = 'open'`,
      ),
      touchOpen: db.prepare(`UPDATE alert_incidents SET last_seen_at = ? WHERE rule_id = ? AND state = 'open'`),
      incidents: db.prepare(
        `SELECT ${INCIDENT_COLUMNS} FROM alert_incidents i JOIN alert_rules r ON r.id = i.rule_id
         WHERE (@state IS NULL OR i.state = @state) AND (@rule_id IS NULL OR i.rule_id = @rule_id)
         ORDER BY i.id DESC LIMIT @limit`,
      ),
      incident: db.prepare(
        `SELECT ${INCIDENT_COLUMNS} FROM alert_incidents i JOIN alert_rules r ON r.id = i.rule_id WHERE i.id = ?`,
      ),
    };
  }

  rules(): RuleRow[] {
    return this.s.rules.all() as RuleRow[];
  }

  rule(id: number): RuleRow | undefined {
    return this.s.rule.get(id) as RuleRow | undefined;
  }

  insertRule(fields: RuleFields): number {
    return (this.s.insertRule.get(ruleParams(fields)) as { id: number }).id;
  }

  updateRule(id: number, fields: RuleFields): void {
    const { kind: _kind, ...params } = ruleParams(fields);
    this.s.updateRule.run({ id, ...params });
  }

  deleteRule(id: number): void {
    this.s.deleteRule.run(id);
  }

  webhookIds(ruleId: number): number[] {
    return (this.s.webhookIds.all(ruleId) as { webhook_id: number }[]).map((row) => row.webhook_id);
  }

  allWebhookIds(): Map<number, number[]> {
    const found = new Map<number, number[]>();
    for (const row of this.s.allWebhookIds.all() as { rule_id: number; webhook_id: number }[]) {
      found.set(row.rule_id, [...(found.get(row.rule_id) ?? []), row.webhook_id]);
    }
    return found;
  }

  setWebhooks(ruleId: number, webhookIds: number[]): void {
    this.s.clearWebhooks.run(ruleId);
    for (const id of webhookIds) this.s.addWebhook.run(ruleId, id);
  }

  openIncidents(ruleId: number): IncidentRow[] {
    return this.s.openIncidents.all(ruleId) as IncidentRow[];
  }

  openIncident(ruleId: number, subject: FiringSubject, at: string): number {
    return (
      this.s.openIncident.get({
        rule_id: ruleId,
        key: subject.key,
        subject: subject.subject,
        agent_id: subject.agentId,
        detail: subject.detail,
        at,
      }) as { id: number }
    ).id;
  }

  resolveIncident(id: number, at: string): boolean {
    return this.s.resolveIncident.run(at, id).changes === 1;
  }

  touchOpen(ruleId: number, at: string): void {
    this.s.touchOpen.run(at, ruleId);
  }

  incidents(filter: { state?: 'open' | 'resolved'; ruleId?: number; limit: number }): IncidentRow[] {
    return this.s.incidents.all({
      state: filter.state ?? null,
      rule_id: filter.ruleId ?? null,
      limit: filter.limit,
    }) as IncidentRow[];
  }

  incident(id: number): IncidentRow | undefined {
    return this.s.incident.get(id) as IncidentRow | undefined;
  }
}

function ruleParams(fields: RuleFields) {
  return {
    name: fields.name,
    kind: fields.kind,
    enabled: fields.enabled ? 1 : 0,
    threshold: fields.threshold,
    fleet_id: fields.fleetId,
    emails: JSON.stringify(fields.emails),
    at: fields.at,
  };
}
