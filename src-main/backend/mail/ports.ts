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
  forMail(invitationId: number): MailableInvitation | undefined;
  /** Of these invitations, those still pending. */
  pendingAmong(invitationIds: number[]): number[];
}
