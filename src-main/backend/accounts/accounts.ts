import { createHash } from 'node:crypto';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { ApiError } from '../errors.ts';
import { requestContext } from '../audit/context.ts';
import { randomHex } from '../util/tokens.ts';
import type { Account, ApiToken, Role } from '../../../src-shared/contract/accounts.ts';
import { roleAtLeast } from '../../../src-shared/contract/rules.ts';
import { roleWithArticle } from '../../../src-shared/contract/permissions.ts';
import { decoyHash, hashPassword, verifyPassword } from './passwords.ts';
import type { AccountRepository, ListedApiToken, StoredAccount, StoredApiToken } from './repository.ts';
import { TwoFactorService } from './two-factor.ts';

/** The name the data dir's admin token goes by: the owner's token for the CLI and scripts. */
export const DATA_DIR_TOKEN_NAME = 'admin token (data dir)';
/** A token's last use is written at most this often. */
const TOUCH_EVERY_MS = 60 * 1000;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function accountView(row: StoredAccount): Account {
  return {
    id: row.id,
    email: row.email,
    display_name: row.display_name,
    role: row.role,
    has_password: row.password_hash !== null,
    disabled: row.disabled === 1,
    status: row.disabled === 1 ? 'disabled' : row.password_hash === null && row.email !== null ? 'invited' : 'active',
    created_at: row.created_at,
    last_sign_in_at: row.last_sign_in_at,
    fleet_ids: row.fleet_ids,
    two_factor: row.totp_secret !== null,
  };
}

export function tokenView(row: ListedApiToken, now = Date.now()): ApiToken {
  const status = row.revoked_at ? 'revoked' : row.expires_at && Date.parse(row.expires_at) <= now ? 'expired' : 'active';
  return { ...row, status };
}

/** Who an admin request acts for: the account, and the API token when the call carried one. */
export interface Actor {
  account: StoredAccount;
  token: StoredApiToken | null;
}

/** The role a request acts with: a token's own (never above its account's), else the account's. */
export const roleOf = (actor: Actor): Role => actor.token?.role ?? actor.account.role;

/** The roles that may be scoped to fleets; an owner or an admin always sees every fleet. */
export const SCOPABLE_ROLES: readonly Role[] = ['operator', 'observer'];
const scopable = (role: Role) => SCOPABLE_ROLES.includes(role);

/**
 * The fleets a request may see and act on: null, every fleet; else those listed (possibly none).
 * An operator's or observer's account scope applies to its sessions and tokens; a token's own
 * scope narrows it (the two intersect, so a token never sees more than its account, even after
 * the account's scope was narrowed). An owner or admin role (the account's for its own scope, the
 * token's for the request) is never scoped.
 */
export function fleetScopeOf(actor: Actor): number[] | null {
  if (!scopable(roleOf(actor))) return null;
  const own = scopable(actor.account.role) && actor.account.fleet_ids.length > 0 ? actor.account.fleet_ids : null;
  const token = actor.token && actor.token.fleet_ids.length > 0 ? actor.token.fleet_ids : null;
  if (own && token) return token.filter((id) => own.includes(id));
  return token ?? own;
}

/** The fleets a scope may name: those that exist (the fleet service's lookup). */
export interface FleetLookup {
  byId(id: number): Promise<{ id: number; name: string } | undefined>;
}
/** How the actor is named in the history: the person, and the token when one was used. */
export const actorName = (actor: Actor): string => {
  const who = actor.account.display_name || actor.account.email || `account ${actor.account.id}`;
  return actor.token ? `${who} (token "${actor.token.name}")` : who;
};

/**
 * Where the owner's set-up links are kept (the sign_in_tickets table, admin-sessions/sign-in-repository.ts):
 * in the database, so that a link printed by one node works on any node, once.
 */
export interface SetupLinkStore {
  insertTicket(ticketHash: string, accountId: number | null, expiresAt: string): Promise<void>;
  ticketExpiry(ticketHash: string): Promise<string | undefined>;
  takeTicket(ticketHash: string): Promise<{ account_id: number | null; expires_at: string } | undefined>;
}

/** A set-up link is good for this long (a node whose link nears its end prints a new one). */
const SETUP_LINK_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;
/** What the table keeps of a set-up link: never the same string as a sign-in link's hash. */
const setupHash = (token: string) => `setup:${sha256(token)}`;

/**
 * Admins as people: accounts with an email, a display name, a role and an Argon2id password; the
 * owner made on first start; personal API tokens (SHA-256 kept, shown once) beside the data dir's
 * admin token, which is the owner's.
 */
