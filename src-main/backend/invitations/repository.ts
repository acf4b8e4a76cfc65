import type { Sql, SqlValue } from '../db/sql.ts';
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
  insert(row: NewInvitation): Promise<number>;
  get(id: number): Promise<InvitationRow | undefined>;
  byToken(token: string): Promise<InvitationRow | undefined>;
  /** The newest pending invitation of an address not expired at `now`. */
  pendingFor(email: string, entityId: number, now: string): Promise<InvitationRow | undefined>;
  /**
   * One page and the total matching the filter; `now` decides what counts as expired; `fleets`
   * (fleets/scope.ts fleetScopeParam): null, every fleet; else a JSON array of the fleets listed.
   */
  list(filter: InvitationFilter, now: string, fleets?: string | null): Promise<{ rows: InvitationDetails[]; total: number }>;
  details(ids: number[]): Promise<InvitationDetails[]>;
  mailFacts(id: number): Promise<InvitationMailFacts | undefined>;
  /** Of these ids, those still pending at `now` (and, with `fleets`, in one of those fleets: fleets/scope.ts). */
  pendingAmong(ids: number[], now: string, fleets?: string | null): Promise<number[]>;
  revoke(id: number, at: string): Promise<void>;
  remove(id: number): Promise<void>;
  /** Marks a pending invitation used by an agent; false when it was not pending any more. */
  markUsed(id: number, agentId: number, at: string): Promise<boolean>;
  touch(id: number, at: string): Promise<void>;
  log(entry: NewLogEntry): Promise<void>;
  logOf(id: number): Promise<InvitationLogEntry[]>;
  /** Moves an invitation's expiry (tests age invitations with it). */
  setExpiry(id: number, expiresAt: string): Promise<void>;
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
  private readonly sql: Sql;
  private readonly statements;

  constructor(sql: Sql) {
    this.sql = sql;
    this.statements = {
      insert: `INSERT INTO invitations (entity_id, user_id, fleet_id, email, firstname, lastname, token, status, created_at, expires_at)
         VALUES (@entity_id, @user_id, @fleet_id, @email, @firstname, @lastname, @token, 'pending', @created_at, @expires_at) RETURNING id`,
      byId: `SELECT * FROM invitations WHERE id = ?`,
      byToken: `SELECT * FROM invitations WHERE token = ?`,
      details: `${DETAILS} WHERE i.id IN ${IDS}`,
      mailFacts: `SELECT i.id, i.entity_id, i.email, i.firstname, i.lastname, i.token, i.status, i.expires_at, u.user_token
         FROM invitations i JOIN users u ON u.id = i.user_id WHERE i.id = ?`,
      pendingAmong: `SELECT id FROM invitations WHERE id IN (SELECT value FROM json_each(@ids)) AND status = 'pending' AND expires_at > @now
           AND ${inFleetsSql('fleet_id')} ORDER BY id`,
      revoke: `UPDATE invitations SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'pending'`,
      remove: `DELETE FROM invitations WHERE id = ?`,
      markUsed: `UPDATE invitations SET status = 'done', used_at = @at, last_used_at = @at, agent_id = @agent_id WHERE id = @id AND status = 'pending'`,
      touch: `UPDATE invitations SET last_used_at = ? WHERE id = ?`,
      setExpiry: `UPDATE invitations SET expires_at = ? WHERE id = ?`,
      log: `INSERT INTO invitation_log (invitation_id, at, outcome, code, message, remote_addr, email, serial, uuid)
         VALUES (@invitation_id, @at, @outcome, @code, @message, @remote_addr, @email, @serial, @uuid)`,
      logOf: `SELECT * FROM invitation_log WHERE invitation_id = ? ORDER BY id DESC LIMIT 500`,
      pendingFor: `SELECT * FROM invitations WHERE email = ? COLLATE NOCASE AND entity_id = ? AND status = 'pending' AND expires_at > ? ORDER BY id DESC LIMIT 1`,
    };
  }

  async insert(row: NewInvitation): Promise<number> {
    return Number(await this.sql.value<number>(this.statements.insert, row));
  }

  async get(id: number): Promise<InvitationRow | undefined> {
    return (await this.sql.get(this.statements.byId, [id])) as InvitationRow | undefined;
  }

  async byToken(token: string): Promise<InvitationRow | undefined> {
    return (await this.sql.get(this.statements.byToken, [token])) as InvitationRow | undefined;
  }

  async pendingFor(email: string, entityId: number, now: string): Promise<InvitationRow | undefined> {
    return (await this.sql.get(this.statements.pendingFor, [email, entityId, now])) as InvitationRow | undefined;
  }

  async list(
    filter: InvitationFilter,
    now: string,
    fleets: string | null = null,
  ): Promise<{ rows: InvitationDetails[]; total: number }> {
    const where: string[] = [];
    const params: Record<string, SqlValue> = { now };
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
    // The statements' texts depend only on which filters are set (a handful exist): the driver prepares each once.
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const total = (await this.sql.get<{ n: number }>(`SELECT count(*) AS n FROM invitations i ${clause}`, params))!.n;
    const rows = await this.sql.all<DetailsRecord>(`${DETAILS} ${clause} ORDER BY i.id DESC LIMIT @limit OFFSET @offset`, {
      ...params,
      limit: filter.limit ?? 1000,
      offset: filter.offset ?? 0,
    });
    return { rows: rows.map(detailsOf), total };
  }

  async details(ids: number[]): Promise<InvitationDetails[]> {
    if (ids.length === 0) return [];
    return ((await this.sql.all(this.statements.details, [JSON.stringify(ids)])) as DetailsRecord[]).map(detailsOf);
  }

  async mailFacts(id: number): Promise<InvitationMailFacts | undefined> {
    return (await this.sql.get(this.statements.mailFacts, [id])) as InvitationMailFacts | undefined;
  }

  async pendingAmong(ids: number[], now: string, fleets: string | null = null): Promise<number[]> {
    if (ids.length === 0) return [];
    const rows = (await this.sql.all(this.statements.pendingAmong, { ids: JSON.stringify(ids), now, fleets })) as {
      id: number;
    }[];
    return rows.map((r) => r.id);
  }

  async revoke(id: number, at: string): Promise<void> {
    await this.sql.run(this.statements.revoke, [at, id]);
  }

  async remove(id: number): Promise<void> {
    await this.sql.run(this.statements.remove, [id]);
  }

  async markUsed(id: number, agentId: number, at: string): Promise<boolean> {
    return (await this.sql.run(this.statements.markUsed, { id, at, agent_id: agentId })).changes === 1;
  }

  async touch(id: number, at: string): Promise<void> {
    await this.sql.run(this.statements.touch, [at, id]);
  }

  async log(entry: NewLogEntry): Promise<void> {
    await this.sql.run(this.statements.log, entry);
  }

  async logOf(id: number): Promise<InvitationLogEntry[]> {
    return (await this.sql.all(this.statements.logOf, [id])) as InvitationLogEntry[];
  }

  async setExpiry(id: number, expiresAt: string): Promise<void> {
    await this.sql.run(this.statements.setExpiry, [expiresAt, id]);
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
