import { createHash } from 'node:crypto';
import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import { enrollmentLinks, type EnrollmentLinks, type LinkTargets } from '../deeplink/enrollment-links.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { UserRepository } from '../sessions/user-repository.ts';
import type { SettingsStore } from '../settings/settings.ts';
import { randomHex } from '../util/tokens.ts';

export const CODE_LIFETIME_DAYS = { min: 1, max: 365 } as const;
export const CODE_MAX_USES = 1_000_000;
const DAY_MS = 24 * 60 * 60 * 1000;

export type CodeApproval = 'auto' | 'manual';
export type CodeStatus = 'active' | 'expired' | 'used_up' | 'revoked';

export interface CodeRow {
  id: number;
  entity_id: number;
  fleet_id: number;
  account_user_id: number;
  name: string;
  token: string;
  domains: string;
  max_uses: number | null;
  uses: number;
  approval: CodeApproval;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  rotated_at: string | null;
  last_used_at: string | null;
}

export interface CodeInput {
  name: string;
  fleet?: string | null;
  domains?: string[] | null;
  max_uses?: number | null;
  /** Lifetime in days; null or absent: the code never expires. */
  days?: number | null;
  approval?: CodeApproval;
}

export interface CodeLogEntry {
  id: number;
  at: string;
  outcome: 'refused' | 'used';
  code: string | null;
  message: string;
  remote_addr: string | null;
  email: string | null;
  serial: string | null;
  uuid: string | null;
  user_id: number | null;
  agent_id: number | null;
  agent_name: string | null;
  enroll_status: string | null;
}

export interface CodeAttempt {
  remote_addr: string | null;
  email: string | null;
  serial: string | null;
  uuid: string | null;
}

// A DNS name: dotted labels of letters, digits and inner hyphens.
const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

export function statusOfCode(row: Pick<CodeRow, 'revoked_at' | 'expires_at' | 'max_uses' | 'uses'>, now = Date.now()): CodeStatus {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at && Date.parse(row.expires_at) <= now) return 'expired';
  if (row.max_uses !== null && row.uses >= row.max_uses) return 'used_up';
  return 'active';
}

export function domainsOf(row: Pick<CodeRow, 'domains'>): string[] {
  return JSON.parse(row.domains) as string[];
}

/** Whether `email`'s domain is one the code allows (exactly; an empty list allows any). */
export function emailDomainAllowed(email: string, domains: string[]): boolean {
  if (domains.length === 0) return true;
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return domains.includes(domain);
}

export const sessionHash = (token: string) => createHash('sha256').update(token).digest('hex');

/** The code was used up between the check and the transaction (a concurrent enrollment won). */
export class CodeUsedUp extends Error {}

/**
 * Enrollment codes: one deeplink/QR code for many devices, bounded by email domains, uses, expiry
 * and approval. The code's account (field 2 of the deeplink) only opens sessions; each device is
 * tied to the person whose email it gives.
 */
export class EnrollmentCodeService {
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly users: UserRepository;
  private readonly fleets: FleetService;
  private readonly settings: SettingsStore;
  private readonly links: LinkTargets;
  private readonly statements;