export class AccountService {
  private readonly store: AccountRepository;
  private readonly events: Pick<EventLog, 'record'>;
  private readonly work: UnitOfWork;
  private readonly fleets: FleetLookup | undefined;
  /** This node's set-up link secret while the owner has no password yet, and when it expires. */
  private setupToken: { token: string; expires: number } | null = null;
  private readonly setupLinks: SetupLinkStore;
  /** Two-factor sign-in (TOTP and recovery codes) of these accounts. */
  readonly twoFactor: TwoFactorService;

  constructor(deps: {
    store: AccountRepository;
    events: Pick<EventLog, 'record'>;
    work: UnitOfWork;
    now?: (() => number) | undefined;
    fleets?: FleetLookup;
    setupLinks: SetupLinkStore;
  }) {
    this.store = deps.store;
    this.setupLinks = deps.setupLinks;
    this.events = deps.events;
    this.work = deps.work;
    this.fleets = deps.fleets;
    this.twoFactor = new TwoFactorService(deps);
  }

  /**
   * Resets an admin's two-factor sign-in (a lost phone): its secret and recovery codes are gone;
   * recorded (with the request's actor, in the audit trail). 404 for an unknown account.
   */
  async resetTwoFactor(accountId: number): Promise<void> {
    await this.twoFactor.resetTwoFactor(accountId);
  }

  /**
   * One's own password, the current one given: a new Argon2id hash. The caller ends the account's
   * other sessions (sessions signed in with the old password no longer match it anyway).
   */
  async changePassword(accountId: number, current: string, next: string): Promise<StoredAccount> {
    const account = await this.store.byId(accountId);
    if (!account?.password_hash || !(await verifyPassword(account.password_hash, current))) {
      throw new ApiError(400, 'ERROR_WRONG_PASSWORD', 'The current password is not right.');
    }
    const hash = await hashPassword(next);
    return this.work.run(async () => {
      await this.store.setPasswordHash(accountId, hash);
      const who = account.email ?? account.display_name;
      await this.events.record('account.password_changed', `Password changed for ${who}`, {}, { account_id: accountId });
      return (await this.store.byId(accountId))!;
    });
  }

  /** First start: the owner, named after the machine's user, with no email or password yet. */
  ensureOwner(displayName: string): Promise<StoredAccount> {
    return this.work.run(async () => {
      const existing = await this.store.owner();
      if (existing) return existing;
      const id = await this.store.insert({
        email: null,
        display_name: displayName.trim().slice(0, 100) || 'Owner',
        role: 'owner',
        password_hash: null,
        created_at: nowIso(),
      });
      await this.events.record(
        'account.created',
        `Owner account created for ${displayName}`,
        {},
        { account_id: id, role: 'owner' },
      );
      return (await this.store.byId(id))!;
    });
  }

  async owner(): Promise<StoredAccount> {
    const owner = await this.store.owner();
    if (!owner) throw new Error('No owner account: ensureOwner() runs at start');
    return owner;
  }

  byId(id: number): Promise<StoredAccount | undefined> {
    return this.store.byId(id);
  }

  byEmail(email: string): Promise<StoredAccount | undefined> {
    return this.store.byEmail(email.trim());
  }

  /** The data dir's admin token is the owner's API token (kept as a hash; a new file's token replaces it). */
  async adoptDataDirToken(adminToken: string): Promise<void> {
    await this.work.run(async () => {
      const owner = await this.owner();
      const hash = sha256(adminToken);
      const row = await this.store.dataDirToken(owner.id);
      if (!row) {
        await this.store.insertToken({
          account_id: owner.id,
          name: DATA_DIR_TOKEN_NAME,
          role: 'owner',
          kind: 'data-dir',
          token_hash: hash,
          created_at: nowIso(),
          expires_at: null,
        });
      } else if (row.token_hash !== hash) await this.store.setTokenHash(row.id, hash);
    });
  }

  /** True until the first person has chosen the owner's email and password. */
  async needsSetup(): Promise<boolean> {
    return (await this.owner()).password_hash === null;
  }

  /** The secret of this run's one-time set-up link, while the owner has no password; null after. */
  async setupSecret(): Promise<string | null> {
    if (!(await this.needsSetup())) return null;
    const now = Date.now();
    // A day before this node's link expires it prints a new one (the old one works until its end).
    if (this.setupToken === null || this.setupToken.expires - now < SETUP_LINK_LIFETIME_MS / 7) {
      const token = randomHex(24);
      const expires = now + SETUP_LINK_LIFETIME_MS;
      await this.setupLinks.insertTicket(setupHash(token), (await this.owner()).id, new Date(expires).toISOString());
      this.setupToken = { token, expires };
    }
    return this.setupToken.token;
  }

