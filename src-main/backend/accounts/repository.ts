import type { Sql } from '../db/sql.ts';
import { dialect, type Dialect } from '../db/dialect.ts';
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
const accountFleets = (d: Dialect) => d.jsonArrayOf('fleet_id', 'FROM account_fleets WHERE account_id = a.id', 'fleet_id');
const tokenFleets = (d: Dialect) => d.jsonArrayOf('fleet_id', 'FROM token_fleets WHERE token_id = t.id', 'fleet_id');

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
  count(): Promise<number>;
  byId(id: number): Promise<StoredAccount | undefined>;
  byEmail(email: string): Promise<StoredAccount | undefined>;
  owner(): Promise<StoredAccount | undefined>;
  insert(account: NewAccount): Promise<number>;
  /** Replaces an account's fleet scope (empty: every fleet). */
  setAccountFleets(id: number, fleetIds: readonly number[]): Promise<void>;
  /** Replaces a token's fleet scope (empty: its account's). */
  setTokenFleets(id: number, fleetIds: readonly number[]): Promise<void>;
  /** The accounts and unrevoked tokens scoped to this fleet. */
  scopedBy(fleetId: number): Promise<FleetScopedBy>;
  /**
   * The first set-up's email, name and password, only while the account has no password: false
   * when it has one (another set-up, on any node, came first), and nothing is changed.
   */
  setCredentials(id: number, fields: { email: string; display_name: string; password_hash: string }): Promise<boolean>;
  signedIn(id: number, at: string): Promise<void>;
  setPasswordHash(id: number, passwordHash: string): Promise<void>;

  /** Two-factor: the secret being enrolled (null: none). */
  setPendingTotp(id: number, secret: string | null): Promise<void>;
  /** Turns two-factor on with the pending secret confirmed at `step`, and its recovery codes (hashes). */
  enableTotp(id: number, secret: string, at: string, step: number, recoveryHashes: string[]): Promise<void>;
  /** Takes TOTP time step `step` if it is later than the last one taken: false for a code used already. */
  takeTotpStep(id: number, step: number): Promise<boolean>;
  /** Two-factor off: secret, pending secret and recovery codes gone. */
  clearTotp(id: number): Promise<void>;
  /** Marks the unused recovery code with this hash used: false when there is none. */
  useRecoveryCode(id: number, hash: string, at: string): Promise<boolean>;
  recoveryCodesLeft(id: number): Promise<number>;
  /** Every account, oldest first. */
  list(): Promise<StoredAccount[]>;
  setRole(id: number, role: Role): Promise<void>;
  setDisabled(id: number, disabled: boolean): Promise<void>;
  /** An invited admin's password (and name, when they chose one). */
  setPassword(id: number, fields: { password_hash: string; display_name: string }): Promise<void>;
  /** Deletes the account; its tokens and invitations go with it. */
  remove(id: number): Promise<void>;
  /** Owners not disabled. */
  enabledOwners(): Promise<number>;

  /** The token with this hash and its account, read in one statement (it runs on every bearer request). */
  tokenByHash(hash: string): Promise<{ token: StoredApiToken; account: StoredAccount } | undefined>;
  tokenById(id: number): Promise<StoredApiToken | undefined>;
  dataDirToken(accountId: number): Promise<StoredApiToken | undefined>;
  insertToken(token: Omit<StoredApiToken, 'id' | 'last_used_at' | 'revoked_at' | 'fleet_ids'>): Promise<number>;
  setTokenHash(id: number, hash: string): Promise<void>;
  tokenUsed(id: number, at: string): Promise<void>;
  revokeToken(id: number, at: string): Promise<void>;
  /** Every token, or those of one account; newest first. */
  tokens(accountId?: number): Promise<ListedApiToken[]>;
}

