import { createHash } from 'node:crypto';
import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import { requestContext } from '../audit/context.ts';
import { ApiError } from '../errors.ts';
import { randomHex } from '../util/tokens.ts';
import type { AccountEntry, AccountInviteDelivery, AccountSetupInfo, Role } from '../../../src-shared/contract/index.ts';
import { ACCOUNT_INVITE_DAYS, isValidEmail } from '../../../src-shared/contract/rules.ts';
import { accountView, type Actor } from './accounts.ts';
import type { AccountInviteRepository, StoredAccountInvite } from './invite-repository.ts';
import { hashPassword } from './passwords.ts';
import type { AccountRepository, StoredAccount } from './repository.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const DAY_MS = 86_400_000;

/** What accounts ask of the mail room (implemented there): an invited admin's email, queued and reported. */
export interface AccountInviteMailer {
  /** Queues the email of this invitation in the caller's transaction (sent once it commits); the link's secret waits with it. */
  queueAccountInvite(inviteId: number, token: string): Promise<void>;
  deliveriesOf(inviteIds: number[]): Promise<Map<number, AccountInviteDelivery>>;
}

/** Resets an account's two-factor sign-in (accounts.ts: TwoFactorService). */
export interface AccountTwoFactor {
  resetTwoFactor(accountId: number): Promise<void>;
}

/** Scopes an account to fleets (accounts.ts: AccountService.setAccountScope; 400 for an owner or admin, or an unknown fleet). */
export interface AccountScopes {
  setAccountScope(actor: Actor, accountId: number, fleetIds: number[]): Promise<unknown>;
}

/** Ends the console sessions of an account (the admin-sessions room). */
export interface AccountSessions {
  endAllOf(accountId: number): Promise<number>;
}

/** What the mail worker reads of an admin's invitation to compose its email (mail/ports.ts declares it). */
export interface AccountInviteForMail {
  id: number;
  email: string;
  display_name: string;
  role: Role;
  inviter: string | null;
  expires_at: string;
  /** Only a `pending` one is sent; the others say why not. */
  status: 'pending' | 'used' | 'replaced' | 'expired' | 'disabled';
}

/** Whether an invitation's link still works, and if not why. */
export function inviteStatus(invite: StoredAccountInvite, account: StoredAccount, now: number): AccountInviteForMail['status'] {
  if (invite.used_at !== null) return 'used';
  if (invite.replaced_at !== null) return 'replaced';
  if (account.disabled === 1) return 'disabled';
  if (Date.parse(invite.expires_at) <= now) return 'expired';
  return 'pending';
}

/** How an account is named in messages: its name and email. */
const nameOf = (account: StoredAccount) =>
  account.email && account.display_name !== account.email ? `${account.display_name} <${account.email}>` : account.display_name;

/**
 * Admins managing admins (the Accounts page, `mdm-console admin …`): invite by email with a role
 * (a set-up link, expiring and used once, emailed by the mail worker or handed back), change a
 * role, disable, enable, delete. Never yourself, never the last owner, never the account holding
 * the data dir's admin token (the CLI's). Each change records an event whose data carries the
 * fields before and after; inside an admin request it is also the audit entry, in the same transaction.
 */
export class AccountManagement {
  private readonly store: AccountRepository;
  private readonly invites: AccountInviteRepository;
  private readonly events: Pick<EventLog, 'record'>;
  private readonly work: UnitOfWork;
  private readonly mailer: AccountInviteMailer;
  private readonly sessions: AccountSessions;
  private readonly twoFactor: AccountTwoFactor;
  private readonly scopes: AccountScopes;
  private readonly setupLink: (token: string) => string;

  constructor(deps: {
    store: AccountRepository;
    invites: AccountInviteRepository;
    events: Pick<EventLog, 'record'>;
    work: UnitOfWork;
    mailer: AccountInviteMailer;
    sessions: AccountSessions;
    twoFactor: AccountTwoFactor;
    scopes: AccountScopes;
    /** The set-up page's URL for a link's secret (the admin listener's address). */
    setupLink: (token: string) => string;
  }) {
    this.store = deps.store;
    this.invites = deps.invites;
    this.events = deps.events;
    this.work = deps.work;
    this.mailer = deps.mailer;
    this.sessions = deps.sessions;
    this.twoFactor = deps.twoFactor;
    this.scopes = deps.scopes;
    this.setupLink = deps.setupLink;
  }