  /**
   * The set-up link (any node's), used once: the owner's email, name and password; then no link
   * works again. `address`: where the set-up form was sent from (the audit trail records the new
   * owner doing it, from there).
   */
  async completeSetup(
    input: { token: string; email: string; display_name: string; password: string },
    address: string | null = null,
  ): Promise<StoredAccount> {
    const used = () =>
      new ApiError(
        410,
        'ERROR_SETUP_USED',
        'This set-up link was used already or has expired: sign in with the owner’s email and password.',
      );
    const hash = setupHash(input.token);
    const live = async () => {
      const expires = await this.setupLinks.ticketExpiry(hash);
      return expires !== undefined && Date.parse(expires) > Date.now();
    };
    if (!(await this.needsSetup()) || !(await live())) throw used();
    const passwordHash = await hashPassword(input.password);
    const owner = await this.owner();
    const actor = { accountId: owner.id, name: input.display_name.trim(), tokenId: null, tokenName: null, role: 'owner' };
    return requestContext.run({ actor, address, audited: false }, () =>
      this.work.run(async () => {
        // Taken in the transaction (a failure below puts it back): another request, on any node,
        // may have used it while the password was hashed.
        const taken = await this.setupLinks.takeTicket(hash);
        if (!taken || Date.parse(taken.expires_at) <= Date.now() || !(await this.needsSetup())) {
          throw new ApiError(410, 'ERROR_SETUP_USED', 'This set-up link was used already.');
        }
        const email = input.email.trim();
        const other = await this.store.byEmail(email);
        if (other && other.id !== owner.id) throw new ApiError(409, 'ERROR_CONFLICT', `${email} is another admin’s email`);
        // Guarded by the statement itself (only while the owner has no password): whatever the
        // isolation between nodes' transactions, a second set-up never overwrites the first's.
        const set = await this.store.setCredentials(owner.id, {
          email,
          display_name: input.display_name.trim(),
          password_hash: passwordHash,
        });
        if (!set)
          throw new ApiError(
            410,
            'ERROR_SETUP_USED',
            'The owner was set up meanwhile: sign in with the owner’s email and password.',
          );
        this.setupToken = null;
        await this.events.record(
          'account.owner_set_up',
          `Owner account set up for ${email}`,
          {},
          { account_id: owner.id, email },
        );
        return (await this.store.byId(owner.id))!;
      }),
    );
  }

  /** The account these credentials open, or null (wrong email, wrong password, disabled, no password). */
  async checkPassword(email: string, password: string): Promise<StoredAccount | null> {
    const account = await this.store.byEmail(email.trim());
    if (!account?.password_hash) {
      await verifyPassword(await decoyHash(), password);
      return null;
    }
    const good = await verifyPassword(account.password_hash, password);
    return good && account.disabled === 0 ? account : null;
  }

  async signedIn(account: StoredAccount): Promise<void> {
    await this.store.signedIn(account.id, nowIso());
  }

  /** The actor an `Authorization: Bearer` token stands for: live, not revoked, its account enabled. */
  async actorOfToken(bearer: string, now = Date.now()): Promise<Actor | null> {
    const found = await this.store.tokenByHash(sha256(bearer));
    if (!found) return null;
    const { token, account } = found;
    if (token.revoked_at !== null) return null;
    if (token.expires_at !== null && Date.parse(token.expires_at) <= now) return null;
    if (account.disabled === 1) return null;
    if (token.last_used_at === null || now - Date.parse(token.last_used_at) > TOUCH_EVERY_MS) {
      await this.store.tokenUsed(token.id, new Date(now).toISOString());
    }
    return { account, token };
  }

  /**
   * A personal token, its role no higher than its maker's (the token's, when made with one), its
   * fleets within its maker's scope (a scoped maker's token is scoped to the maker's fleets when it
   * names none); shown in the answer only.
   */
  async createToken(
    actor: Actor,
    input: { name: string; role: Role; days?: number | undefined; fleet_ids?: number[] | undefined },
  ): Promise<{ token: string; row: ApiToken }> {
    // A token acts with its own role: it hands out nothing above it, whatever its account may.
    const mine = roleOf(actor);
    if (!roleAtLeast(mine, input.role)) {
      throw new ApiError(403, 'ERROR_FORBIDDEN', `${roleWithArticle(mine)} cannot make a token with the role ${input.role}`);
    }
    const fleetIds = await this.checkScope(input.role, input.fleet_ids ?? [], 'token');
    const makers = fleetScopeOf(actor);
    if (makers !== null) {
      const wider = fleetIds.filter((id) => !makers.includes(id));
      if (wider.length > 0) {
        throw new ApiError(
          403,
          'ERROR_FORBIDDEN',
          `A token’s fleets must be within yours: you are not scoped to ${await this.fleetNames(wider)}`,
        );
      }
    }
    const scope = fleetIds.length > 0 ? fleetIds : (makers ?? []);
    const token = `mdm_${randomHex(32)}`;
    const now = Date.now();
    return this.work.run(async () => {
      const id = await this.store.insertToken({
        account_id: actor.account.id,
        name: input.name.trim(),
        role: input.role,
        kind: 'personal',
        token_hash: sha256(token),
        created_at: new Date(now).toISOString(),
        expires_at: input.days === undefined ? null : new Date(now + input.days * 86_400_000).toISOString(),
      });
      if (scope.length > 0) await this.store.setTokenFleets(id, scope);
      const scoped = scope.length > 0 ? `, scoped to ${await this.fleetNames(scope)}` : '';
      await this.events.record(
        'account.token_created',
        `API token "${input.name.trim()}" (${input.role}${scoped}) created by ${actorName(actor)}`,
        {},
        { token_id: id, role: input.role, days: input.days ?? null, fleet_ids: scope, by: actorName(actor) },
      );
      return { token, row: await this.tokenOf(id) };
    });
  }

