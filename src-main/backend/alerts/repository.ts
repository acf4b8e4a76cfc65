import type { Sql } from '../db/sql.ts';
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
  rules(): Promise<RuleRow[]>;
  rule(id: number): Promise<RuleRow | undefined>;
  insertRule(fields: RuleFields): Promise<number>;
  updateRule(id: number, fields: RuleFields): Promise<void>;
  deleteRule(id: number): Promise<void>;
  webhookIds(ruleId: number): Promise<number[]>;
  allWebhookIds(): Promise<Map<number, number[]>>;
  setWebhooks(ruleId: number, webhookIds: number[]): Promise<void>;
  openIncidents(ruleId: number): Promise<IncidentRow[]>;
  /** The new incident's id, or null when the subject has an open incident already (another evaluation opened it). */
  openIncident(ruleId: number, subject: FiringSubject, at: string): Promise<number | null>;
  resolveIncident(id: number, at: string): Promise<boolean>;
  /** Every open incident of the rule was seen again at `at` (those just resolved are no longer open). */
  touchOpen(ruleId: number, at: string): Promise<void>;
  incidents(filter: { state?: 'open' | 'resolved'; ruleId?: number; limit: number }): Promise<IncidentRow[]>;
  incident(id: number): Promise<IncidentRow | undefined>;
}

const RULE_COLUMNS = `r.*, f.name AS fleet_name,
  (SELECT count(*) FROM alert_incidents i WHERE i.rule_id = r.id AND i.state = 'open') AS open_incidents`;
const INCIDENT_COLUMNS = `i.*, r.name AS rule_name, r.kind`;

export class SqliteAlertRepository implements AlertRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      rules: `SELECT ${RULE_COLUMNS} FROM alert_rules r LEFT JOIN fleets f ON f.id = r.fleet_id ORDER BY r.id`,
      rule: `SELECT ${RULE_COLUMNS} FROM alert_rules r LEFT JOIN fleets f ON f.id = r.fleet_id WHERE r.id = ?`,
      insertRule: `INSERT INTO alert_rules (name, kind, enabled, threshold, fleet_id, emails, created_at, updated_at)
         VALUES (@name, @kind, @enabled, @threshold, @fleet_id, @emails, @at, @at) RETURNING id`,
      updateRule: `UPDATE alert_rules SET name = @name, enabled = @enabled, threshold = @threshold, fleet_id = @fleet_id, emails = @emails,
           updated_at = @at WHERE id = @id`,
      deleteRule: `DELETE FROM alert_rules WHERE id = ?`,
      webhookIds: `SELECT webhook_id FROM alert_rule_webhooks WHERE rule_id = ? ORDER BY webhook_id`,
      allWebhookIds: `SELECT rule_id, webhook_id FROM alert_rule_webhooks ORDER BY rule_id, webhook_id`,
      clearWebhooks: `DELETE FROM alert_rule_webhooks WHERE rule_id = ?`,
      addWebhook: `INSERT INTO alert_rule_webhooks (rule_id, webhook_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
      openIncidents: `SELECT ${INCIDENT_COLUMNS} FROM alert_incidents i JOIN alert_rules r ON r.id = i.rule_id
         WHERE i.rule_id = ? AND i.state = 'open' ORDER BY i.id`,
      openIncident: `INSERT INTO alert_incidents (rule_id, subject_key, subject, agent_id, detail, state, opened_at, last_seen_at)
         VALUES (@rule_id, @key, @subject, @agent_id, @detail, 'open', @at, @at) ON CONFLICT DO NOTHING RETURNING id`,
      resolveIncident: `UPDATE alert_incidents SET state = 'resolved', resolved_at = ? WHERE id = ? AND state = 'open'`,
      touchOpen: `UPDATE alert_incidents SET last_seen_at = ? WHERE rule_id = ? AND state = 'open'`,
      incidents: `SELECT ${INCIDENT_COLUMNS} FROM alert_incidents i JOIN alert_rules r ON r.id = i.rule_id
         WHERE (CAST(@state AS text) IS NULL OR i.state = @state) AND (CAST(@rule_id AS bigint) IS NULL OR i.rule_id = @rule_id)
         ORDER BY i.id DESC LIMIT @limit`,
      incident: `SELECT ${INCIDENT_COLUMNS} FROM alert_incidents i JOIN alert_rules r ON r.id = i.rule_id WHERE i.id = ?`,
    };
  }

  async rules(): Promise<RuleRow[]> {
    return (await this.sql.all(this.s.rules)) as RuleRow[];
  }

  async rule(id: number): Promise<RuleRow | undefined> {
    return (await this.sql.get(this.s.rule, [id])) as RuleRow | undefined;
  }

  async insertRule(fields: RuleFields): Promise<number> {
    return ((await this.sql.get(this.s.insertRule, ruleParams(fields))) as { id: number }).id;
  }

  async updateRule(id: number, fields: RuleFields): Promise<void> {
    const { kind: _kind, ...params } = ruleParams(fields);
    await this.sql.run(this.s.updateRule, { id, ...params });
  }

  async deleteRule(id: number): Promise<void> {
    await this.sql.run(this.s.deleteRule, [id]);
  }

  async webhookIds(ruleId: number): Promise<number[]> {
    return ((await this.sql.all(this.s.webhookIds, [ruleId])) as { webhook_id: number }[]).map((row) => row.webhook_id);
  }

  async allWebhookIds(): Promise<Map<number, number[]>> {
    const found = new Map<number, number[]>();
    for (const row of (await this.sql.all(this.s.allWebhookIds)) as { rule_id: number; webhook_id: number }[]) {
      found.set(row.rule_id, [...(found.get(row.rule_id) ?? []), row.webhook_id]);
    }
    return found;
  }

  async setWebhooks(ruleId: number, webhookIds: number[]): Promise<void> {
    await this.sql.run(this.s.clearWebhooks, [ruleId]);
    for (const id of webhookIds) await this.sql.run(this.s.addWebhook, [ruleId, id]);
  }

  async openIncidents(ruleId: number): Promise<IncidentRow[]> {
    return (await this.sql.all(this.s.openIncidents, [ruleId])) as IncidentRow[];
  }

  async openIncident(ruleId: number, subject: FiringSubject, at: string): Promise<number | null> {
    const row = await this.sql.get<{ id: number }>(this.s.openIncident, {
      rule_id: ruleId,
      key: subject.key,
      subject: subject.subject,
      agent_id: subject.agentId,
      detail: subject.detail,
      at,
    });
    return row?.id ?? null;
  }

  async resolveIncident(id: number, at: string): Promise<boolean> {
    return (await this.sql.run(this.s.resolveIncident, [at, id])).changes === 1;
  }

  async touchOpen(ruleId: number, at: string): Promise<void> {
    await this.sql.run(this.s.touchOpen, [at, ruleId]);
  }

  async incidents(filter: { state?: 'open' | 'resolved'; ruleId?: number; limit: number }): Promise<IncidentRow[]> {
    return (await this.sql.all(this.s.incidents, {
      state: filter.state ?? null,
      rule_id: filter.ruleId ?? null,
      limit: filter.limit,
    })) as IncidentRow[];
  }

  async incident(id: number): Promise<IncidentRow | undefined> {
    return (await this.sql.get(this.s.incident, [id])) as IncidentRow | undefined;
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
