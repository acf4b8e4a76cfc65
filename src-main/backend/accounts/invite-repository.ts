import type { Sql } from '../db/sql.ts';
import type { StoredAccount } from './repository.ts';

/** An admin's set-up link as stored: the SHA-256 of its secret, never the secret. */
export interface StoredAccountInvite {
  id: number;
  account_id: number;
  token_hash: string;
  /** The account that invited them (null when it is gone or was none). */
  invited_by: number | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  /** Set when a newer invitation of the same account took its place. */
  replaced_at: string | null;
}

/** The admin_invites table. */
export interface AccountInviteRepository {
  insert(invite: Omit<StoredAccountInvite, 'id' | 'used_at' | 'replaced_at'>): Promise<number>;
  /** The invitation with this hash, its account, and the inviter's name. */
  byHash(hash: string): Promise<{ invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined>;
  byId(id: number): Promise<{ invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined>;
  /** The newest invitation of each of these accounts. */
  latestOf(accountIds: number[]): Promise<Map<number, StoredAccountInvite>>;
  /** Marks the account's live invitations replaced (a new one is made). */
  replaceAll(accountId: number, at: string): Promise<void>;
  /** Uses the invitation once: false when it was used (or replaced) meanwhile. */
  use(id: number, at: string): Promise<boolean>;
}

export class SqliteAccountInviteRepository implements AccountInviteRepository {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      insert: `INSERT INTO admin_invites (account_id, token_hash, invited_by, created_at, expires_at)
         VALUES (@account_id, @token_hash, @invited_by, @created_at, @expires_at) RETURNING id`,
      byHash: `SELECT i.*, coalesce(b.display_name, b.email) AS inviter FROM admin_invites i
         LEFT JOIN admin_accounts b ON b.id = i.invited_by WHERE i.token_hash = ?`,
      byId: `SELECT i.*, coalesce(b.display_name, b.email) AS inviter FROM admin_invites i
         LEFT JOIN admin_accounts b ON b.id = i.invited_by WHERE i.id = ?`,
      account: `SELECT a.*, (SELECT json_group_array(fleet_id) FROM account_fleets WHERE account_id = a.id) AS fleet_ids
         FROM admin_accounts a WHERE a.id = ?`,
      latestOf: `SELECT i.* FROM admin_invites i
         WHERE i.id IN (SELECT max(id) FROM admin_invites WHERE account_id IN (SELECT value FROM json_each(?)) GROUP BY account_id)`,
      replaceAll: `UPDATE admin_invites SET replaced_at = ? WHERE account_id = ? AND used_at IS NULL AND replaced_at IS NULL`,
      use: `UPDATE admin_invites SET used_at = ? WHERE id = ? AND used_at IS NULL AND replaced_at IS NULL`,
    };
  }

  async insert(invite: Omit<StoredAccountInvite, 'id' | 'used_at' | 'replaced_at'>): Promise<number> {
    return Number(await this.sql.value<number>(this.s.insert, invite));
  }

  async byHash(
    hash: string,
  ): Promise<{ invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined> {
    return this.withAccount(await this.sql.get(this.s.byHash, [hash]));
  }

  async byId(id: number): Promise<{ invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined> {
    return this.withAccount(await this.sql.get(this.s.byId, [id]));
  }

  private async withAccount(
    found: unknown,
  ): Promise<{ invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined> {
    const row = found as (StoredAccountInvite & { inviter: string | null }) | undefined;
    if (!row) return undefined;
    const { inviter, ...invite } = row;
    const stored = (await this.sql.get(this.s.account, [invite.account_id])) as
      (Omit<StoredAccount, 'fleet_ids'> & { fleet_ids: string }) | undefined;
    if (!stored) return undefined;
    const account: StoredAccount = { ...stored, fleet_ids: JSON.parse(stored.fleet_ids) as number[] };
    return { invite, account, inviter };
  }

  async latestOf(accountIds: number[]): Promise<Map<number, StoredAccountInvite>> {
    const found = new Map<number, StoredAccountInvite>();
    if (accountIds.length === 0) return found;
    for (const row of (await this.sql.all(this.s.latestOf, [JSON.stringify(accountIds)])) as StoredAccountInvite[])
      found.set(row.account_id, row);
    return found;
  }

  async replaceAll(accountId: number, at: string): Promise<void> {
    await this.sql.run(this.s.replaceAll, [at, accountId]);
  }

  async use(id: number, at: string): Promise<boolean> {
    return (await this.sql.run(this.s.use, [at, id])).changes === 1;
  }
}