  /** The owner sees every token; anyone else their own. */
  async tokens(actor: Actor): Promise<ApiToken[]> {
    const now = Date.now();
    const rows = actor.account.role === 'owner' ? await this.store.tokens() : await this.store.tokens(actor.account.id);
    return rows.map((row) => tokenView(row, now));
  }

  /** Revokes one's own token (the owner: anyone's). The data dir's token is replaced, not revoked. */
  revokeToken(actor: Actor, id: number): Promise<ApiToken> {
    return this.work.run(async () => {
      const row = await this.store.tokenById(id);
      if (!row || (row.account_id !== actor.account.id && actor.account.role !== 'owner')) {
        throw new ApiError(404, 'ERROR_NOT_FOUND', `No API token ${id}`);
      }
      if (row.kind === 'data-dir') {
        throw new ApiError(
          409,
          'ERROR_CONFLICT',
          'The data dir’s admin token cannot be revoked (the CLI uses it): to replace it, stop the server, delete DATA_DIR/admin-token and start again.',
        );
      }
      if (row.revoked_at === null) {
        await this.store.revokeToken(id, nowIso());
        await this.events.record(
          'account.token_revoked',
          `API token "${row.name}" revoked by ${actorName(actor)}`,
          {},
          { token_id: id, by: actorName(actor) },
        );
      }
      return this.tokenOf(id);
    });
  }

  /**
   * Scopes an account to fleets (an empty list: every fleet again). Only an operator or an
   * observer may be scoped; its tokens keep their own scopes, intersected with this one on use.
   */
  setAccountScope(actor: Actor, accountId: number, fleetIds: number[]): Promise<StoredAccount> {
    return this.work.run(async () => {
      const account = await this.store.byId(accountId);
      if (!account) throw new ApiError(404, 'ERROR_NOT_FOUND', `No admin account ${accountId}`);
      const ids = await this.checkScope(account.role, fleetIds, 'account');
      const before = account.fleet_ids;
      await this.store.setAccountFleets(accountId, ids);
      const who = account.display_name || account.email || `account ${accountId}`;
      await this.events.record(
        'account.scope_changed',
        ids.length > 0
          ? `${who} scoped to ${await this.fleetNames(ids)} by ${actorName(actor)}`
          : `${who} sees every fleet again (scope removed by ${actorName(actor)})`,
        {},
        {
          account_id: accountId,
          email: account.email,
          name: who,
          before: { fleet_ids: before },
          after: { fleet_ids: ids },
          by: actorName(actor),
        },
      );
      return (await this.store.byId(accountId))!;
    });
  }

  /** The fleets named, each existing, de-duplicated; none unless the role may be scoped (400). */
  private async checkScope(role: Role, fleetIds: readonly number[], what: 'account' | 'token'): Promise<number[]> {
    const ids = [...new Set(fleetIds)].sort((a, b) => a - b);
    if (ids.length === 0) return ids;
    if (!scopable(role)) {
      throw new ApiError(
        400,
        'ERROR_BAD_REQUEST',
        `An ${role} ${what} cannot be scoped to fleets: only operators and observers can (an ${role} sees every fleet)`,
      );
    }
    const unknown: number[] = [];
    for (const id of ids) if (this.fleets && !(await this.fleets.byId(id))) unknown.push(id);
    if (unknown.length > 0)
      throw new ApiError(400, 'ERROR_UNKNOWN_FLEET', `No fleet ${unknown.map((id) => `#${id}`).join(', ')}`);
    return ids;
  }

  private async fleetNames(ids: readonly number[]): Promise<string> {
    const names: string[] = [];
    for (const id of ids) names.push(`"${(await this.fleets?.byId(id))?.name ?? `#${id}`}"`);
    return names.join(', ');
  }

  private async tokenOf(id: number): Promise<ApiToken> {
    const row = (await this.store.tokens()).find((token) => token.id === id);
    if (!row) throw new ApiError(404, 'ERROR_NOT_FOUND', `No API token ${id}`);
    return tokenView(row);
  }
}
