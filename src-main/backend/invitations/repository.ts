import type { Statement } from 'better-sqlite3';
import type { Db } from '../db/database.ts';
import type { AgentBrief, InvitationFilter, InvitationLogEntry } from '../../../src-shared/contract/index.ts';
import { inFleetsSql } from '../fleets/fleet-repository.ts';

/** A row of invitations, as stored. */
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

export type NewInvitation = Pick<
  InvitationRow,
  'entity_id' | 'user_id' | 'fleet_id' | 'email' | 'firstname' | 'lastname' | 'token' | 'created_at' | 'expires_at'
>;
export type NewLogEntry = Omit<InvitationLogEntry, 'id'> & { invitation_id: number };

/** An invitation with what its views show beside it, read in the same statement. */
export interface InvitationDetails extends InvitationRow {
  user_token: string;
  fleet: string | null;
  agent: AgentBrief | null;
  refused_attempts: number;
}

/** What an invitation's email needs of it, and no more. */
export interface InvitationMailFacts extends Pick<
  InvitationRow,
  'id' | 'entity_id' | 'email' | 'firstname' | 'lastname' | 'token' | 'status' | 'expires_at'
> {
  user_token: string;
}

/** The invitations and invitation_log tables. Times are ISO strings, as stored. */
export interface InvitationRepository {
  insert(row: NewInvitation): number;
  get(id: number): InvitationRow | undefined;
  byToken(token: string): InvitationRow | undefined;
  /** The newest pending invitation of an address not expired at `now`. */
  pendingFor(email: string, entityId: number, now: string): InvitationRow | undefined;
  /**
   * One page and the total matching the filter; `now` decides what counts as expired; `fleets`
   * (fleets/scope.ts fleetScopeParam): null, every fleet; else a JSON array of the fleets listed.
   */
  list(filter: InvitationFilter, now: string, fleets?: string | null): { rows: InvitationDetails[]; total: number };
  details(ids: number[]): InvitationDetails[];
  mailFacts(id: number): InvitationMailFacts | undefined;
  /** Of these ids, those still pending at `now` (and, with `fleets`, in one of those fleets: fleets/scope.ts). */
  pendingAmong(ids: number[], now: string, fleets?: string | null): number[];
  revoke(id: number, at: string): void;
  remove(id: number): void;
  /** Marks a pending invitation used by an agent; false when it was not pending any more. */
  markUsed(id: number, agentId: number, at: string): boolean;
  touch(id: number, at: string): void;
  log(entry: NewLogEntry): void;
  logOf(id: number): InvitationLogEntry[];
  /** Moves an invitation's expiry (tests age invitations with it). */
  setExpiry(id: number, expiresAt: string): void;
}

interface DetailsRecord extends InvitationRow {
  user_token: string;
  fleet: string | null;
  refused_attempts: number;
  agent_name: string | null;
  agent_serial: string | null;
  agent_uuid: string | null;
  agent_type: string | null;
  agent_enroll_status: string | null;
  agent_found: number | null;
}

// Everything a view shows in one statement: its user's token, fleet name, device and refusals.
const DETAILS = `SELECT i.*, u.user_token, f.name AS fleet,
    a.id AS agent_found, a.name AS agent_name, a.serial AS agent_serial, a.uuid AS agent_uuid, a.type AS agent_type, a.enroll_status AS agent_enroll_status,
    (SELECT count(*) FROM invitation_log l WHERE l.invitation_id = i.id AND l.outcome = 'refused') AS refused_attempts
  FROM invitations i
  JOIN users u ON u.id = i.user_id
  LEFT JOIN fleets f ON f.id = i.fleet_id
  LEFT JOIN agents a ON a.id = i.agent_id`;

const IDS = `(SELECT value FROM json_each(?))`;

export class SqliteInvitationRepository implements InvitationRepository {
  private readonly db: Db;
  private readonly statements;
  private readonly listCache = new Map<string, { count: Statement; page: Statement }>();

  constructor(db: Db) {
    this.db = db;
    this.statements = {
      insert: db.prepare(
        `INSERT INTO invitations (entity_id, user_id, fleet_id, email, firstname, lastname, token, status, created_at, expires_at)
         VALUES (@entity_id, @user_id, @fleet_id, @email, @firstname, @lastname, @token, 'pending', @created_at, @expires_at)`,
      ),
      byId: db.prepare(`SELECT * FROM invitations WHERE id = ?`),
      byToken: db.prepare(`SELECT * FROM invitations WHERE token = ?`),
      details: db.prepare(`${DETAILS} WHERE i.id IN ${IDS}`),
      mailFacts: db.prepare(
        `SELECT i.id, i.entity_id, i.email, i.firstname, i.lastname, i.token, i.status, i.expires_at, u.user_token
         FROM invitations i JOIN users u ON u.id = i.user_id WHERE i.id = ?`,
      ),
      pendingAmong: db.prepare(
        `SELECT id FROM invitations WHERE id IN (SELECT value FROM json_each(@ids)) AND status = 'pending' AND expires_at > @now
           AND ${inFleetsSql('fleet_id')} ORDER BY id`,
      ),
      revoke: db.prepare(`UPDATE invitations SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'pending'`),
      remove: db.prepare(`DELETE FROM invitations WHERE id = ?`),
      markUsed: db.prepare(
        `UPDATE invitations SET status = 'done', used_at = @at, last_used_at = @at, agent_id = @agent_id WHERE id = @id AND status = 'pending'`,
      ),
      touch: db.prepare(`UPDATE invitations SET last_used_at = ? WHERE id = ?`),
      setExpiry: db.prepare(`UPDATE invitations SET expires_at = ? WHERE id = ?`),
      log: db.prepare(
        `INSERT INTO invitation_log (invitation_id, at, outcome, code, message, remote_addr, email, serial, uuid)
         VALUES (@invitation_id, @at, @outcome, @code, @message, @remote_addr, @email, @serial, @uuid)`,
      ),
      logOf: db.prepare(`SELECT * FROM invitation_log WHERE invitation_id = ? ORDER BY id DESC LIMIT 500`),
      pendingFor: db.prepare(
        `SELECT * FROM invitations WHERE email = ? COLLATE NOCASE AND entity_id = ? AND status = 'pending' AND expires_at > ? ORDER BY id DESC LIMIT 1`,
      ),
    };
  }

