// The --where language (src-shared/contract/where.ts) compiled to SQL over the agents table, and the
// rows it reads: the version keys and installed apps kept for it. Every value travels as a named
// parameter (@w0, @w1 …), never inside the SQL text; the text is built from the parsed expression's
// fields and operators only. Written in SQL both SQLite and PostgreSQL accept (CASE rather than
// boolean sums, lower() on both sides of LIKE, times computed here as ISO strings).
import type { Sql } from '../db/sql.ts';
import type { AgentSummary } from '../../../src-shared/contract/index.ts';
import { versionKey, type WhereComparison, type WhereNode } from '../../../src-shared/contract/where.ts';
import { inFleetsSql } from '../fleets/fleet-repository.ts';
import { SUMMARY_SQL, toSummary } from './repository.ts';

export interface CompiledWhere {
  /** A boolean SQL expression over `a` (agents), `f` (fleets) and `u` (the enrolling user). */
  sql: string;
  params: Record<string, string | number | null>;
}

const SQL_OPS = { '=': '=', '!=': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' } as const;

/** The compliance of device `a` as the devices table counts it (policies/views.ts compliance()). */
const COMPLIANCE_SQL = `(SELECT CASE
    WHEN coalesce(sum(CASE WHEN t.status NOT IN ('canceled', 'overriden') THEN 1 ELSE 0 END), 0) = 0 THEN 'none'
    WHEN coalesce(sum(CASE WHEN t.status IN ('failed', 'incompatible') THEN 1 ELSE 0 END), 0) > 0 THEN 'failed'
    WHEN coalesce(sum(CASE WHEN t.status IN ('pending', 'received', 'in progress', 'waiting') THEN 1 ELSE 0 END), 0) > 0 THEN 'pending'
    ELSE 'done' END
  FROM policy_tasks t JOIN policy_assignments d ON d.id = t.deployment_id AND d.state = 'active' WHERE t.agent_id = a.id)`;

const TEXT_COLUMNS = ['a.name', 'a.serial', 'a.uuid', 'u.email', 'a.firstname', 'a.lastname'];

/** A `LIKE` pattern matching `value` anywhere, its wildcards escaped (with ESCAPE '\'). */
const contains = (value: string): string => `%${value.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Compiles a parsed expression; `now` (ms) fixes what "7 days ago" means. */
export function compileWhere(node: WhereNode, now: number): CompiledWhere {
  const params: CompiledWhere['params'] = {};
  let n = 0;
  const param = (value: string | number | null): string => {
    const name = `w${n++}`;
    params[name] = value;
    return `@${name}`;
  };
  const text = (column: string, op: '=' | '!=' | '~', value: string): string => {
    const left = `lower(coalesce(${column}, ''))`;
    if (op === '~') return `${left} LIKE ${param(contains(value))} ESCAPE '\\'`;
    return `${left} ${SQL_OPS[op]} ${param(value.toLowerCase())}`;
  };
  const version = (column: string, op: keyof typeof SQL_OPS, key: string): string =>
    op === '!=' ? `(${column} IS NULL OR ${column} <> ${param(key)})` : `${column} ${SQL_OPS[op]} ${param(key)}`;

  const cmp = (c: WhereComparison): string => {
    switch (c.field) {
      case 'fleet': {
        const byName = text('f.name', c.op === '~' ? '~' : '=', c.value);
        const match = c.op !== '~' && /^\d+$/.test(c.value) ? `(a.fleet_id = ${param(Number(c.value))} OR ${byName})` : byName;
        return c.op === '!=' ? `NOT ${match}` : match;
      }
      case 'model':
        return text('a.model', c.op, c.value);
      case 'name':
        return text('a.name', c.op, c.value);
      case 'serial':
        return text('a.serial', c.op, c.value);
      case 'email':
        return text('u.email', c.op, c.value);
      case 'type':
        return `a.type ${SQL_OPS[c.op]} ${param(c.value)}`;
      case 'os':
        return version('a.os_version_key', c.op, c.key);
      case 'online':
        return `a.is_online ${c.op === '=' ? '=' : '<>'} ${param(c.value ? 1 : 0)}`;
      case 'status':
        return `a.enroll_status ${SQL_OPS[c.op]} ${param(c.value)}`;
      case 'compliance':
        return `${COMPLIANCE_SQL} ${SQL_OPS[c.op]} ${param(c.value)}`;
      case 'last_contact': {
        if (c.seconds === null) return c.op === '=' ? 'a.last_contact IS NULL' : 'a.last_contact IS NOT NULL';
        const cutoff = param(new Date(now - c.seconds * 1000).toISOString());
        // Not seen for more than that long (never seen counts), or seen within it.
        if (c.op === '>') return `(a.last_contact IS NULL OR a.last_contact < ${cutoff})`;
        if (c.op === '>=') return `(a.last_contact IS NULL OR a.last_contact <= ${cutoff})`;
        if (c.op === '<') return `a.last_contact > ${cutoff}`;
        return `a.last_contact >= ${cutoff}`;
      }
      case 'app': {
        const conditions = [
          c.op === '~'
            ? `(lower(p.package) LIKE ${param(contains(c.value))} ESCAPE '\\' OR lower(p.name) LIKE ${param(contains(c.value))} ESCAPE '\\')`
            : `p.package = ${param(c.value)}`,
          ...c.versions.map((v) => version('p.version_key', v.op, v.key)),
        ];
        const exists = `EXISTS (SELECT 1 FROM agent_apps p WHERE p.agent_id = a.id AND ${conditions.join(' AND ')})`;
        return c.op === '!=' ? `NOT ${exists}` : exists;
      }
    }
  };

  const walk = (node: WhereNode): string => {
    switch (node.kind) {
      case 'and':
        return node.terms.length === 0 ? '1 = 1' : `(${node.terms.map(walk).join(' AND ')})`;
      case 'or':
        return `(${node.terms.map(walk).join(' OR ')})`;
      case 'text': {
        const pattern = param(contains(node.value));
        return `(${TEXT_COLUMNS.map((column) => `lower(coalesce(${column}, '')) LIKE ${pattern} ESCAPE '\\'`).join(' OR ')})`;
      }
      case 'cmp':
        return cmp(node);
    }
  };
  return { sql: walk(node), params };
}

const FROM = `FROM agents a
  JOIN fleets f ON f.id = a.fleet_id
  LEFT JOIN users u ON u.id = a.enrolled_by_user_id`;

/** The devices an expression selects, and the keys and app rows it reads. */
export class DeviceQueryRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      setOsKey: `UPDATE agents SET os_version_key = ? WHERE id = ?`,
      insertApp: `INSERT INTO agent_apps (agent_id, package, name, version, version_key) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (agent_id, package) DO NOTHING`,
      unkeyed: `SELECT id, os_version FROM agents WHERE os_version IS NOT NULL AND os_version_key IS NULL`,
      inventoriesWithoutApps: `SELECT i.agent_id, i.summary FROM agent_inventories i WHERE NOT EXISTS (SELECT 1 FROM agent_apps p WHERE p.agent_id = i.agent_id)`,
    };
  }

  /** The device list filtered by an expression, within the fleets of `fleets` (fleets/scope.ts fleetScopeParam). */
  async summaries(where: CompiledWhere, fleets: string | null, limit = 100000): Promise<AgentSummary[]> {
    const rows = (await this.sql.all(
      `${SUMMARY_SQL} WHERE ${inFleetsSql('a.fleet_id')} AND ${where.sql} ORDER BY a.id DESC LIMIT @limit`,
      { ...where.params, fleets, limit },
    )) as AgentSummary[];
    return rows.map(toSummary);
  }

  /** How many devices the expression selects (within `fleets`). */
  async count(where: CompiledWhere, fleets: string | null): Promise<number> {
    const row = (await this.sql.get(`SELECT count(*) AS n ${FROM} WHERE ${inFleetsSql('a.fleet_id')} AND ${where.sql}`, {
      ...where.params,
      fleets,
    })) as { n: number };
    return row.n;
  }

  /** The ids (and fleets) of the devices selected, enrolled or not. */
  async ids(where: CompiledWhere, fleets: string | null): Promise<{ id: number; fleet_id: number }[]> {
    return (await this.sql.all(
      `SELECT a.id, a.fleet_id ${FROM} WHERE ${inFleetsSql('a.fleet_id')} AND ${where.sql} ORDER BY a.id`,
      { ...where.params, fleets },
    )) as { id: number; fleet_id: number }[];
  }

  /** Whether one device matches. */
  async matches(agentId: number, where: CompiledWhere): Promise<boolean> {
    return (
      (await this.sql.get(`SELECT 1 AS hit ${FROM} WHERE a.id = @agent_id AND ${where.sql}`, {
        ...where.params,
        agent_id: agentId,
      })) !== undefined
    );
  }

  /** Keys the rows written before version keys existed (migration 23); returns how many devices. */
  async backfill(): Promise<number> {
    let n = 0;
    for (const row of (await this.sql.all(this.s.unkeyed)) as { id: number; os_version: string }[]) {
      const key = versionKey(row.os_version);
      if (key === null) continue;
      await this.sql.run(this.s.setOsKey, [key, row.id]);
      n++;
    }
    for (const row of (await this.sql.all(this.s.inventoriesWithoutApps)) as { agent_id: number; summary: string }[]) {
      const summary = JSON.parse(row.summary) as {
        applications?: { name: string; version: string | null; package: string | null }[];
      };
      for (const app of summary.applications ?? []) {
        if (!app.package) continue;
        await this.sql.run(this.s.insertApp, [row.agent_id, app.package, app.name, app.version, versionKey(app.version)]);
      }
    }
    return n;
  }
}
