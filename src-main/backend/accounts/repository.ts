import type { Db } from '../db/database.ts';
import type { Role } from '../../../src-shared/contract/accounts.ts';

export interface StoredAccount {
  id: number;
  email: string | null;
  display_name: string;
  role: Role;
  password_hash: string | null;
  disabled: 0 | 1;
  created_at: string;
  last_sign_in_at: string | null;
  /** The fleets an operator or observer is scoped to (account_fleets); empty: every fleet. */
  fleet_ids: number[];
  /** The confirmed TOTP secret (base32): two-factor is on while it is set. Never shown after enrolment. */
  totp_secret: string | null;
  /** A secret shown for enrolment, not confirmed by a code yet. */
  totp_pending_secret: string | null;
  totp_enabled_at: string | null;
  /** The last TOTP time step accepted: a code is used once. */
  totp_last_step: number | null;
}

export interface StoredApiToken {
  id: number;
  account_id: number;
  name: string;
  role: Role;
  kind: 'personal' | 'data-dir';
  token_hash: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The fleets the token is scoped to (token_fleets), within its account's; empty: its account's scope. */
  fleet_ids: number[];
}

/** A row as read: its fleets as a JSON array. */
type Raw<T> = Omit<T, 'fleet_ids'> & { fleet_ids: string };
/** An account's columns beside a token's, prefixed so the two rows' names do not collide. */
type AccountColumns = { [K in Exclude<keyof Raw<StoredAccount>, 'id'> as `a_${K}`]: Raw<StoredAccount>[K] };

const ids = (json: string | null | undefined): number[] => (json ? (JSON.parse(json) as number[]) : []);
function parsed<T extends { fleet_ids: number[] }>(row: Raw<T> | undefined): T | undefined {
  return row ? ({ ...row, fleet_ids: ids(row.fleet_ids) } as unknown as T) : undefined;
}
const ACCOUNT_FLEETS = `(SELECT json_group_array(fleet_id) FROM (SELECT fleet_id FROM account_fleets WHERE account_id = a.id ORDER BY fleet_id))`;
const TOKEN_FLEETS = `(SELECT json_group_array(fleet_id) FROM (SELECT fleet_id FROM token_fleets WHERE token_id = t.id ORDER BY fleet_id))`;
const ACCOUNT = `SELECT a.*, ${ACCOUNT_FLEETS} AS fleet_ids FROM admin_accounts a`;
const TOKEN = `SELECT t.*, ${TOKEN_FLEETS} AS fleet_ids FROM api_tokens t`;

/** A token as listed, with its account's name. */
export type ListedApiToken = Omit<StoredApiToken, 'token_hash'> & { account_name: string };

/** Who a fleet scopes: the accounts and the live tokens naming it (a scoped fleet is not deleted). */
export interface FleetScopedBy {
  accounts: { id: number; name: string }[];
  tokens: { id: number; name: string }[];
}

/** What a new account is made with (two-factor starts off). */
export type NewAccount = Pick<StoredAccount, 'email' | 'display_name' | 'role' | 'password_hash' | 'created_at'>;

/** The admin_accounts, api_tokens and admin_recovery_codes tables. */
export interface AccountRepository {
  count(): number;
  byId(id: number): StoredAccount | undefined;
  byEmail(email: string): StoredAccount | undefined;
  owner(): StoredAccount | undefined;
  insert(account: NewAccount): number;
  /** Replaces an account's fleet scope (empty: every fleet). */
  setAccountFleets(id: number, fleetIds: readonly number[]): void;
  /** Replaces a token's fleet scope (empty: its account's). */
  setTokenFleets(id: number, fleetIds: readonly number[]): void;
  /** The accounts and unrevoked tokens scoped to this fleet. */
  scopedBy(fleetId: number): FleetScopedBy;
  setCredentials(id: number, fields: { email: string; display_name: string; password_hash: string }): void;
  signedIn(id: number, at: string): void;
  setPasswordHash(id: number, passwordHash: string): void;

  /** Two-factor: the secret being enrolled (null: none). */
  setPendingTotp(id: number, secret: string | null): void;
  /** Turns two-factor on with the pending secret confirmed at `step`, and its recovery codes (hashes). */
  enableTotp(id: number, secret: string, at: string, step: number, recoveryHashes: string[]): void;
  /** Takes TOTP time step `step` if it is later than the last one taken: false for a code used already. */
  takeTotpStep(id: number, step: number): boolean;
  /** Two-factor off: secret, pending secret and recovery codes gone. */
  clearTotp(id: number): void;
  /** Marks the unused recovery code with this hash used: false when there is none. */
  useRecoveryCode(id: number, hash: string, at: string): boolean;
  recoveryCodesLeft(id: number): number;
  /** Every account, oldest first. */
  list(): StoredAccount[];
  setRole(id: number, role: Role): void;
  setDisabled(id: number, disabled: boolean): void;
  /** An invited admin's password (and name, when they chose one). */
  setPassword(id: number, fields: { password_hash: string; display_name: string }): void;
  /** Deletes the account; its tokens and invitations go with it. */
  remove(id: number): void;
  /** Owners not disabled. */
  enabledOwners(): number;

