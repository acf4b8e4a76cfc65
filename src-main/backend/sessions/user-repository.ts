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

/** Logins of enrollment codes' accounts (an email never holds a ':'). */
export const CODE_LOGIN_PREFIX = 'code:';

/**
 * Whether the account belongs to an enrollment code: its token is printed for everyone, so limits
 * meant for one person's token apply per session instead.
 */
export function isSharedAccount(user: { login: string }): boolean {
  return user.login.startsWith(CODE_LOGIN_PREFIX);
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
      setDefaultProfile: db.prepare(`UPDATE users SET default_profile_id = ? WHERE id = ?`),
      assign: db.prepare(`INSERT OR IGNORE INTO profile_assignments (user_id, profile_id, entity_id) VALUES (?, ?, ?)`),
      // Plain lookups: SQLite runs a JOIN, DISTINCT or ORDER BY … LIMIT here several times slower
      // than the index lookup itself, and a user holds one to three assignments.
      unassign: db.prepare(`DELETE FROM profile_assignments WHERE user_id = ? AND profile_id = ?`),
      assignmentsOf: db.prepare(`SELECT profile_id, entity_id FROM profile_assignments WHERE user_id = ?`),
      profiles: db.prepare(`SELECT * FROM profiles ORDER BY id`),
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

  /**
   * The profiles (seeded by the migrations, never changed at run time), read once: every agent
   * request asks for the guest profile, some more than once.
   */
  private profileCache: { byId: Map<number, ProfileRow>; guest: ProfileRow; default: ProfileRow; agent: ProfileRow } | null =
    null;

  private profiles(): NonNullable<UserRepository['profileCache']> {
    if (this.profileCache) return this.profileCache;
    const rows = this.statements.profiles.all() as ProfileRow[];
    const find = (what: string, test: (row: ProfileRow) => boolean) => {
      const row = rows.find(test);
      if (!row) throw new Error(`the database has no ${what} profile`);
      return row;
    };
    this.profileCache = {
      byId: new Map(rows.map((row) => [row.id, row])),
      guest: find('guest', (row) => row.is_guest === 1),
      default: find('default', (row) => row.is_default === 1),
      agent: find('"MDM agent"', (row) => row.name === 'MDM agent'),
    };
    return this.profileCache;
  }

  guestProfile(): ProfileRow {
    return this.profiles().guest;
  }

  profilesOf(userId: number): ProfileRow[] {
    const ids = [...new Set(this.assignmentsOf(userId).map((a) => a.profile_id))].sort((a, b) => a - b);
    return ids.map((id) => this.profiles().byId.get(id)).filter((row): row is ProfileRow => row !== undefined);
  }

  /** The entity in which the user holds `profileId`, if they hold it at all (the lowest id if several). */
  entityOfAssignment(userId: number, profileId: number): number | undefined {
    let entityId: number | undefined;
    for (const a of this.assignmentsOf(userId))
      if (a.profile_id === profileId && (entityId === undefined || a.entity_id < entityId)) entityId = a.entity_id;
    return entityId;
  }

  private assignmentsOf(userId: number): { profile_id: number; entity_id: number }[] {
    return this.statements.assignmentsOf.all(userId) as { profile_id: number; entity_id: number }[];
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
    const defaultProfile = this.profiles().default;
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

  /**
   * The account an enrollment code's deeplink carries: it opens sessions under the default profile
   * (so the agent switches to guest, as for a person) and owns no device. Call inside a transaction.
   */
  createCodeAccount(entityId: number, label: string): UserRow {
    const defaultProfile = this.profiles().default;
    const id = this.insert({
      login: `${CODE_LOGIN_PREFIX}${randomHex(8)}`,
      kind: 'person',
      email: null,
      firstname: label.slice(0, 100),
      lastname: null,
      default_profile_id: defaultProfile.id,
      entity_id: entityId,
    });
    this.statements.assign.run(id, defaultProfile.id, entityId);
    this.statements.assign.run(id, this.guestProfile().id, entityId);
    return this.byId(id)!;
  }

  /** The account whose user token becomes the agent's api_token. Call inside a transaction. */
  createAgentAccount(entityId: number, label: string): UserRow {
    const profile = this.profiles().agent;
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

  /** The profile the user's sessions open under. */
  setDefaultProfile(userId: number, profileId: number): void {
    this.statements.setDefaultProfile.run(profileId, userId);
  }

  /** Withdraws `profileId` from the user, in every entity. */
  unassign(userId: number, profileId: number): void {
    this.statements.unassign.run(userId, profileId);
  }

  remove(userId: number): void {
    this.statements.remove.run(userId);
  }

  private insert(user: Omit<UserRow, 'id' | 'user_token' | 'created_at'>): number {
    const result = this.statements.insert.run({ ...user, user_token: randomHex(20), created_at: nowIso() });
    return Number(result.lastInsertRowid);
  }
}