  /** Every admin, with an invited one's latest link and its email. */
  async list(now = Date.now()): Promise<AccountEntry[]> {
    const rows = await this.store.list();
    const invites = await this.invites.latestOf(rows.filter((row) => row.password_hash === null).map((row) => row.id));
    const deliveries = await this.mailer.deliveriesOf([...invites.values()].map((invite) => invite.id));
    return Promise.all(rows.map((row) => this.entry(row, invites.get(row.id), deliveries, now)));
  }

  async get(id: number): Promise<AccountEntry> {
    const row = await this.mustFind(id);
    const invite = row.password_hash === null ? (await this.invites.latestOf([id])).get(id) : undefined;
    return this.entry(row, invite, await this.mailer.deliveriesOf(invite ? [invite.id] : []), Date.now());
  }

  /** Invites an admin by email with a role: a new account (`invited`) and its set-up link, emailed unless `noEmail`. */
  invite(
    actor: Actor,
    input: {
      email: string;
      role: Role;
      display_name?: string | undefined;
      days?: number | undefined;
      no_email?: boolean | undefined;
      fleet_ids?: number[] | undefined;
    },
  ): Promise<{ account: AccountEntry; setup_url: string | null; email_queued: boolean }> {
    const email = input.email.trim();
    if (!isValidEmail(email)) throw new ApiError(400, 'ERROR_BAD_REQUEST', `"${email}" is not an email address`);
    return this.work.run(async () => {
      const existing = await this.store.byEmail(email);
      if (existing) {
        const status = accountView(existing).status;
        throw new ApiError(
          409,
          'ERROR_CONFLICT',
          status === 'invited'
            ? `${email} is already invited: send a new link from the Accounts page or with admin invite-again`
            : `${email} is already an admin (${status})`,
        );
      }
      const displayName = input.display_name?.trim() || email;
      const id = await this.store.insert({
        email,
        display_name: displayName,
        role: input.role,
        password_hash: null,
        created_at: nowIso(),
      });
      // Scoped in the same transaction: an owner or admin with fleets, or an unknown fleet, makes nothing (400).
      if (input.fleet_ids && input.fleet_ids.length > 0) await this.scopes.setAccountScope(actor, id, input.fleet_ids);
      const link = await this.newInvite(actor, id, input.days, input.no_email === true);
      await this.events.record(
        'account.invited',
        `${nameOf(await this.mustFind(id))} invited as ${input.role}${link.url ? ' (set-up link handed over, no email)' : ''}`,
        {},
        {
          account_id: id,
          email,
          name: displayName,
          role: input.role,
          email_queued: link.url === null,
          after: { role: input.role },
        },
      );
      return { account: await this.get(id), setup_url: link.url, email_queued: link.url === null };
    });
  }

  /** A new set-up link for an invited admin; the old one stops working. */
  reinvite(
    actor: Actor,
    id: number,
    input: { days?: number | undefined; no_email?: boolean | undefined },
  ): Promise<{ account: AccountEntry; setup_url: string | null; email_queued: boolean }> {
    return this.work.run(async () => {
      const row = await this.mustFind(id);
      if (row.password_hash !== null || row.email === null) {
        throw new ApiError(
          409,
          'ERROR_CONFLICT',
          `${nameOf(row)} has already set a password: there is nothing to invite them to`,
        );
      }
      if (row.disabled === 1) throw new ApiError(409, 'ERROR_CONFLICT', `${nameOf(row)} is disabled: enable the account first`);
      const link = await this.newInvite(actor, id, input.days, input.no_email === true);
      await this.events.record(
        'account.reinvited',
        `${nameOf(row)} sent a new set-up link${link.url ? ' (handed over, no email)' : ''}; the previous one no longer works`,
        {},
        { account_id: id, email: row.email, name: row.display_name, email_queued: link.url === null },
      );
      return { account: await this.get(id), setup_url: link.url, email_queued: link.url === null };
    });
  }

