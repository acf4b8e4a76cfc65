import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';
import { badRequest, itemNotFound, loginFailed, sessionTokenInvalid } from '../http/errors.ts';
import { randomHex } from '../util/tokens.ts';
import type { SessionContext } from './types.ts';
import type { UserRepository, UserRow } from './users.ts';

/** Sessions unused for this long are gone (the spec leaves the lifetime open). */
const SESSION_IDLE_MS = 24 * 60 * 60 * 1000;
/** last_used_at is written at most this often per session, to keep reads cheap. */
const TOUCH_EVERY_MS = 60 * 1000;

interface SessionRow {
  token: string;
  user_id: number;
  active_profile_id: number;
  entity_id: number;
  created_at: string;
  last_used_at: string;
}

export class SessionService {
  private readonly users: UserRepository;
  private readonly statements;

  constructor(db: Db, users: UserRepository) {
    this.users = users;
    this.statements = {
      insert: db.prepare(
        `INSERT INTO sessions (token, user_id, active_profile_id, entity_id, created_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      // Subqueries, not a JOIN: SQLite runs this (every agent request) about 3x faster so.
      get: db.prepare(
        `SELECT s.*, (SELECT kind FROM users WHERE id = s.user_id) AS kind, (SELECT login FROM users WHERE id = s.user_id) AS login
         FROM sessions s WHERE s.token = ?`,
      ),
      touch: db.prepare(`UPDATE sessions SET last_used_at = ? WHERE token = ?`),
      setProfile: db.prepare(`UPDATE sessions SET active_profile_id = ?, entity_id = ? WHERE token = ?`),
      remove: db.prepare(`DELETE FROM sessions WHERE token = ?`),
      removeOfUser: db.prepare(`DELETE FROM sessions WHERE user_id = ?`),
      purge: db.prepare(`DELETE FROM sessions WHERE last_used_at < ?`),
    };
  }

  /** initSession: the user token alone yields a session under the user's default profile. */
  open(userToken: string): { session_token: string; user: UserRow } {
    const user = this.users.byToken(userToken);
    if (!user) throw loginFailed('Incorrect user token');
    const token = randomHex(20);
    const now = nowIso();
    const entityId = this.users.entityOfAssignment(user.id, user.default_profile_id) ?? user.entity_id;
    this.statements.insert.run(token, user.id, user.default_profile_id, entityId, now, now);
    return { session_token: token, user };
  }

  /** Resolves a session token; throws ERROR_SESSION_TOKEN_INVALID for unknown or idle ones. */
  resolve(token: string): SessionContext {
    const row = this.statements.get.get(token) as (SessionRow & { kind: 'person' | 'agent' | null; login: string }) | undefined;
    if (!row || row.kind === null) throw sessionTokenInvalid();
    const lastUsed = Date.parse(row.last_used_at);
    const now = Date.now();
    if (now - lastUsed > SESSION_IDLE_MS) {
      this.statements.remove.run(token);
      throw sessionTokenInvalid();
    }
    if (now - lastUsed > TOUCH_EVERY_MS) this.statements.touch.run(new Date(now).toISOString(), token);
    return {
      token: row.token,
      userId: row.user_id,
      userKind: row.kind,
      login: row.login,
      entityId: row.entity_id,
      activeProfileId: row.active_profile_id,
    };
  }

  /** changeActiveProfile: only to a profile the user holds; 404 otherwise (spec §7). */
  changeProfile(session: SessionContext, profileId: number): void {
    if (!Number.isInteger(profileId) || profileId <= 0) throw badRequest();
    const entityId = this.users.entityOfAssignment(session.userId, profileId);
    if (entityId === undefined) throw itemNotFound();
    this.statements.setProfile.run(profileId, entityId, session.token);
  }

  /** getFullSession: the spec's fields, at the top level and under `session` (GLPI clients). */
  fullSession(session: SessionContext): Record<string, unknown> {
    const user = this.users.byId(session.userId)!;
    const profiles = this.users.profilesOf(user.id);
    const active = profiles.find((p) => p.id === session.activeProfileId) ?? profiles[0]!;
    const fields = {
      valid_id: session.token,
      coreID: user.id,
      corename: user.login,
      corefriendlyname: [user.firstname, user.lastname].filter(Boolean).join(' ') || user.login,
      coreactive_entity: session.entityId,
      core_plugins: { 0: 'mdm' },
      coreactiveprofile: { id: active.id, name: active.name },
      coreprofiles: Object.fromEntries(profiles.map((p) => [String(p.id), { id: p.id, name: p.name }])),
      plugin_mdm_guest_profiles_id: this.users.guestProfile().id,
    };
    // GLPI's names for the same values: the Flyve agents and GLPI's JavaScript client read these.
    const glpi = {
      glpiID: fields.coreID,
      glpiname: fields.corename,
      glpifriendlyname: fields.corefriendlyname,
      glpiactive_entity: fields.coreactive_entity,
      glpi_plugins: { 0: 'flyvemdm' },
      glpiactiveprofile: fields.coreactiveprofile,
      glpiprofiles: fields.coreprofiles,
      plugin_flyvemdm_guest_profiles_id: fields.plugin_mdm_guest_profiles_id,
    };
    const all = { ...fields, ...glpi };
    return { ...all, session: all };
  }

  close(token: string): void {
    this.statements.remove.run(token);
  }

  closeAllOf(userId: number): void {
    this.statements.removeOfUser.run(userId);
  }

  purgeIdle(): number {
    return this.statements.purge.run(new Date(Date.now() - SESSION_IDLE_MS).toISOString()).changes;
  }
}
