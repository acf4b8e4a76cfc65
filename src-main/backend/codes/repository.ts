import type { Sql } from '../db/sql.ts';
import type { CodeApproval, CodeLogEntry } from '../../../src-shared/contract/index.ts';
import { inFleetsSql } from '../fleets/fleet-repository.ts';

/** A row of enrollment_codes, as stored. */
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

export type NewCode = Pick<
  CodeRow,
  | 'entity_id'
  | 'fleet_id'
  | 'account_user_id'
  | 'name'
  | 'token'
  | 'domains'
  | 'max_uses'
  | 'approval'
  | 'created_at'
  | 'expires_at'
>;

export interface NewCodeLogEntry {
  code_id: number;
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
  session_hash: string | null;
}

/** A code with what its view shows beside it, read in the same statement. */
export interface CodeDetails extends CodeRow {
  user_token: string;
  fleet: string | null;
  refused_attempts: number;
  pending_approval: number;
}

/** The enrollment_codes and enrollment_code_log tables. Times are ISO strings, as stored. */
export interface CodeRepository {
  insert(row: NewCode): Promise<number>;
  get(id: number): Promise<CodeRow | undefined>;
  byToken(token: string): Promise<CodeRow | undefined>;
  isAccount(userId: number): Promise<boolean>;
  /**
   * Newest first, or only these ids; `fleets` (fleets/scope.ts fleetScopeParam): null, every
   * fleet; else a JSON array of the fleets whose codes are listed.
   */
  details(ids?: number[], fleets?: string | null): Promise<CodeDetails[]>;
  revoke(id: number, at: string): Promise<void>;
  rotate(id: number, token: string, at: string): Promise<void>;
  /** Counts one use, atomically, unless the code is revoked, expired or used up at `at`; false then. */
  use(id: number, at: string): Promise<boolean>;
  touch(id: number, at: string): Promise<void>;
  log(entry: NewCodeLogEntry): Promise<void>;
  logOf(id: number): Promise<CodeLogEntry[]>;
  /** The session hash of an agent's latest enrollment with a code. */
  lastUseSession(agentId: number): Promise<string | null | undefined>;
  /** Moves a code's expiry (tests age codes with it). */
  setExpiry(id: number, expiresAt: string | null): Promise<void>;
}

const DETAILS = `SELECT c.*, u.user_token, f.name AS fleet,
    (SELECT count(*) FROM enrollment_code_log l WHERE l.code_id = c.id AND l.outcome = 'refused') AS refused_attempts,
    (SELECT count(*) FROM agents a WHERE a.enrollment_code_id = c.id AND a.enroll_status = 'pending_approval') AS pending_approval
  FROM enrollment_codes c
  JOIN users u ON u.id = c.account_user_id
  LEFT JOIN fleets f ON f.id = c.fleet_id`;

export class SqliteCodeRepository implements CodeRepository {
  private readonly sql: Sql;
  private readonly statements;

  constructor(sql: Sql) {
    this.sql = sql;
    this.statements = {
      insert: `INSERT INTO enrollment_codes (entity_id, fleet_id, account_user_id, name, token, domains, max_uses, approval, created_at, expires_at)
         VALUES (@entity_id, @fleet_id, @account_user_id, @name, @token, @domains, @max_uses, @approval, @created_at, @expires_at) RETURNING id`,
      byId: `SELECT * FROM enrollment_codes WHERE id = ?`,
      byToken: `SELECT * FROM enrollment_codes WHERE token = ?`,
      byAccount: `SELECT id FROM enrollment_codes WHERE account_user_id = ?`,
      all: `${DETAILS} WHERE ${inFleetsSql('c.fleet_id')} ORDER BY c.id DESC`,
      some: `${DETAILS} WHERE c.id IN (SELECT value FROM json_each(?)) ORDER BY c.id DESC`,
      revoke: `UPDATE enrollment_codes SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`,
      rotate: `UPDATE enrollment_codes SET token = ?, rotated_at = ? WHERE id = ?`,
      // The one place a use is counted: atomic, so concurrent enrollments never pass max_uses.
      use: `UPDATE enrollment_codes SET uses = uses + 1, last_used_at = @now
         WHERE id = @id AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > @now) AND (max_uses IS NULL OR uses < max_uses)`,
      touch: `UPDATE enrollment_codes SET last_used_at = ? WHERE id = ?`,
      setExpiry: `UPDATE enrollment_codes SET expires_at = ? WHERE id = ?`,
      log: `INSERT INTO enrollment_code_log (code_id, at, outcome, code, message, remote_addr, email, serial, uuid, user_id, agent_id, session_hash)
         VALUES (@code_id, @at, @outcome, @code, @message, @remote_addr, @email, @serial, @uuid, @user_id, @agent_id, @session_hash)`,
      logOf: `SELECT l.id, l.at, l.outcome, l.code, l.message, l.remote_addr, l.email, l.serial, l.uuid, l.user_id, l.agent_id,
                a.name AS agent_name, a.enroll_status
         FROM enrollment_code_log l LEFT JOIN agents a ON a.id = l.agent_id
         WHERE l.code_id = ? ORDER BY l.id DESC LIMIT 1000`,
      lastUse: `SELECT session_hash FROM enrollment_code_log WHERE agent_id = ? AND outcome = 'used' ORDER BY id DESC LIMIT 1`,
    };
  }

  async insert(row: NewCode): Promise<number> {
    return Number(await this.sql.value<number>(this.statements.insert, row));
  }

  async get(id: number): Promise<CodeRow | undefined> {
    return (await this.sql.get(this.statements.byId, [id])) as CodeRow | undefined;
  }

  async byToken(token: string): Promise<CodeRow | undefined> {
    return (await this.sql.get(this.statements.byToken, [token])) as CodeRow | undefined;
  }

  async isAccount(userId: number): Promise<boolean> {
    return (await this.sql.get(this.statements.byAccount, [userId])) !== undefined;
  }

  async details(ids?: number[], fleets: string | null = null): Promise<CodeDetails[]> {
    if (ids?.length === 0) return [];
    return (
      ids ? await this.sql.all(this.statements.some, [JSON.stringify(ids)]) : await this.sql.all(this.statements.all, { fleets })
    ) as CodeDetails[];
  }

  async revoke(id: number, at: string): Promise<void> {
    await this.sql.run(this.statements.revoke, [at, id]);
  }

  async rotate(id: number, token: string, at: string): Promise<void> {
    await this.sql.run(this.statements.rotate, [token, at, id]);
  }

  async use(id: number, at: string): Promise<boolean> {
    return (await this.sql.run(this.statements.use, { id, now: at })).changes === 1;
  }

  async touch(id: number, at: string): Promise<void> {
    await this.sql.run(this.statements.touch, [at, id]);
  }

  async log(entry: NewCodeLogEntry): Promise<void> {
    await this.sql.run(this.statements.log, { ...entry });
  }

  async logOf(id: number): Promise<CodeLogEntry[]> {
    return (await this.sql.all(this.statements.logOf, [id])) as CodeLogEntry[];
  }

  async lastUseSession(agentId: number): Promise<string | null | undefined> {
    return ((await this.sql.get(this.statements.lastUse, [agentId])) as { session_hash: string | null } | undefined)
      ?.session_hash;
  }

  async setExpiry(id: number, expiresAt: string | null): Promise<void> {
    await this.sql.run(this.statements.setExpiry, [expiresAt, id]);
  }
}
