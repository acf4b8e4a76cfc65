import { isServerEvent } from '../../src-shared/contract/event-stream.ts';
import type { LiveEvent } from '../../src-shared/contract/index.ts';

const COMMAND_DONE: Record<string, string> = {
  lock: 'Locked',
  unlock: 'Unlocked',
  wipe: 'Wipe ordered',
  unenroll: 'Unenroll ordered',
  ping: 'Pinged',
  inventory: 'Inventory asked',
  geolocate: 'Location asked',
};

/** What an admin did, in a word or three, from the event's type and typed data; null when no admin's act reads better than its message. */
function deed(event: LiveEvent): string | null {
  if (isServerEvent(event, 'agent.command')) return COMMAND_DONE[event.data?.command ?? ''] ?? 'Command sent';
  if (isServerEvent(event, 'agent.fleet_changed')) {
    const fleet = event.data?.after?.fleet;
    return typeof fleet === 'string' ? `Moved to fleet "${fleet}"` : 'Moved to another fleet';
  }
  const simple: Record<string, string> = {
    'agent.approved': 'Approved',
    'agent.rejected': 'Rejected',
    'agent.deleted': 'Deleted',
    'invitation.created': 'Invited',
    'invitation.revoked': 'Revoked',
    'invitation.deleted': 'Deleted',
    'invitation.simulated': 'Simulated device run',
    'mail.queued': 'Email queued',
    'deployment.created': 'Policy or deployment set',
    'deployment.removed': 'Policy or deployment removed',
  };
  return simple[event.type] ?? null;
}

/**
 * Who did it, for a history line: "Locked by Ana Ruiz", "Revoked by token ci-bot (admin)", or
 * "by Ana Ruiz" beside a message; null for what a device or the server did (no actor).
 */
export function whoDid(event: LiveEvent): string | null {
  if (event.actor === null) return null;
  const done = deed(event);
  return done ? `${done} by ${event.actor}` : `by ${event.actor}`;
}
