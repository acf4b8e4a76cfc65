import type { Db } from '../db/database.ts';
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
  insert(invite: Omit<StoredAccountInvite, 'id' | 'used_at' | 'replaced_at'>): number;
  /** The invitation with this hash, its account, and the inviter's name. */
  byHash(hash: string): { invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined;
  byId(id: number): { invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined;
  /** The newest invitation of each of these accounts. */
  latestOf(accountIds: number[]): Map<number, StoredAccountInvite>;
  /** Marks the account's live invitations replaced (a new one is made). */
  replaceAll(accountId: number, at: string): void;
  /** Uses the invitation once: false when it was used (or replaced) meanwhile. */
  use(id: number, at: string): boolean;
}

export class SqliteAccountInviteRepository implements AccountInviteRepository {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO admin_invites (account_id, token_hash, invited_by, created_at, expires_at)
         VALUES (@account_id, @token_hash, @invited_by, @created_at, @expires_at)`,
      ),
      byHash: db.prepare(
        `SELECT i.*, coalesce(b.display_name, b.email) AS inviter FROM admin_invites i
         LEFT JOIN admin_accounts b ON b.id = i.invited_by WHERE i.token_hash = ?`,
      ),
      byId: db.prepare(
        `SELECT i.*, coalesce(b.display_name, b.email) AS inviter FROM admin_invites i
         LEFT JOIN admin_accounts b ON b.id = i.invited_by WHERE i.id = ?`,
      ),
      account: db.prepare(
        `SELECT a.*, (SELECT json_group_array(fleet_id) FROM account_fleets WHERE account_id = a.id) AS fleet_ids
         FROM admin_accounts a WHERE a.id = ?`,
      ),
      latestOf: db.prepare(
        `SELECT i.* FROM admin_invites i
         WHERE i.id IN (SELECT max(id) FROM admin_invites WHERE account_id IN (SELECT value FROM json_each(?)) GROUP BY account_id)`,
      ),
      replaceAll: db.prepare(
        `UPDATE admin_invites SET replaced_at = ? WHERE account_id = ? AND used_at IS NULL AND replaced_at IS NULL`,
      ),
      use: db.prepare(`UPDATE admin_invites SET used_at = ? WHERE id = ? AND used_at IS NULL AND replaced_at IS NULL`),
    };
  }

  insert(invite: Omit<StoredAccountInvite, 'id' | 'used_at' | 'replaced_at'>): number {
    return Number(this.s.insert.run(invite).lastInsertRowid);
  }

  byHash(hash: string): { invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined {
    return this.withAccount(this.s.byHash.get(hash));
  }

  byId(id: number): { invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined {
    return this.withAccount(this.s.byId.get(id));
  }

  private withAccount(
    found: unknown,
  ): { invite: StoredAccountInvite; account: StoredAccount; inviter: string | null } | undefined {
    const row = found as (StoredAccountInvite & { inviter: string | null }) | undefined;
    if (!row) return undefined;
    const { inviter, ...invite } = row;
    const stored = this.s.account.get(invite.account_id) as
      (Omit<StoredAccount, 'fleet_ids'> & { fleet_ids: string }) | undefined;
    if (!stored) return undefined;
    const account: StoredAccount = { ...stored, fleet_ids: JSON.parse(stored.fleet_ids) as number[] };
    return { invite, account, inviter };
  }

  latestOf(accountIds: number[]): Map<number, StoredAccountInvite> {
    const found = new Map<number, StoredAccountInvite>();
    if (accountIds.length === 0) return found;
    for (const row of this.s.latestOf.all(JSON.stringify(accountIds)) as StoredAccountInvite[]) found.set(row.account_id, row);
    return found;
  }

  replaceAll(accountId: number, at: string): void {
    this.s.replaceAll.run(at, accountId);
  }

  use(id: number, at: string): boolean {
    return this.s.use.run(at, id).changes === 1;
  }
}
