import type { Sql } from '../db/sql.ts';
import { dialect } from '../db/dialect.ts';
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
  private readonly sql: Sql;
  private readonly statements;

  constructor(sql: Sql) {
    this.sql = sql;
    const d = dialect(sql.engine);
    this.statements = {
      byId: `SELECT * FROM users WHERE id = ?`,
      byToken: `SELECT * FROM users WHERE user_token = ?`,
      byLogin: `SELECT * FROM users WHERE ${d.equalsIgnoringCase('login', '?')}`,
      insert: `INSERT INTO users (login, kind, email, firstname, lastname, user_token, default_profile_id, entity_id, created_at)
         VALUES (@login, @kind, @email, @firstname, @lastname, @user_token, @default_profile_id, @entity_id, @created_at) RETURNING id`,
      updateNames: `UPDATE users SET firstname = coalesce(?, firstname), lastname = coalesce(?, lastname) WHERE id = ?`,
      setToken: `UPDATE users SET user_token = ? WHERE id = ?`,
      setDefaultProfile: `UPDATE users SET default_profile_id = ? WHERE id = ?`,
      assign: `INSERT INTO profile_assignments (user_id, profile_id, entity_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
      // Plain lookups: SQLite runs a JOIN, DISTINCT or ORDER BY … LIMIT here several times slower
      // than the index lookup itself, and a user holds one to three assignments.
      unassign: `DELETE FROM profile_assignments WHERE user_id = ? AND profile_id = ?`,
      assignmentsOf: `SELECT profile_id, entity_id FROM profile_assignments WHERE user_id = ?`,
      profiles: `SELECT * FROM profiles ORDER BY id`,
      remove: `DELETE FROM users WHERE id = ?`,
    };
  }

  async byId(id: number): Promise<UserRow | undefined> {
    return (await this.sql.get(this.statements.byId, [id])) as UserRow | undefined;
  }

  async byToken(token: string): Promise<UserRow | undefined> {
    return (await this.sql.get(this.statements.byToken, [token])) as UserRow | undefined;
  }

  async byLogin(login: string): Promise<UserRow | undefined> {
    return (await this.sql.get(this.statements.byLogin, [login])) as UserRow | undefined;
  }

  /**
   * The profiles (seeded by the migrations, never changed at run time), read once: every agent
   * request asks for the guest profile, some more than once.
   */
  private profileCache: { byId: Map<number, ProfileRow>; guest: ProfileRow; default: ProfileRow; agent: ProfileRow } | null =
    null;

  private async profiles(): Promise<NonNullable<UserRepository['profileCache']>> {
    if (this.profileCache) return this.profileCache;
    const rows = (await this.sql.all(this.statements.profiles)) as ProfileRow[];
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

  async guestProfile(): Promise<ProfileRow> {
    return (await this.profiles()).guest;
  }

  async profilesOf(userId: number): Promise<ProfileRow[]> {
    const ids = [...new Set((await this.assignmentsOf(userId)).map((a) => a.profile_id))].sort((a, b) => a - b);
    const profiles = await this.profiles();
    return ids.map((id) => profiles.byId.get(id)).filter((row): row is ProfileRow => row !== undefined);
  }

  /** The entity in which the user holds `profileId`, if they hold it at all (the lowest id if several). */
  async entityOfAssignment(userId: number, profileId: number): Promise<number | undefined> {
    let entityId: number | undefined;
    for (const a of await this.assignmentsOf(userId))
      if (a.profile_id === profileId && (entityId === undefined || a.entity_id < entityId)) entityId = a.entity_id;
    return entityId;
  }

  private async assignmentsOf(userId: number): Promise<{ profile_id: number; entity_id: number }[]> {
    return (await this.sql.all(this.statements.assignmentsOf, [userId])) as { profile_id: number; entity_id: number }[];
  }

  /**
   * The invited person: login = email (case-insensitive). A new person gets the default profile
   * (active at login, so the agent has to switch) and the guest profile in the entity.
   * Call inside a transaction.
   */
  async findOrCreatePerson(
    email: string,
    entityId: number,
    names: { firstname?: string | null; lastname?: string | null },
  ): Promise<UserRow> {
    const existing = await this.byLogin(email);
    if (existing) {
      await this.sql.run(this.statements.updateNames, [names.firstname ?? null, names.lastname ?? null, existing.id]);
      await this.sql.run(this.statements.assign, [existing.id, (await this.guestProfile()).id, entityId]);
      return (await this.byId(existing.id))!;
    }
    const defaultProfile = (await this.profiles()).default;
    const id = await this.insert({
      login: email,
      kind: 'person',
      email,
      firstname: names.firstname ?? null,
      lastname: names.lastname ?? null,
      default_profile_id: defaultProfile.id,
      entity_id: entityId,
    });
    await this.sql.run(this.statements.assign, [id, defaultProfile.id, entityId]);
    await this.sql.run(this.statements.assign, [id, (await this.guestProfile()).id, entityId]);
    return (await this.byId(id))!;
  }

  /**
   * The account an enrollment code's deeplink carries: it opens sessions under the default profile
   * (so the agent switches to guest, as for a person) and owns no device. Call inside a transaction.
   */
  async createCodeAccount(entityId: number, label: string): Promise<UserRow> {
    const defaultProfile = (await this.profiles()).default;
    const id = await this.insert({
      login: `${CODE_LOGIN_PREFIX}${randomHex(8)}`,
      kind: 'person',
      email: null,
      firstname: label.slice(0, 100),
      lastname: null,
      default_profile_id: defaultProfile.id,
      entity_id: entityId,
    });
    await this.sql.run(this.statements.assign, [id, defaultProfile.id, entityId]);
    await this.sql.run(this.statements.assign, [id, (await this.guestProfile()).id, entityId]);
    return (await this.byId(id))!;
  }

  /** The account whose user token becomes the agent's api_token. Call inside a transaction. */
  async createAgentAccount(entityId: number, label: string): Promise<UserRow> {
    const profile = (await this.profiles()).agent;
    // The row as inserted (every column is given): an enrollment does not read it back.
    const row = await this.insertRow({
      login: `agent:${label}:${randomHex(6)}`,
      kind: 'agent',
      email: null,
      firstname: null,
      lastname: null,
      default_profile_id: profile.id,
      entity_id: entityId,
    });
    await this.sql.run(this.statements.assign, [row.id, profile.id, entityId]);
    return row;
  }

  /** Draws a new user token, so whatever held the old one loses access. */
  async rotateToken(userId: number): Promise<string> {
    const token = randomHex(20);
    await this.sql.run(this.statements.setToken, [token, userId]);
    return token;
  }

  /** The profile the user's sessions open under. */
  async setDefaultProfile(userId: number, profileId: number): Promise<void> {
    await this.sql.run(this.statements.setDefaultProfile, [profileId, userId]);
  }

  /** Withdraws `profileId` from the user, in every entity. */
  async unassign(userId: number, profileId: number): Promise<void> {
    await this.sql.run(this.statements.unassign, [userId, profileId]);
  }

  async remove(userId: number): Promise<void> {
    await this.sql.run(this.statements.remove, [userId]);
  }

  private async insert(user: Omit<UserRow, 'id' | 'user_token' | 'created_at'>): Promise<number> {
    return (await this.insertRow(user)).id;
  }

  private async insertRow(user: Omit<UserRow, 'id' | 'user_token' | 'created_at'>): Promise<UserRow> {
    const row = { ...user, user_token: randomHex(20), created_at: nowIso() };
    return { id: Number(await this.sql.value<number>(this.statements.insert, row)), ...row };
  }
}
