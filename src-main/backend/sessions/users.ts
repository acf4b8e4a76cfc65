import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import { randomHex } from '../util/tokens.ts';

export interface UserRow {
  id: number;
  login: string;
  kind: 'person' | 'agent';
  email: string | null;
  firstname: string | null;
  lastname: string | null;
  user_token: string;
  default_profile_id: number;
  entity_id: number;
  created_at: string;
}

export interface ProfileRow {
  id: number;
  name: string;
  is_guest: number;
  is_default: number;
}

/** People and agent accounts, their tokens and profile assignments. */
export class UserRepository {
  private readonly statements;

  constructor(db: Db) {
    this.statements = {
      byId: db.prepare(`SELECT * FROM users WHERE id = ?`),
      byToken: db.prepare(`SELECT * FROM users WHERE user_token = ?`),
      byLogin: db.prepare(`SELECT * FROM users WHERE login = ? COLLATE NOCASE`),
      insert: db.prepare(
        `INSERT INTO users (login, kind, email, firstname, lastname, user_token, default_profile_id, entity_id, created_at)
         VALUES (@login, @kind, @email, @firstname, @lastname, @user_token, @default_profile_id, @entity_id, @created_at)`,
      ),
      updateNames: db.prepare(
        `UPDATE users SET firstname = coalesce(?, firstname), lastname = coalesce(?, lastname) WHERE id = ?`,
      ),
      setToken: db.prepare(`UPDATE users SET user_token = ? WHERE id = ?`),
      assign: db.prepare(
        `INSERT OR IGNORE INTO profile_assignments (user_id, profile_id, entity_id) VALUES (?, ?, ?)`,
      ),
      profilesOf: db.prepare(
        `SELECT DISTINCT p.* FROM profiles p JOIN profile_assignments a ON a.profile_id = p.id WHERE a.user_id = ? ORDER BY p.id`,
      ),
      assignment: db.prepare(
        `SELECT entity_id FROM profile_assignments WHERE user_id = ? AND profile_id = ? ORDER BY entity_id LIMIT 1`,
      ),
      guestProfile: db.prepare(`SELECT * FROM profiles WHERE is_guest = 1 ORDER BY id LIMIT 1`),
      defaultProfile: db.prepare(`SELECT * FROM profiles WHERE is_default = 1 ORDER BY id LIMIT 1`),
      agentProfile: db.prepare(`SELECT * FROM profiles WHERE name = 'MDM agent'`),
      remove: db.prepare(`DELETE FROM users WHERE id = ?`),
    };
  }

  byId(id: number): UserRow | undefined {
    return this.statements.byId.get(id) as UserRow | undefined;
  }

  byToken(token: string): UserRow | undefined {
    return this.statements.byToken.get(token) as UserRow | undefined;
  }

  byLogin(login: string): UserRow | undefined {
    return this.statements.byLogin.get(login) as UserRow | undefined;
  }

  guestProfile(): ProfileRow {
    return this.statements.guestProfile.get() as ProfileRow;
  }

  profilesOf(userId: number): ProfileRow[] {
    return this.statements.profilesOf.all(userId) as ProfileRow[];
  }

  /** The entity in which the user holds `profileId`, if they hold it at all. */
  entityOfAssignment(userId: number, profileId: number): number | undefined {
    const row = this.statements.assignment.get(userId, profileId) as { entity_id: number } | undefined;
    return row?.entity_id;
  }

  /**
   * The invited person: login = email (case-insensitive). A new person gets the default profile
   * (active at login, so the agent has to switch) and the guest profile in the entity.
   * Call inside a transaction.
   */
  findOrCreatePerson(email: string, entityId: number, names: { firstname?: string | null; lastname?: string | null }): UserRow {
    const existing = this.byLogin(email);
    if (existing) {
      this.statements.updateNames.run(names.firstname ?? null, names.lastname ?? null, existing.id);
      this.statements.assign.run(existing.id, this.guestProfile().id, entityId);
      return this.byId(existing.id)!;
    }
    const defaultProfile = this.statements.defaultProfile.get() as ProfileRow;
    const id = this.insert({
      login: email,
      kind: 'person',
      email,
      firstname: names.firstname ?? null,
      lastname: names.lastname ?? null,
      default_profile_id: defaultProfile.id,
      entity_id: entityId,
    });
    this.statements.assign.run(id, defaultProfile.id, entityId);
    this.statements.assign.run(id, this.guestProfile().id, entityId);
    return this.byId(id)!;
  }

  /** The account whose user token becomes the agent's api_token. Call inside a transaction. */
  createAgentAccount(entityId: number, label: string): UserRow {
    const profile = this.statements.agentProfile.get() as ProfileRow;
    const id = this.insert({
      login: `agent:${label}:${randomHex(6)}`,
      kind: 'agent',
      email: null,
      firstname: null,
      lastname: null,
      default_profile_id: profile.id,
      entity_id: entityId,
    });
    this.statements.assign.run(id, profile.id, entityId);
    return this.byId(id)!;
  }

  /** Draws a new user token, so whatever held the old one loses access. */
  rotateToken(userId: number): string {
    const token = randomHex(20);
    this.statements.setToken.run(token, userId);
    return token;
  }

  remove(userId: number): void {
    this.statements.remove.run(userId);
  }

  private insert(user: Omit<UserRow, 'id' | 'user_token' | 'created_at'>): number {
    const result = this.statements.insert.run({ ...user, user_token: randomHex(20), created_at: nowIso() });
    return Number(result.lastInsertRowid);
  }
}
