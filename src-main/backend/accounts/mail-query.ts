import type { AccountInviteRepository } from './invite-repository.ts';
import { inviteStatus, type AccountInviteForMail } from './management.ts';

/** The narrow read the mail room needs of admins' invitations (it declares it as its port), and where the set-up page is. */
export class AccountInviteMailQuery {
  private readonly invites: AccountInviteRepository;
  readonly setupLink: (token: string) => string;

  constructor(invites: AccountInviteRepository, setupLink: (token: string) => string) {
    this.invites = invites;
    this.setupLink = setupLink;
  }

  async forMail(inviteId: number, now = Date.now()): Promise<AccountInviteForMail | undefined> {
    const found = await this.invites.byId(inviteId);
    if (!found) return undefined;
    const { invite, account, inviter } = found;
    return {
      id: invite.id,
      email: account.email ?? '',
      display_name: account.display_name,
      role: account.role,
      inviter,
      expires_at: invite.expires_at,
      status: inviteStatus(invite, account, now),
    };
  }
}
