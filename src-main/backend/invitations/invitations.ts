import type { Statement } from 'better-sqlite3';
import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import { enrollmentLinks, type EnrollmentLinks, type LinkTargets } from '../deeplink/enrollment-links.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FleetService } from '../fleets/fleets.ts';
import type { DeliveryView } from '../mail/deliveries.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { UserRepository } from '../sessions/user-repository.ts';
import type { Settings, SettingsStore } from '../settings/settings.ts';
import { randomHex } from '../util/tokens.ts';

export const LIFETIME_DAYS = { min: 1, max: 180 } as const;
const DAY_MS = 24 * 60 * 60 * 1000;

export type InvitationStatus = 'pending' | 'done' | 'expired' | 'revoked';

export interface InvitationRow {
  id: number;
  entity_id: number;
  user_id: number;
  fleet_id: number;
  email: string;
  firstname: string | null;
  lastname: string | null;
  token: string;
  status: 'pending' | 'done' | 'revoked';
  created_at: string;
  expires_at: string;
  used_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  agent_id: number | null;
}

export interface InvitationInput {
  email: string;
  firstname?: string | null;
  lastname?: string | null;
  fleet?: string | null;
  days?: number | null;
}

export interface InvitationFilter {
  status?: InvitationStatus;
  q?: string;
  fleet_id?: number;
  limit?: number;
  offset?: number;
}

export interface InvitationLogEntry {
  id: number;
  at: string;
  outcome: 'refused' | 'used';
  code: string | null;
  message: string;
  remote_addr: string | null;
  email: string | null;
  serial: string | null;
  uuid: string | null;
}

export type { LinkTargets };

// Pragmatic address check (what the console validates as you type, too): one @, a dotted domain.
const EMAIL = /^[^\s@"<>(),;:\\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function isValidEmail(email: string): boolean {
  return email.length <= 254 && EMAIL.test(email.trim());
}

/** "x@y already has a pending invitation (#12, valid until …)". */
export function pendingMessage(row: Pick<InvitationRow, 'id' | 'email' | 'expires_at'>): string {
  return `${row.email} already has a pending invitation (#${row.id}, valid until ${row.expires_at.slice(0, 16).replace('T', ' ')} UTC)`;
}

export function statusOf(row: Pick<InvitationRow, 'status' | 'expires_at'>, now = Date.now()): InvitationStatus {
  if (row.status === 'pending' && Date.parse(row.expires_at) <= now) return 'expired';
  return row.status;
}

export class InvitationService {
  private readonly db: Db;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly users: UserRepository;
  private readonly fleets: FleetService;
  private readonly settings: SettingsStore;
  private readonly links: LinkTargets;
  private readonly deliveries: { view(invitationId: number): DeliveryView | null } | undefined;
  private readonly statements;
  private readonly listCache = new Map<string, { count: Statement; page: Statement }>();

  constructor(deps: {
    db: Db;
    events: EventLog;
    work: UnitOfWork;
    users: UserRepository;
    fleets: FleetService;
    settings: SettingsStore;
    links: LinkTargets;
    /** Email delivery state shown with each invitation (mail/deliveries.ts). */
    deliveries?: { view(invitationId: number): DeliveryView | null };
  }) {
    this.db = deps.db;
    this.events = deps.events;
    this.work = deps.work;
    this.users = deps.users;
    this.fleets = deps.fleets;
    this.settings = deps.settings;
    this.links = deps.links;
    this.deliveries = deps.deliveries;
    const db = deps.db;
    this.statements = {
      insert: db.prepare(
        `INSERT INTO invitations (entity_id, user_id, fleet_id, email, firstname, lastname, token, status, created_at, expires_at)
         VALUES (@entity_id, @user_id, @fleet_id, @email, @firstname, @lastname, @token, 'pending', @created_at, @expires_at)`,
      ),
      byId: db.prepare(`SELECT * FROM invitations WHERE id = ?`),
      byToken: db.prepare(`SELECT * FROM invitations WHERE token = ?`),
      revoke: db.prepare(`UPDATE invitations SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'pending'`),
      remove: db.prepare(`DELETE FROM invitations WHERE id = ?`),
      markUsed: db.prepare(
        `UPDATE invitations SET status = 'done', used_at = @at, last_used_at = @at, agent_id = @agent_id WHERE id = @id AND status = 'pending'`,
      ),
      touch: db.prepare(`UPDATE invitations SET last_used_at = ? WHERE id = ?`),
      log: db.prepare(
        `INSERT INTO invitation_log (invitation_id, at, outcome, code, message, remote_addr, email, serial, uuid)
         VALUES (@invitation_id, @at, @outcome, @code, @message, @remote_addr, @email, @serial, @uuid)`,
      ),
      logOf: db.prepare(`SELECT * FROM invitation_log WHERE invitation_id = ? ORDER BY id DESC LIMIT 500`),
      agentSummary: db.prepare(`SELECT id, name, serial, uuid, type, enroll_status FROM agents WHERE id = ?`),
      fleetName: db.prepare(`SELECT name FROM fleets WHERE id = ?`),
      refusedCount: db.prepare(`SELECT count(*) AS n FROM invitation_log WHERE invitation_id = ? AND outcome = 'refused'`),
      pendingFor: db.prepare(
        `SELECT * FROM invitations WHERE email = ? COLLATE NOCASE AND entity_id = ? AND status = 'pending' AND expires_at > ? ORDER BY id DESC LIMIT 1`,
      ),
    };
  }