  /** A new role (never one's own, never away from the last owner). */
  setRole(actor: Actor, id: number, role: Role): Promise<AccountEntry> {
    return this.work.run(async () => {
      const row = await this.mustFind(id);
      if (row.id === actor.account.id) {
        throw new ApiError(409, 'ERROR_CONFLICT', 'You cannot change your own role: ask another owner to do it.');
      }
      if (row.role === role) return this.get(id);
      if (row.role === 'owner') await this.keepAnOwner(row, 'lose the owner role');
      await this.keepDataDirOwner(row, 'change its role');
      await this.store.setRole(id, role);
      // An owner or admin sees every fleet: a scope left from operator days goes (recorded as its own change).
      if ((role === 'owner' || role === 'admin') && row.fleet_ids.length > 0) await this.scopes.setAccountScope(actor, id, []);
      await this.events.record(
        'account.role_changed',
        `${nameOf(row)}: role ${row.role} → ${role}`,
        {},
        { account_id: id, email: row.email, name: row.display_name, before: { role: row.role }, after: { role } },
      );
      return this.get(id);
    });
  }

  /** Disabled: their console sessions end now and their API tokens are refused (until enabled again). */
  disable(actor: Actor, id: number): Promise<AccountEntry> {
    return this.work.run(async () => {
      const row = await this.mustFind(id);
      if (row.id === actor.account.id) throw new ApiError(409, 'ERROR_CONFLICT', 'You cannot disable your own account.');
      if (row.disabled === 1) return this.get(id);
      if (row.role === 'owner') await this.keepAnOwner(row, 'be disabled');
      await this.keepDataDirOwner(row, 'be disabled');
      await this.store.setDisabled(id, true);
      const ended = await this.sessions.endAllOf(id);
      await this.events.record(
        'account.disabled',
        `${nameOf(row)} disabled: ${ended} console session(s) ended, API tokens refused`,
        {},
        {
          account_id: id,
          email: row.email,
          name: row.display_name,
          sessions_ended: ended,
          before: { disabled: false },
          after: { disabled: true },
        },
      );
      return this.get(id);
    });
  }

  enable(actor: Actor, id: number): Promise<AccountEntry> {
    return this.work.run(async () => {
      const row = await this.mustFind(id);
      if (row.disabled === 0) return this.get(id);
      await this.store.setDisabled(id, false);
      await this.events.record(
        'account.enabled',
        `${nameOf(row)} enabled again`,
        {},
        { account_id: id, email: row.email, name: row.display_name, before: { disabled: true }, after: { disabled: false } },
      );
      return this.get(id);
    });
  }

  /** Another admin's lost phone: their two-factor secret and recovery codes are gone; they sign in with the password alone (or enrol again when it is required). */
  resetTwoFactor(actor: Actor, id: number): Promise<AccountEntry> {
    return this.work.run(async () => {
      const row = await this.mustFind(id);
      if (row.id === actor.account.id) {
        throw new ApiError(
          409,
          'ERROR_CONFLICT',
          'Your own two-factor sign-in is turned off or enrolled again on your own account’s page.',
        );
      }
      await this.twoFactor.resetTwoFactor(id);
      return this.get(id);
    });
  }

  /** Deletes an admin with their tokens and sessions (never yourself, never the last owner). */
  async remove(actor: Actor, id: number): Promise<void> {
    await this.work.run(async () => {
      const row = await this.mustFind(id);
      if (row.id === actor.account.id) {
        throw new ApiError(409, 'ERROR_CONFLICT', 'You cannot delete your own account: ask another owner to do it.');
      }
      if (row.role === 'owner') await this.keepAnOwner(row, 'be deleted');
      await this.keepDataDirOwner(row, 'be deleted');
      await this.sessions.endAllOf(id);
      await this.store.remove(id);
      await this.events.record(
        'account.deleted',
        `${nameOf(row)} (${row.role}) deleted, with their API tokens`,
        {},
        {
          account_id: id,
          email: row.email,
          name: row.display_name,
          before: { email: row.email, display_name: row.display_name, role: row.role, disabled: row.disabled === 1 },
          after: null,
        },
      );
    });
  }

  /** Whom a set-up link is for, or a 410 saying why it no longer works. */
  async setupInfo(token: string, now = Date.now()): Promise<AccountSetupInfo> {
    const { invite, account, inviter } = await this.liveInvite(token, now);
    return {
      email: account.email ?? '',
      display_name: account.display_name,
      role: account.role,
      expires_at: invite.expires_at,
      invited_by: inviter,
    };
  }

