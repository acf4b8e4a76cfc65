/** What invitations ask of the mail room; declared here, by their consumer, and implemented in mail/. */
import type { DeliveryState, MailDelivery } from '../../../src-shared/contract/index.ts';

/** Queues invitation emails (inside the caller's unit of work); returns how many were queued. */
export interface InvitationMailer {
  queue(invitationIds: number[], batchId: string | null): Promise<number>;
}

/** An invitation's email as its views show it (`delivery`; null: never emailed): the contract's MailDelivery. */
export type { DeliveryState };
export type InvitationDelivery = MailDelivery;

/** The delivery of each of these invitations that has one, read at once. */
export interface InvitationDeliveries {
  deliveriesOf(invitationIds: number[]): Promise<Map<number, InvitationDelivery>>;
}