  constructor(deps: { db: Db; events: EventLog; work: UnitOfWork; users: UserRepository; fleets: FleetService; settings: SettingsStore; links: LinkTargets }) {
    this.events = deps.events;
    this.work = deps.work;
    this.users = deps.users;
    this.fleets = deps.fleets;
    this.settings = deps.settings;
    this.links = deps.links;
    const db = deps.db;
    this.statements = {
      insert: db.prepare(
        `INSERT INTO enrollment_codes (entity_id, fleet_id, account_user_id, name, token, domains, max_uses, approval, created_at, expires_at)
         VALUES (@entity_id, @fleet_id, @account_user_id, @name, @token, @domains, @max_uses, @approval, @created_at, @expires_at)`,
      ),
      byId: db.prepare(`SELECT * FROM enrollment_codes WHERE id = ?`),
      byToken: db.prepare(`SELECT * FROM enrollment_codes WHERE token = ?`),
      byAccount: db.prepare(`SELECT id FROM enrollment_codes WHERE account_user_id = ?`),
      list: db.prepare(`SELECT * FROM enrollment_codes ORDER BY id DESC`),
      revoke: db.prepare(`UPDATE enrollment_codes SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
      rotate: db.prepare(`UPDATE enrollment_codes SET token = ?, rotated_at = ? WHERE id = ?`),
      // The one place a use is counted: atomic, so concurrent enrollments never pass max_uses.
      use: db.prepare(
        `UPDATE enrollment_codes SET uses = uses + 1, last_used_at = @now
         WHERE id = @id AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > @now) AND (max_uses IS NULL OR uses < max_uses)`,
      ),
      touch: db.prepare(`UPDATE enrollment_codes SET last_used_at = ? WHERE id = ?`),
      log: db.prepare(
        `INSERT INTO enrollment_code_log (code_id, at, outcome, code, message, remote_addr, email, serial, uuid, user_id, agent_id, session_hash)
         VALUES (@code_id, @at, @outcome, @code, @message, @remote_addr, @email, @serial, @uuid, @user_id, @agent_id, @session_hash)`,
      ),
      logOf: db.prepare(
        `SELECT l.id, l.at, l.outcome, l.code, l.message, l.remote_addr, l.email, l.serial, l.uuid, l.user_id, l.agent_id,
                a.name AS agent_name, a.enroll_status
         FROM enrollment_code_log l LEFT JOIN agents a ON a.id = l.agent_id
         WHERE l.code_id = ? ORDER BY l.id DESC LIMIT 1000`,
      ),
      refusedCount: db.prepare(`SELECT count(*) AS n FROM enrollment_code_log WHERE code_id = ? AND outcome = 'refused'`),
      pendingCount: db.prepare(`SELECT count(*) AS n FROM agents WHERE enrollment_code_id = ? AND enroll_status = 'pending_approval'`),
      lastUse: db.prepare(`SELECT session_hash FROM enrollment_code_log WHERE agent_id = ? AND outcome = 'used' ORDER BY id DESC LIMIT 1`),
      fleetName: db.prepare(`SELECT name FROM fleets WHERE id = ?`),
    };
  }

  /** Checks an input; returns the problems (empty when it can be created). */
  validate(input: CodeInput, entityId = 1): string[] {
    const errors: string[] = [];
    if (!input.name?.trim()) errors.push('name is missing');
    for (const domain of input.domains ?? []) {
      if (!DOMAIN.test(normalizeDomain(domain))) errors.push(`"${domain}" is not a valid email domain`);
    }
    if (input.max_uses != null && (!Number.isInteger(input.max_uses) || input.max_uses < 1 || input.max_uses > CODE_MAX_USES)) {
      errors.push(`maximum uses must be 1 to ${CODE_MAX_USES} (or none for unlimited)`);
    }
    if (input.days != null && (!Number.isInteger(input.days) || input.days < CODE_LIFETIME_DAYS.min || input.days > CODE_LIFETIME_DAYS.max)) {
      errors.push(`lifetime must be ${CODE_LIFETIME_DAYS.min} to ${CODE_LIFETIME_DAYS.max} days (or none)`);
    }
    try {
      this.fleets.resolve(entityId, input.fleet);
    } catch (error) {
      errors.push((error as Error).message);
    }
    return errors;
  }

  create(input: CodeInput, entityId = 1): CodeRow {
    const errors = this.validate(input, entityId);
    if (errors.length > 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', errors.join('; '));
    const domains = [...new Set((input.domains ?? []).map(normalizeDomain))];
    return this.work.run(() => {
      const fleet = this.fleets.resolve(entityId, input.fleet);
      const name = input.name.trim();
      const account = this.users.createCodeAccount(entityId, name);
      const now = Date.now();
      const id = Number(
        this.statements.insert.run({
          entity_id: entityId,
          fleet_id: fleet.id,
          account_user_id: account.id,
          name,
          token: randomHex(32),
          domains: JSON.stringify(domains),
          max_uses: input.max_uses ?? null,
          approval: input.approval ?? 'auto',
          created_at: new Date(now).toISOString(),
          expires_at: input.days == null ? null : new Date(now + input.days * DAY_MS).toISOString(),
        }).lastInsertRowid,
      );
      this.events.record('code.created', `Enrollment code "${name}" created`, { entityId }, {
        code_id: id,
        fleet: fleet.name,
        domains,
        max_uses: input.max_uses ?? null,
        days: input.days ?? null,
        approval: input.approval ?? 'auto',
      });
      return this.get(id);
    });
  }

  get(id: number): CodeRow {
    const row = this.statements.byId.get(id) as CodeRow | undefined;
    if (!row) throw itemNotFound('Enrollment code not found');
    return row;
  }

  byToken(token: string): CodeRow | undefined {
    return this.statements.byToken.get(token) as CodeRow | undefined;
  }

  /** Whether this user is a code's account (it enrolls devices, it never downloads). */
  isCodeAccount(userId: number): boolean {
    return this.statements.byAccount.get(userId) !== undefined;
  }

  list(): CodeRow[] {
    return this.statements.list.all() as CodeRow[];
  }

  revoke(id: number): CodeRow {
    const row = this.get(id);
    if (row.revoked_at) return row;
    return this.work.run(() => {
      this.statements.revoke.run(nowIso(), id);
      this.events.record('code.revoked', `Enrollment code "${row.name}" revoked`, { entityId: row.entity_id }, { code_id: id });
      return this.get(id);
    });
  }

  /** New code token and account token: every printed or sent copy stops working. */
  rotate(id: number): CodeRow {
    const row = this.get(id);
    return this.work.run(() => {
      this.statements.rotate.run(randomHex(32), nowIso(), id);
      this.users.rotateToken(row.account_user_id);
      this.events.record(
        'code.rotated',
        `Enrollment code "${row.name}" rotated: printed and shared copies of its QR code and link no longer work`,
        { entityId: row.entity_id },
        { code_id: id },
      );
      return this.get(id);
    });
  }

  /** Counts one use; call inside the transaction that creates the agent. Throws CodeUsedUp when none is left. */
  consume(row: CodeRow, use: { agentId: number; userId: number; sessionToken: string; attempt: CodeAttempt }): void {
    const at = nowIso();
    if (this.statements.use.run({ id: row.id, now: at }).changes !== 1) throw new CodeUsedUp();
    this.statements.log.run({
      code_id: row.id,
      at,
      outcome: 'used',
      code: null,
      message: 'Device enrolled',
      ...use.attempt,
      user_id: use.userId,
      agent_id: use.agentId,
      session_hash: sessionHash(use.sessionToken),
    });
  }

  logRefusal(row: CodeRow, code: string, message: string, attempt: CodeAttempt): void {
    const at = nowIso();
    this.work.run(() => {
      this.statements.log.run({ code_id: row.id, at, outcome: 'refused', code, message, ...attempt, user_id: null, agent_id: null, session_hash: null });
      this.statements.touch.run(at, row.id);
      this.events.record('code.refused', `Enrollment with code "${row.name}" refused for ${attempt.email ?? '(no email)'}: ${message}`, { entityId: row.entity_id }, {
        code_id: row.id,
        code,
        ...attempt,
      });
    });
  }

  /**
   * Whether this session made the agent's latest enrollment with a code. Every session of a code
   * shares its account, so the account alone cannot tell whose device an agent is.
   */
  lastEnrolledInSession(agentId: number, sessionToken: string): boolean {
    const row = this.statements.lastUse.get(agentId) as { session_hash: string | null } | undefined;
    return row?.session_hash === sessionHash(sessionToken);
  }

  logOf(id: number): CodeLogEntry[] {
    return this.statements.logOf.all(id) as CodeLogEntry[];
  }

  deeplinkOf(row: CodeRow): EnrollmentLinks {
    return enrollmentLinks(this.settings, this.links, this.users.byId(row.account_user_id)!.user_token, row.token);
  }

  /** What the admin API and CLI show of a code. */
  view(row: CodeRow) {
    const links = this.deeplinkOf(row);
    return {
      id: row.id,
      entity_id: row.entity_id,
      name: row.name,
      status: statusOfCode(row),
      fleet_id: row.fleet_id,
      fleet: (this.statements.fleetName.get(row.fleet_id) as { name: string } | undefined)?.name ?? null,
      domains: domainsOf(row),
      max_uses: row.max_uses,
      uses: row.uses,
      approval: row.approval,
      created_at: row.created_at,
      expires_at: row.expires_at,
      revoked_at: row.revoked_at,
      rotated_at: row.rotated_at,
      last_used_at: row.last_used_at,
      refused_attempts: (this.statements.refusedCount.get(row.id) as { n: number }).n,
      pending_approval: (this.statements.pendingCount.get(row.id) as { n: number }).n,
      token: row.token,
      user_token: this.users.byId(row.account_user_id)!.user_token,
      deeplink: links.url,
      deeplink_data: links.data,
      app_link: links.app_link,
      helpdesk: this.settings.helpdesk(),
    };
  }
}

export type CodeView = ReturnType<EnrollmentCodeService['view']>;

function normalizeDomain(domain: string): string {
  return domain.trim().toLowerCase().replace(/^@/, '');
}
