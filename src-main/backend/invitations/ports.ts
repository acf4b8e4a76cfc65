/** What invitations ask of the mail room; declared here, by their consumer, and implemented in mail/. */

/** Queues invitation emails (inside the caller's unit of work); returns how many were queued. */
export interface InvitationMailer {
  queue(invitationIds: number[], batchId: string | null): number;
}

export type DeliveryState = 'queued' | 'sending' | 'sent' | 'failed' | 'outbox';

/** An invitation's email as its views show it (`delivery`; null: never emailed). */
export interface InvitationDelivery {
  /** queued → sending → sent | failed; outbox = written to DATA_DIR/outbox (no SMTP configured). */
  state: DeliveryState;
  /** The server's message (or why it could not be reached) when failed, or of the last attempt while retry_at is set. */
  error: string | null;
  /** When the next attempt runs, after a transient failure (4xx reply, time-out, connection error). */
  retry_at: string | null;
  /** The server's last answer, e.g. "250 OK: queued as …". */
  response: string | null;
  sent_at: string | null;
  attempts: number;
  queued_at: string;
  updated_at: string;
  message_id: string | null;
  outbox_file: string | null;
  batch_id: string | null;
}

/** The delivery of each of these invitations that has one, read at once. */
export interface InvitationDeliveries {
  deliveriesOf(invitationIds: number[]): Map<number, InvitationDelivery>;
}