  /** The newest pending, unexpired invitation of an address, if any. */
  pendingFor(email: string, entityId = 1): InvitationRow | undefined {
    return this.statements.pendingFor.get(normalizeEmail(email), entityId, nowIso()) as InvitationRow | undefined;
  }

  /**
   * Validates every input first, so a bad row creates nothing; row numbers start at 1. An address
   * that already has a pending invitation is refused unless `allowPending` (a second device).
   */
  validate(inputs: InvitationInput[], entityId = 1, { allowPending = true }: { allowPending?: boolean } = {}): string[] {
    const errors: string[] = [];
    const seen = new Map<string, number>();
    inputs.forEach((input, index) => {
      const row = index + 1;
      const email = normalizeEmail(input.email ?? '');
      if (!email) errors.push(`row ${row}: email is missing`);
      else if (!isValidEmail(email)) errors.push(`row ${row}: "${input.email}" is not a valid email address`);
      else if (seen.has(email)) errors.push(`row ${row}: ${email} already appears in row ${seen.get(email)}`);
      else {
        seen.set(email, row);
        const pending = allowPending ? undefined : this.pendingFor(email, entityId);
        if (pending) errors.push(`row ${row}: ${pendingMessage(pending)}`);
      }
      const days = input.days ?? this.settings.get().invitation_lifetime_days;
      if (!Number.isInteger(days) || days < LIFETIME_DAYS.min || days > LIFETIME_DAYS.max) {
        errors.push(`row ${row}: lifetime must be ${LIFETIME_DAYS.min} to ${LIFETIME_DAYS.max} days`);
      }
      try {
        this.fleets.resolve(entityId, input.fleet);
      } catch (error) {
        errors.push(`row ${row}: ${(error as Error).message}`);
      }
    });
    return errors;
  }

  create(input: InvitationInput, entityId = 1): InvitationRow {
    return this.createMany([input], entityId)[0]!;
  }