  /** The token with this hash and its account, read in one statement (it runs on every bearer request). */
  tokenByHash(hash: string): { token: StoredApiToken; account: StoredAccount } | undefined;
  tokenById(id: number): StoredApiToken | undefined;
  dataDirToken(accountId: number): StoredApiToken | undefined;
  insertToken(token: Omit<StoredApiToken, 'id' | 'last_used_at' | 'revoked_at' | 'fleet_ids'>): number;
  setTokenHash(id: number, hash: string): void;
  tokenUsed(id: number, at: string): void;
  revokeToken(id: number, at: string): void;
  /** Every token, or those of one account; newest first. */
  tokens(accountId?: number): ListedApiToken[];
}

export class SqliteAccountRepository implements AccountRepository {
  private readonly s;

  constructor(db: Db) {
    const listed = `SELECT t.id, t.account_id, t.name, t.role, t.kind, t.created_at, t.expires_at, t.last_used_at, t.revoked_at,
        coalesce(a.display_name, a.email) AS account_name, ${TOKEN_FLEETS} AS fleet_ids
      FROM api_tokens t JOIN admin_accounts a ON a.id = t.account_id`;
    this.s = {
      count: db.prepare(`SELECT count(*) FROM admin_accounts`).pluck(),
      byId: db.prepare(`${ACCOUNT} WHERE a.id = ?`),
      byEmail: db.prepare(`${ACCOUNT} WHERE a.email = ? COLLATE NOCASE`),
      owner: db.prepare(`${ACCOUNT} WHERE a.role = 'owner' ORDER BY a.id LIMIT 1`),
      clearAccountFleets: db.prepare(`DELETE FROM account_fleets WHERE account_id = ?`),
      addAccountFleet: db.prepare(`INSERT OR IGNORE INTO account_fleets (account_id, fleet_id) VALUES (?, ?)`),
      clearTokenFleets: db.prepare(`DELETE FROM token_fleets WHERE token_id = ?`),
      addTokenFleet: db.prepare(`INSERT OR IGNORE INTO token_fleets (token_id, fleet_id) VALUES (?, ?)`),
      accountsOfFleet: db.prepare(
        `SELECT a.id, coalesce(nullif(a.display_name, ''), a.email, 'account ' || a.id) AS name
         FROM account_fleets s JOIN admin_accounts a ON a.id = s.account_id WHERE s.fleet_id = ? ORDER BY a.id`,
      ),
      tokensOfFleet: db.prepare(
        `SELECT t.id, t.name FROM token_fleets s JOIN api_tokens t ON t.id = s.token_id WHERE s.fleet_id = ? ORDER BY t.id`,
      ),
      dropRevokedTokenFleets: db.prepare(
        `DELETE FROM token_fleets WHERE fleet_id = ? AND token_id IN (SELECT id FROM api_tokens WHERE revoked_at IS NOT NULL)`,
      ),
      insert: db.prepare(
        `INSERT INTO admin_accounts (email, display_name, role, password_hash, created_at)
         VALUES (@email, @display_name, @role, @password_hash, @created_at)`,
      ),
      setCredentials: db.prepare(
        `UPDATE admin_accounts SET email = @email, display_name = @display_name, password_hash = @password_hash WHERE id = @id`,
      ),
      signedIn: db.prepare(`UPDATE admin_accounts SET last_sign_in_at = ? WHERE id = ?`),
      setPasswordHash: db.prepare(`UPDATE admin_accounts SET password_hash = ? WHERE id = ?`),
      setPendingTotp: db.prepare(`UPDATE admin_accounts SET totp_pending_secret = ? WHERE id = ?`),
      enableTotp: db.prepare(
        `UPDATE admin_accounts SET totp_secret = @secret, totp_pending_secret = NULL, totp_enabled_at = @at, totp_last_step = @step
         WHERE id = @id`,
      ),
      takeTotpStep: db.prepare(
        `UPDATE admin_accounts SET totp_last_step = @step WHERE id = @id AND totp_secret IS NOT NULL
           AND (totp_last_step IS NULL OR totp_last_step < @step)`,
      ),
      clearTotp: db.prepare(
        `UPDATE admin_accounts SET totp_secret = NULL, totp_pending_secret = NULL, totp_enabled_at = NULL, totp_last_step = NULL
         WHERE id = ?`,
      ),
      clearRecoveryCodes: db.prepare(`DELETE FROM admin_recovery_codes WHERE account_id = ?`),
      insertRecoveryCode: db.prepare(`INSERT INTO admin_recovery_codes (account_id, code_hash, created_at) VALUES (?, ?, ?)`),
      useRecoveryCode: db.prepare(
        `UPDATE admin_recovery_codes SET used_at = @at
         WHERE id = (SELECT id FROM admin_recovery_codes WHERE account_id = @id AND code_hash = @hash AND used_at IS NULL LIMIT 1)`,
      ),
      recoveryCodesLeft: db.prepare(`SELECT count(*) FROM admin_recovery_codes WHERE account_id = ? AND used_at IS NULL`).pluck(),
      list: db.prepare(`${ACCOUNT} ORDER BY a.id`),
      setRole: db.prepare(`UPDATE admin_accounts SET role = ? WHERE id = ?`),
      setDisabled: db.prepare(`UPDATE admin_accounts SET disabled = ? WHERE id = ?`),
      setPassword: db.prepare(
        `UPDATE admin_accounts SET password_hash = @password_hash, display_name = @display_name WHERE id = @id`,
      ),
      remove: db.prepare(`DELETE FROM admin_accounts WHERE id = ?`),
      enabledOwners: db.prepare(`SELECT count(*) FROM admin_accounts WHERE role = 'owner' AND disabled = 0`).pluck(),
      tokenByHash: db.prepare(
        `SELECT t.*, a.email AS a_email, a.display_name AS a_display_name, a.role AS a_role, a.password_hash AS a_password_hash,
           a.disabled AS a_disabled, a.created_at AS a_created_at, a.last_sign_in_at AS a_last_sign_in_at,
           a.totp_secret AS a_totp_secret, a.totp_pending_secret AS a_totp_pending_secret,
           a.totp_enabled_at AS a_totp_enabled_at, a.totp_last_step AS a_totp_last_step,
           ${TOKEN_FLEETS} AS fleet_ids, ${ACCOUNT_FLEETS} AS a_fleet_ids
         FROM api_tokens t JOIN admin_accounts a ON a.id = t.account_id WHERE t.token_hash = ?`,
      ),
      tokenById: db.prepare(`${TOKEN} WHERE t.id = ?`),
      dataDirToken: db.prepare(`${TOKEN} WHERE t.account_id = ? AND t.kind = 'data-dir' ORDER BY t.id LIMIT 1`),
      insertToken: db.prepare(
        `INSERT INTO api_tokens (account_id, name, role, kind, token_hash, created_at, expires_at)
         VALUES (@account_id, @name, @role, @kind, @token_hash, @created_at, @expires_at)`,
      ),
      setTokenHash: db.prepare(`UPDATE api_tokens SET token_hash = ? WHERE id = ?`),
      tokenUsed: db.prepare(`UPDATE api_tokens SET last_used_at = ? WHERE id = ?`),
      revokeToken: db.prepare(`UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
      allTokens: db.prepare(`${listed} ORDER BY t.id DESC`),
      accountTokens: db.prepare(`${listed} WHERE t.account_id = ? ORDER BY t.id DESC`),
    };
  }

  count(): number {
    return this.s.count.get() as number;
  }
  byId(id: number): StoredAccount | undefined {
    return parsed<StoredAccount>(this.s.byId.get(id) as Raw<StoredAccount> | undefined);
  }
  byEmail(email: string): StoredAccount | undefined {
    return parsed<StoredAccount>(this.s.byEmail.get(email) as Raw<StoredAccount> | undefined);
  }
  owner(): StoredAccount | undefined {
    return parsed<StoredAccount>(this.s.owner.get() as Raw<StoredAccount> | undefined);
  }
  insert(account: NewAccount): number {
    return Number(this.s.insert.run(account).lastInsertRowid);
  }
  setAccountFleets(id: number, fleetIds: readonly number[]): void {
    this.s.clearAccountFleets.run(id);
    for (const fleetId of fleetIds) this.s.addAccountFleet.run(id, fleetId);
  }
  setTokenFleets(id: number, fleetIds: readonly number[]): void {
    this.s.clearTokenFleets.run(id);
    for (const fleetId of fleetIds) this.s.addTokenFleet.run(id, fleetId);
  }
  scopedBy(fleetId: number): FleetScopedBy {
    // A revoked token's scope is history: it does not keep its fleet from being deleted.
    this.s.dropRevokedTokenFleets.run(fleetId);
    return {
      accounts: this.s.accountsOfFleet.all(fleetId) as { id: number; name: string }[],
      tokens: this.s.tokensOfFleet.all(fleetId) as { id: number; name: string }[],
    };
  }
  setCredentials(id: number, fields: { email: string; display_name: string; password_hash: string }): void {
    this.s.setCredentials.run({ id, ...fields });
  }
  signedIn(id: number, at: string): void {
    this.s.signedIn.run(at, id);
  }
  setPasswordHash(id: number, passwordHash: string): void {
    this.s.setPasswordHash.run(passwordHash, id);
  }
  setPendingTotp(id: number, secret: string | null): void {
    this.s.setPendingTotp.run(secret, id);
  }
  enableTotp(id: number, secret: string, at: string, step: number, recoveryHashes: string[]): void {
    this.s.enableTotp.run({ id, secret, at, step });
    this.s.clearRecoveryCodes.run(id);
    for (const hash of recoveryHashes) this.s.insertRecoveryCode.run(id, hash, at);
  }
  takeTotpStep(id: number, step: number): boolean {
    return this.s.takeTotpStep.run({ id, step }).changes === 1;
  }
  clearTotp(id: number): void {
    this.s.clearTotp.run(id);
    this.s.clearRecoveryCodes.run(id);
  }
  useRecoveryCode(id: number, hash: string, at: string): boolean {
    return this.s.useRecoveryCode.run({ id, hash, at }).changes === 1;
  }
  recoveryCodesLeft(id: number): number {
    return this.s.recoveryCodesLeft.get(id) as number;
  }
  list(): StoredAccount[] {
    return (this.s.list.all() as Raw<StoredAccount>[]).map((row) => parsed<StoredAccount>(row)!);
  }
  setRole(id: number, role: Role): void {
    this.s.setRole.run(role, id);
  }
  setDisabled(id: number, disabled: boolean): void {
    this.s.setDisabled.run(disabled ? 1 : 0, id);
  }
  setPassword(id: number, fields: { password_hash: string; display_name: string }): void {
    this.s.setPassword.run({ id, ...fields });
  }
  remove(id: number): void {
    this.s.remove.run(id);
  }
  enabledOwners(): number {
    return this.s.enabledOwners.get() as number;
  }
  tokenByHash(hash: string): { token: StoredApiToken; account: StoredAccount } | undefined {
    const row = this.s.tokenByHash.get(hash) as (Raw<StoredApiToken> & AccountColumns) | undefined;
    if (!row) return undefined;
    const {
      a_email,
      a_display_name,
      a_role,
      a_password_hash,
      a_disabled,
      a_created_at,
      a_last_sign_in_at,
      a_totp_secret,
      a_totp_pending_secret,
      a_totp_enabled_at,
      a_totp_last_step,
      a_fleet_ids,
      ...raw
    } = row;
    const token = parsed<StoredApiToken>(raw)!;
    const account: StoredAccount = {
      id: token.account_id,
      email: a_email,
      display_name: a_display_name,
      role: a_role,
      password_hash: a_password_hash,
      disabled: a_disabled,
      created_at: a_created_at,
      last_sign_in_at: a_last_sign_in_at,
      fleet_ids: ids(a_fleet_ids),
      totp_secret: a_totp_secret,
      totp_pending_secret: a_totp_pending_secret,
      totp_enabled_at: a_totp_enabled_at,
      totp_last_step: a_totp_last_step,
    };
    return { token, account };
  }
  tokenById(id: number): StoredApiToken | undefined {
    return parsed<StoredApiToken>(this.s.tokenById.get(id) as Raw<StoredApiToken> | undefined);
  }
  dataDirToken(accountId: number): StoredApiToken | undefined {
    return parsed<StoredApiToken>(this.s.dataDirToken.get(accountId) as Raw<StoredApiToken> | undefined);
  }
  insertToken(token: Omit<StoredApiToken, 'id' | 'last_used_at' | 'revoked_at' | 'fleet_ids'>): number {
    return Number(this.s.insertToken.run(token).lastInsertRowid);
  }
  setTokenHash(id: number, hash: string): void {
    this.s.setTokenHash.run(hash, id);
  }
  tokenUsed(id: number, at: string): void {
    this.s.tokenUsed.run(at, id);
  }
  revokeToken(id: number, at: string): void {
    this.s.revokeToken.run(at, id);
  }
  tokens(accountId?: number): ListedApiToken[] {
    const rows = (
      accountId === undefined ? this.s.allTokens.all() : this.s.accountTokens.all(accountId)
    ) as Raw<ListedApiToken>[];
    return rows.map((row) => parsed<ListedApiToken>(row)!);
  }
}
