import type { InvitationStatus } from '../invitations/invitations.ts';
import type { InvitationForMail } from './message.ts';

/** An invitation as its email needs it: recipient, names, expiry, links; whether it may still be sent. */
export interface MailableInvitation extends InvitationForMail {
  entity_id: number;
  status: InvitationStatus;
}

/** What the mail room reads of invitations (invitations/mail-query.ts implements it). */
export interface MailableInvitations {
  /** Undefined when the invitation is gone. */
  forMail(invitationId: number): Promise<MailableInvitation | undefined>;
  /** Of these invitations, those still pending. */
  pendingAmong(invitationIds: number[]): Promise<number[]>;
}

/** An admin's invitation as its email needs it (accounts/management.ts implements the read). */
export interface MailableAccountInvite {
  id: number;
  email: string;
  display_name: string;
  role: string;
  inviter: string | null;
  expires_at: string;
  /** Only a pending one is sent. */
  status: 'pending' | 'used' | 'replaced' | 'expired' | 'disabled';
}

/** What the mail room reads of admins' invitations, and where their set-up page is. */
export interface MailableAccountInvites {
  forMail(inviteId: number): Promise<MailableAccountInvite | undefined>;
  /** The set-up page's URL for a link's secret. */
  setupLink(token: string): string;
}