  /** All or nothing: one transaction, after every row validated. */
  createMany(inputs: InvitationInput[], entityId = 1, options: { allowPending?: boolean } = {}): InvitationRow[] {
    if (inputs.length === 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', 'No invitations to create');
    const errors = this.validate(inputs, entityId, options);
    if (errors.length > 0) {
      const single = inputs.length === 1;
      throw new ApiError(400, 'ERROR_BAD_REQUEST', single ? errors[0]!.replace(/^row 1: /, '') : errors.join('; '));
    }
    return this.work.run(() =>
      inputs.map((input) => {
        const email = normalizeEmail(input.email);
        const firstname = input.firstname?.trim() || null;
        const lastname = input.lastname?.trim() || null;
        const fleet = this.fleets.resolve(entityId, input.fleet);
        const user = this.users.findOrCreatePerson(email, entityId, { firstname, lastname });
        const days = input.days ?? this.settings.get().invitation_lifetime_days;
        const now = Date.now();
        const id = Number(
          this.statements.insert.run({
            entity_id: entityId,
            user_id: user.id,
            fleet_id: fleet.id,
            email,
            firstname,
            lastname,
            token: randomHex(32),
            created_at: new Date(now).toISOString(),
            expires_at: new Date(now + days * DAY_MS).toISOString(),
          }).lastInsertRowid,
        );
        this.events.record('invitation.created', `Invitation created for ${email}`, { entityId, invitationId: id }, { email, fleet: fleet.name, days });
        return this.get(id);
      }),
    );
  }

  get(id: number): InvitationRow {
    const row = this.statements.byId.get(id) as InvitationRow | undefined;
    if (!row) throw itemNotFound('Invitation not found');
    return row;
  }

  byToken(token: string): InvitationRow | undefined {
    return this.statements.byToken.get(token) as InvitationRow | undefined;
  }

  list(filter: InvitationFilter = {}): { items: InvitationRow[]; total: number } {
    const where: string[] = [];
    const params: Record<string, unknown> = { now: nowIso() };
    switch (filter.status) {
      case 'pending':
        where.push(`status = 'pending' AND expires_at > @now`);
        break;
      case 'expired':
        where.push(`status = 'pending' AND expires_at <= @now`);
        break;
      case 'done':
      case 'revoked':
        where.push(`status = @status`);
        params.status = filter.status;
        break;
    }
    if (filter.q?.trim()) {
      where.push(`(email LIKE @q ESCAPE '\\' OR firstname LIKE @q ESCAPE '\\' OR lastname LIKE @q ESCAPE '\\')`);
      params.q = `%${filter.q.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    }
    if (filter.fleet_id !== undefined) {
      where.push(`fleet_id = @fleet_id`);
      params.fleet_id = filter.fleet_id;
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const { count, page } = this.listStatements(clause);
    const total = (count.get(params) as { n: number }).n;
    const items = page.all({ ...params, limit: filter.limit ?? 1000, offset: filter.offset ?? 0 }) as InvitationRow[];
    return { items, total };
  }

  /** The two statements of a list, prepared once per combination of filters (a handful exist). */
  private listStatements(clause: string) {
    let statements = this.listCache.get(clause);
    if (!statements) {
      statements = {
        count: this.db.prepare(`SELECT count(*) AS n FROM invitations ${clause}`),
        page: this.db.prepare(`SELECT * FROM invitations ${clause} ORDER BY id DESC LIMIT @limit OFFSET @offset`),
      };
      this.listCache.set(clause, statements);
    }
    return statements;
  }

  revoke(id: number): InvitationRow {
    const row = this.get(id);
    if (row.status === 'done') throw new ApiError(409, 'ERROR_INVITATION_USED', 'This invitation has already been used');
    if (row.status === 'revoked') return row;
    return this.work.run(() => {
      this.statements.revoke.run(nowIso(), id);
      this.events.record('invitation.revoked', `Invitation for ${row.email} revoked`, { entityId: row.entity_id, invitationId: id });
      return this.get(id);
    });
  }

  remove(id: number): void {
    const row = this.get(id);
    this.work.run(() => {
      this.statements.remove.run(id);
      this.events.record('invitation.deleted', `Invitation for ${row.email} deleted`, { entityId: row.entity_id, invitationId: id });
    });
  }

  /** Marks the invitation used; call inside the transaction that creates the agent. */
  consume(row: InvitationRow, agentId: number, attempt: AttemptDetails): void {
    const at = nowIso();
    const changed = this.statements.markUsed.run({ id: row.id, at, agent_id: agentId }).changes;
    if (changed !== 1) throw new ApiError(400, 'ERROR_CORE_ADD', 'This invitation has already been used');
    this.statements.log.run({ invitation_id: row.id, at, outcome: 'used', code: null, message: 'Device enrolled', ...attempt });
  }

  /** Writes a refused attempt to the invitation's log, and notes when its token was last used. */
  logRefusal(row: InvitationRow, code: string, message: string, attempt: AttemptDetails): void {
    const at = nowIso();
    this.work.run(() => {
      this.statements.log.run({ invitation_id: row.id, at, outcome: 'refused', code, message, ...attempt });
      this.statements.touch.run(at, row.id);
      this.events.record('invitation.refused', `Enrollment refused for ${row.email}: ${message}`, { entityId: row.entity_id, invitationId: row.id }, { code, ...attempt });
    });
  }

  logOf(id: number): InvitationLogEntry[] {
    return this.statements.logOf.all(id) as InvitationLogEntry[];
  }

  /** The deeplink data and URLs for an invitation, with today's settings. */
  deeplinkOf(row: InvitationRow): EnrollmentLinks {
    return enrollmentLinks(this.settings, this.links, this.users.byId(row.user_id)!.user_token, row.token);
  }

  /** What the admin API and CLI show of an invitation. */
  view(row: InvitationRow) {
    const user = this.users.byId(row.user_id)!;
    const deeplink = this.deeplinkOf(row);
    const fleetName = (this.statements.fleetName.get(row.fleet_id) as { name: string } | undefined)?.name ?? null;
    return {
      id: row.id,
      entity_id: row.entity_id,
      email: row.email,
      firstname: row.firstname,
      lastname: row.lastname,
      status: statusOf(row),
      created_at: row.created_at,
      expires_at: row.expires_at,
      used_at: row.used_at,
      last_used_at: row.last_used_at,
      revoked_at: row.revoked_at,
      fleet_id: row.fleet_id,
      fleet: fleetName,
      agent: row.agent_id ? ((this.statements.agentSummary.get(row.agent_id) as Record<string, unknown> | undefined) ?? null) : null,
      refused_attempts: (this.statements.refusedCount.get(row.id) as { n: number }).n,
      invitation_token: row.token,
      user_token: user.user_token,
      deeplink: deeplink.url,
      deeplink_data: deeplink.data,
      app_link: deeplink.app_link,
      /** The invitation email: null when none was ever queued. */
      delivery: this.deliveries?.view(row.id) ?? null,
      helpdesk: this.settings.helpdesk(),
    };
  }
}

export type InvitationView = ReturnType<InvitationService['view']>;

export interface AttemptDetails {
  remote_addr: string | null;
  email: string | null;
  serial: string | null;
  uuid: string | null;
}