export class SqliteAccountRepository implements AccountRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    const d = dialect(sql.engine);
    const ACCOUNT = `SELECT a.*, ${accountFleets(d)} AS fleet_ids FROM admin_accounts a`;
    const TOKEN = `SELECT t.*, ${tokenFleets(d)} AS fleet_ids FROM api_tokens t`;
    const listed = `SELECT t.id, t.account_id, t.name, t.role, t.kind, t.created_at, t.expires_at, t.last_used_at, t.revoked_at,
        coalesce(a.display_name, a.email) AS account_name, ${tokenFleets(d)} AS fleet_ids
      FROM api_tokens t JOIN admin_accounts a ON a.id = t.account_id`;
    this.s = {
      count: `SELECT count(*) FROM admin_accounts`,
      byId: `${ACCOUNT} WHERE a.id = ?`,
      byEmail: `${ACCOUNT} WHERE ${d.equalsIgnoringCase('a.email', '?')}`,
      owner: `${ACCOUNT} WHERE a.role = 'owner' ORDER BY a.id LIMIT 1`,
      clearAccountFleets: `DELETE FROM account_fleets WHERE account_id = ?`,
      addAccountFleet: `INSERT INTO account_fleets (account_id, fleet_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
      clearTokenFleets: `DELETE FROM token_fleets WHERE token_id = ?`,
      addTokenFleet: `INSERT INTO token_fleets (token_id, fleet_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
      accountsOfFleet: `SELECT a.id, coalesce(nullif(a.display_name, ''), a.email, 'account ' || a.id) AS name
         FROM account_fleets s JOIN admin_accounts a ON a.id = s.account_id WHERE s.fleet_id = ? ORDER BY a.id`,
      tokensOfFleet: `SELECT t.id, t.name FROM token_fleets s JOIN api_tokens t ON t.id = s.token_id WHERE s.fleet_id = ? ORDER BY t.id`,
      dropRevokedTokenFleets: `DELETE FROM token_fleets WHERE fleet_id = ? AND token_id IN (SELECT id FROM api_tokens WHERE revoked_at IS NOT NULL)`,
      insert: `INSERT INTO admin_accounts (email, display_name, role, password_hash, created_at)
         VALUES (@email, @display_name, @role, @password_hash, @created_at) RETURNING id`,
      setCredentials: `UPDATE admin_accounts SET email = @email, display_name = @display_name, password_hash = @password_hash
         WHERE id = @id AND password_hash IS NULL`,
      signedIn: `UPDATE admin_accounts SET last_sign_in_at = ? WHERE id = ?`,
      setPasswordHash: `UPDATE admin_accounts SET password_hash = ? WHERE id = ?`,
      setPendingTotp: `UPDATE admin_accounts SET totp_pending_secret = ? WHERE id = ?`,
      enableTotp: `UPDATE admin_accounts SET totp_secret = @secret, totp_pending_secret = NULL, totp_enabled_at = @at, totp_last_step = @step
         WHERE id = @id`,
      takeTotpStep: `UPDATE admin_accounts SET totp_last_step = @step WHERE id = @id AND totp_secret IS NOT NULL
           AND (totp_last_step IS NULL OR totp_last_step < @step)`,
      clearTotp: `UPDATE admin_accounts SET totp_secret = NULL, totp_pending_secret = NULL, totp_enabled_at = NULL, totp_last_step = NULL
         WHERE id = ?`,
      clearRecoveryCodes: `DELETE FROM admin_recovery_codes WHERE account_id = ?`,
      insertRecoveryCode: `INSERT INTO admin_recovery_codes (account_id, code_hash, created_at) VALUES (?, ?, ?)`,
      useRecoveryCode: `UPDATE admin_recovery_codes SET used_at = @at
         WHERE id = (SELECT id FROM admin_recovery_codes WHERE account_id = @id AND code_hash = @hash AND used_at IS NULL LIMIT 1)`,
      recoveryCodesLeft: `SELECT count(*) FROM admin_recovery_codes WHERE account_id = ? AND used_at IS NULL`,
      list: `${ACCOUNT} ORDER BY a.id`,
      setRole: `UPDATE admin_accounts SET role = ? WHERE id = ?`,
      setDisabled: `UPDATE admin_accounts SET disabled = ? WHERE id = ?`,
      setPassword: `UPDATE admin_accounts SET password_hash = @password_hash, display_name = @display_name WHERE id = @id`,
      remove: `DELETE FROM admin_accounts WHERE id = ?`,
      enabledOwners: `SELECT count(*) FROM admin_accounts WHERE role = 'owner' AND disabled = 0`,
      tokenByHash: `SELECT t.*, a.email AS a_email, a.display_name AS a_display_name, a.role AS a_role, a.password_hash AS a_password_hash,
           a.disabled AS a_disabled, a.created_at AS a_created_at, a.last_sign_in_at AS a_last_sign_in_at,
           a.totp_secret AS a_totp_secret, a.totp_pending_secret AS a_totp_pending_secret,
           a.totp_enabled_at AS a_totp_enabled_at, a.totp_last_step AS a_totp_last_step,
           ${tokenFleets(d)} AS fleet_ids, ${accountFleets(d)} AS a_fleet_ids
         FROM api_tokens t JOIN admin_accounts a ON a.id = t.account_id WHERE t.token_hash = ?`,
      tokenById: `${TOKEN} WHERE t.id = ?`,
      dataDirToken: `${TOKEN} WHERE t.account_id = ? AND t.kind = 'data-dir' ORDER BY t.id LIMIT 1`,
      insertToken: `INSERT INTO api_tokens (account_id, name, role, kind, token_hash, created_at, expires_at)
         VALUES (@account_id, @name, @role, @kind, @token_hash, @created_at, @expires_at) RETURNING id`,
      setTokenHash: `UPDATE api_tokens SET token_hash = ? WHERE id = ?`,
      tokenUsed: `UPDATE api_tokens SET last_used_at = ? WHERE id = ?`,
      revokeToken: `UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`,
      allTokens: `${listed} ORDER BY t.id DESC`,
      accountTokens: `${listed} WHERE t.account_id = ? ORDER BY t.id DESC`,
    };
  }

  async count(): Promise<number> {
    return (await this.sql.value(this.s.count)) as number;
  }
  async byId(id: number): Promise<StoredAccount | undefined> {
    return parsed<StoredAccount>((await this.sql.get(this.s.byId, [id])) as Raw<StoredAccount> | undefined);
  }
  async byEmail(email: string): Promise<StoredAccount | undefined> {
    return parsed<StoredAccount>((await this.sql.get(this.s.byEmail, [email])) as Raw<StoredAccount> | undefined);
  }
  async owner(): Promise<StoredAccount | undefined> {
    return parsed<StoredAccount>((await this.sql.get(this.s.owner)) as Raw<StoredAccount> | undefined);
  }
  async insert(account: NewAccount): Promise<number> {
    return Number(await this.sql.value<number>(this.s.insert, account));
  }
  async setAccountFleets(id: number, fleetIds: readonly number[]): Promise<void> {
    await this.sql.run(this.s.clearAccountFleets, [id]);
    for (const fleetId of fleetIds) await this.sql.run(this.s.addAccountFleet, [id, fleetId]);
  }
  async setTokenFleets(id: number, fleetIds: readonly number[]): Promise<void> {
    await this.sql.run(this.s.clearTokenFleets, [id]);
    for (const fleetId of fleetIds) await this.sql.run(this.s.addTokenFleet, [id, fleetId]);
  }
  async scopedBy(fleetId: number): Promise<FleetScopedBy> {
    // A revoked token's scope is history: it does not keep its fleet from being deleted.
    await this.sql.run(this.s.dropRevokedTokenFleets, [fleetId]);
    return {
      accounts: (await this.sql.all(this.s.accountsOfFleet, [fleetId])) as { id: number; name: string }[],
      tokens: (await this.sql.all(this.s.tokensOfFleet, [fleetId])) as { id: number; name: string }[],
    };
  }
  async setCredentials(id: number, fields: { email: string; display_name: string; password_hash: string }): Promise<boolean> {
    return (await this.sql.run(this.s.setCredentials, { id, ...fields })).changes === 1;
  }
  async signedIn(id: number, at: string): Promise<void> {
    await this.sql.run(this.s.signedIn, [at, id]);
  }
  async setPasswordHash(id: number, passwordHash: string): Promise<void> {
    await this.sql.run(this.s.setPasswordHash, [passwordHash, id]);
  }
  async setPendingTotp(id: number, secret: string | null): Promise<void> {
    await this.sql.run(this.s.setPendingTotp, [secret, id]);
  }
  async enableTotp(id: number, secret: string, at: string, step: number, recoveryHashes: string[]): Promise<void> {
    await this.sql.run(this.s.enableTotp, { id, secret, at, step });
    await this.sql.run(this.s.clearRecoveryCodes, [id]);
    for (const hash of recoveryHashes) await this.sql.run(this.s.insertRecoveryCode, [id, hash, at]);
  }
  async takeTotpStep(id: number, step: number): Promise<boolean> {
    return (await this.sql.run(this.s.takeTotpStep, { id, step })).changes === 1;
  }
  async clearTotp(id: number): Promise<void> {
    await this.sql.run(this.s.clearTotp, [id]);
    await this.sql.run(this.s.clearRecoveryCodes, [id]);
  }
  async useRecoveryCode(id: number, hash: string, at: string): Promise<boolean> {
    return (await this.sql.run(this.s.useRecoveryCode, { id, hash, at })).changes === 1;
  }
  async recoveryCodesLeft(id: number): Promise<number> {
    return (await this.sql.value(this.s.recoveryCodesLeft, [id])) as number;
  }
  async list(): Promise<StoredAccount[]> {
    return ((await this.sql.all(this.s.list)) as Raw<StoredAccount>[]).map((row) => parsed<StoredAccount>(row)!);
  }
  async setRole(id: number, role: Role): Promise<void> {
    await this.sql.run(this.s.setRole, [role, id]);
  }
  async setDisabled(id: number, disabled: boolean): Promise<void> {
    await this.sql.run(this.s.setDisabled, [disabled ? 1 : 0, id]);
  }
  async setPassword(id: number, fields: { password_hash: string; display_name: string }): Promise<void> {
    await this.sql.run(this.s.setPassword, { id, ...fields });
  }
  async remove(id: number): Promise<void> {
    await this.sql.run(this.s.remove, [id]);
  }
  async enabledOwners(): Promise<number> {
    return (await this.sql.value(this.s.enabledOwners)) as number;
  }
  async tokenByHash(hash: string): Promise<{ token: StoredApiToken; account: StoredAccount } | undefined> {
    const row = (await this.sql.get(this.s.tokenByHash, [hash])) as (Raw<StoredApiToken> & AccountColumns) | undefined;
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
  async tokenById(id: number): Promise<StoredApiToken | undefined> {
    return parsed<StoredApiToken>((await this.sql.get(this.s.tokenById, [id])) as Raw<StoredApiToken> | undefined);
  }
  async dataDirToken(accountId: number): Promise<StoredApiToken | undefined> {
    return parsed<StoredApiToken>((await this.sql.get(this.s.dataDirToken, [accountId])) as Raw<StoredApiToken> | undefined);
  }
  async insertToken(token: Omit<StoredApiToken, 'id' | 'last_used_at' | 'revoked_at' | 'fleet_ids'>): Promise<number> {
    return Number(await this.sql.value<number>(this.s.insertToken, token));
  }
  async setTokenHash(id: number, hash: string): Promise<void> {
    await this.sql.run(this.s.setTokenHash, [hash, id]);
  }
  async tokenUsed(id: number, at: string): Promise<void> {
    await this.sql.run(this.s.tokenUsed, [at, id]);
  }
  async revokeToken(id: number, at: string): Promise<void> {
    await this.sql.run(this.s.revokeToken, [at, id]);
  }
  async tokens(accountId?: number): Promise<ListedApiToken[]> {
    const rows = (
      accountId === undefined ? await this.sql.all(this.s.allTokens) : await this.sql.all(this.s.accountTokens, [accountId])
    ) as Raw<ListedApiToken>[];
    return rows.map((row) => parsed<ListedApiToken>(row)!);
  }
}