  insert(row: NewInvitation): number {
    return Number(this.statements.insert.run(row).lastInsertRowid);
  }

  get(id: number): InvitationRow | undefined {
    return this.statements.byId.get(id) as InvitationRow | undefined;
  }

  byToken(token: string): InvitationRow | undefined {
    return this.statements.byToken.get(token) as InvitationRow | undefined;
  }

  pendingFor(email: string, entityId: number, now: string): InvitationRow | undefined {
    return this.statements.pendingFor.get(email, entityId, now) as InvitationRow | undefined;
  }

  list(filter: InvitationFilter, now: string, fleets: string | null = null): { rows: InvitationDetails[]; total: number } {
    const where: string[] = [];
    const params: Record<string, unknown> = { now };
    if (fleets !== null) {
      where.push(`i.fleet_id IN (SELECT value FROM json_each(@fleets))`);
      params.fleets = fleets;
    }
    switch (filter.status) {
      case 'pending':
        where.push(`i.status = 'pending' AND i.expires_at > @now`);
        break;
      case 'expired':
        where.push(`i.status = 'pending' AND i.expires_at <= @now`);
        break;
      case 'done':
      case 'revoked':
        where.push(`i.status = @status`);
        params.status = filter.status;
        break;
      case undefined:
        break;
    }
    if (filter.q?.trim()) {
      where.push(`(i.email LIKE @q ESCAPE '\\' OR i.firstname LIKE @q ESCAPE '\\' OR i.lastname LIKE @q ESCAPE '\\')`);
      params.q = `%${filter.q.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    }
    if (filter.fleet_id !== undefined) {
      where.push(`i.fleet_id = @fleet_id`);
      params.fleet_id = filter.fleet_id;
    }
    const { count, page } = this.listStatements(where.length ? `WHERE ${where.join(' AND ')}` : '');
    const total = (count.get(params) as { n: number }).n;
    const rows = page.all({ ...params, limit: filter.limit ?? 1000, offset: filter.offset ?? 0 }) as DetailsRecord[];
    return { rows: rows.map(detailsOf), total };
  }

  /** The two statements of a list, prepared once per combination of filters (a handful exist). */
  private listStatements(clause: string) {
    let statements = this.listCache.get(clause);
    if (!statements) {
      statements = {
        count: this.db.prepare(`SELECT count(*) AS n FROM invitations i ${clause}`),
        page: this.db.prepare(`${DETAILS} ${clause} ORDER BY i.id DESC LIMIT @limit OFFSET @offset`),
      };
      this.listCache.set(clause, statements);
    }
    return statements;
  }

  details(ids: number[]): InvitationDetails[] {
    if (ids.length === 0) return [];
    return (this.statements.details.all(JSON.stringify(ids)) as DetailsRecord[]).map(detailsOf);
  }

  mailFacts(id: number): InvitationMailFacts | undefined {
    return this.statements.mailFacts.get(id) as InvitationMailFacts | undefined;
  }

  pendingAmong(ids: number[], now: string, fleets: string | null = null): number[] {
    if (ids.length === 0) return [];
    const rows = this.statements.pendingAmong.all({ ids: JSON.stringify(ids), now, fleets }) as { id: number }[];
    return rows.map((r) => r.id);
  }

  revoke(id: number, at: string): void {
    this.statements.revoke.run(at, id);
  }

  remove(id: number): void {
    this.statements.remove.run(id);
  }

  markUsed(id: number, agentId: number, at: string): boolean {
    return this.statements.markUsed.run({ id, at, agent_id: agentId }).changes === 1;
  }

  touch(id: number, at: string): void {
    this.statements.touch.run(at, id);
  }

  log(entry: NewLogEntry): void {
    this.statements.log.run(entry);
  }

  logOf(id: number): InvitationLogEntry[] {
    return this.statements.logOf.all(id) as InvitationLogEntry[];
  }

  setExpiry(id: number, expiresAt: string): void {
    this.statements.setExpiry.run(expiresAt, id);
  }
}

function detailsOf(record: DetailsRecord): InvitationDetails {
  const { agent_found, agent_name, agent_serial, agent_uuid, agent_type, agent_enroll_status, ...row } = record;
  const agent =
    agent_found === null
      ? null
      : {
          id: agent_found,
          name: agent_name!,
          serial: agent_serial,
          uuid: agent_uuid,
          type: agent_type!,
          enroll_status: agent_enroll_status!,
        };
  return { ...row, agent };
}
