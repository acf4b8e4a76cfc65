import type { InvitationDetail } from '../api/types.ts';

/**
 * Invitation email: delivery state and "Resend". Isolated here so it can follow the mail
 * capability's routes as they land; renders nothing until the server reports deliveries.
 */
export function MailPanel({ invitation }: { invitation: InvitationDetail }) {
  void invitation;
  return null;
}