  /**
   * The invited admin chooses their password through the link: it is used (once), the account is
   * active. Recorded as theirs, from `address`, in the transaction of the change.
   */
  async acceptInvite(
    input: { token: string; password: string; display_name?: string | undefined },
    address: string | null,
  ): Promise<StoredAccount> {
    await this.liveInvite(input.token);
    const passwordHash = await hashPassword(input.password);
    // Checked again: the link may have been used, replaced or the account disabled while hashing.
    const { invite, account } = await this.liveInvite(input.token);
    const name = input.display_name?.trim() || account.display_name;
    const actor = { accountId: account.id, name, tokenId: null, tokenName: null, role: account.role };
    return requestContext.run({ actor, address, audited: false }, () =>
      this.work.run(async () => {
        if (!(await this.invites.use(invite.id, nowIso()))) throw this.gone('This set-up link was used already.');
        await this.store.setPassword(account.id, { password_hash: passwordHash, display_name: name });
        await this.events.record(
          'account.invitation_accepted',
          `${name} <${account.email ?? ''}> chose a password: the account is active`,
          {},
          { account_id: account.id, email: account.email, name, before: { status: 'invited' }, after: { status: 'active' } },
        );
        return this.mustFind(account.id);
      }),
    );
  }

  private async liveInvite(token: string, now = Date.now()) {
    const found = /^[0-9a-f]{64}$/.test(token) ? await this.invites.byHash(sha256(token)) : undefined;
    if (!found) {
      throw this.gone('This set-up link is not valid: check that it was copied whole, or ask for a new invitation.');
    }
    const status = inviteStatus(found.invite, found.account, now);
    const ask = found.inviter ? `ask ${found.inviter} for a new one` : 'ask an owner for a new one';
    if (status === 'used') throw this.gone('This set-up link was used already: sign in with your email and password.');
    if (status === 'replaced') throw this.gone(`This set-up link was replaced by a newer one: use the latest email, or ${ask}.`);
    if (status === 'disabled') throw this.gone('This account is disabled: ask an owner.');
    if (status === 'expired') throw this.gone(`This set-up link expired on ${found.invite.expires_at.slice(0, 10)}: ${ask}.`);
    return found;
  }

  private gone(message: string): ApiError {
    return new ApiError(410, 'ERROR_SETUP_LINK_GONE', message);
  }

  private async newInvite(
    actor: Actor,
    accountId: number,
    days: number | undefined,
    noEmail: boolean,
  ): Promise<{ url: string | null }> {
    const token = randomHex(32);
    const at = Date.now();
    await this.invites.replaceAll(accountId, new Date(at).toISOString());
    const inviteId = await this.invites.insert({
      account_id: accountId,
      token_hash: sha256(token),
      invited_by: actor.account.id,
      created_at: new Date(at).toISOString(),
      expires_at: new Date(at + (days ?? ACCOUNT_INVITE_DAYS.default) * DAY_MS).toISOString(),
    });
    if (noEmail) return { url: this.setupLink(token) };
    await this.mailer.queueAccountInvite(inviteId, token);
    return { url: null };
  }

  private async keepAnOwner(row: StoredAccount, what: string): Promise<void> {
    if (row.disabled === 0 && (await this.store.enabledOwners()) <= 1) {
      throw new ApiError(
        409,
        'ERROR_CONFLICT',
        `${nameOf(row)} is the last owner and cannot ${what}: make another admin owner first.`,
      );
    }
  }

  private async keepDataDirOwner(row: StoredAccount, what: string): Promise<void> {
    if (await this.store.dataDirToken(row.id)) {
      throw new ApiError(
        409,
        'ERROR_CONFLICT',
        `${nameOf(row)} holds the data dir's admin token (the CLI's and this machine's) and cannot ${what}.`,
      );
    }
  }

  private async mustFind(id: number): Promise<StoredAccount> {
    const row = await this.store.byId(id);
    if (!row) throw new ApiError(404, 'ERROR_NOT_FOUND', `No admin account ${id}`);
    return row;
  }

  private async entry(
    row: StoredAccount,
    invite: StoredAccountInvite | undefined,
    deliveries: Map<number, AccountInviteDelivery>,
    now: number,
  ): Promise<AccountEntry> {
    const view = accountView(row);
    return {
      ...view,
      data_dir_owner: (await this.store.dataDirToken(row.id)) !== undefined,
      invitation:
        view.status === 'invited' && invite
          ? {
              created_at: invite.created_at,
              expires_at: invite.expires_at,
              expired: Date.parse(invite.expires_at) <= now,
              delivery: deliveries.get(invite.id) ?? null,
            }
          : null,
    };
  }
}
