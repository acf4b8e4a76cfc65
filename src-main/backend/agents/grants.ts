/**
 * What a device enrolls with: an invitation (one person, one device) or an enrollment code (many
 * people, many devices). A grant decides who the person is and what refuses them; the device rules
 * that follow are the same for both (enrollment.ts).
 */
import { CodeUsedUp, domainsOf, emailDomainAllowed, statusOfCode, type EnrollmentCodeService } from '../codes/codes.ts';
import type { CodeRow } from '../codes/repository.ts';
import type { AttemptDetails, InvitationService } from '../invitations/invitations.ts';
import type { InvitationRow } from '../invitations/repository.ts';
import { statusOf } from '../invitations/invitations.ts';
import { isValidEmail, normalizeEmail } from '../../../src-shared/contract/rules.ts';
import type { SessionContext } from '../sessions/types.ts';
import type { UserRepository } from '../sessions/user-repository.ts';
import { ENROLL_STATUS } from './status.ts';

export type InitialStatus = typeof ENROLL_STATUS.enrolled | typeof ENROLL_STATUS.pendingApproval;

export interface EnrollmentGrant {
  entityId: number;
  fleetId: number;
  /** The agent's status once created: `pending_approval` for codes that need an admin's approval. */
  initialStatus: InitialStatus;
  invitationId: number | null;
  codeId: number | null;
  names: { firstname: string | null; lastname: string | null };
  /** The refusals of the grant itself, in DESIGN.md's order (token state, email, account), or null. */
  refusal(session: SessionContext, email: string | null): string | null;
  /** The person the device would belong to, when they exist already (for the other-person check). */
  knownPersonId(session: SessionContext, email: string): Promise<number | null>;
  /** Inside the transaction: the person, created when new (login = email). */
  person(
    session: SessionContext,
    email: string,
    names: { firstname: string | null; lastname: string | null },
  ): Promise<{ id: number; email: string }>;
  /** Inside the transaction: records the use; throws CodeUsedUp when a concurrent use took the last one. */
  consume(agentId: number, personId: number, session: SessionContext, attempt: AttemptDetails): Promise<void>;
  logRefusal(message: string, attempt: AttemptDetails): Promise<void>;
}

export function invitationGrant(invitations: InvitationService, inv: InvitationRow): EnrollmentGrant {
  return {
    entityId: inv.entity_id,
    fleetId: inv.fleet_id,
    initialStatus: ENROLL_STATUS.enrolled,
    invitationId: inv.id,
    codeId: null,
    names: { firstname: inv.firstname, lastname: inv.lastname },
    refusal(session, email) {
      switch (statusOf(inv)) {
        case 'done':
          return 'This invitation has already been used';
        case 'revoked':
          return 'This invitation has been revoked';
        case 'expired':
          return 'This invitation has expired';
        case 'pending':
          break;
      }
      if (!email || normalizeEmail(email) !== inv.email) return 'Wrong email address';
      if (session.userId !== inv.user_id) return 'This invitation belongs to another user';
      return null;
    },
    knownPersonId: (session) => Promise.resolve(session.userId),
    person: (session) => Promise.resolve({ id: session.userId, email: inv.email }),
    consume: (agentId, _personId, _session, attempt) => invitations.consume(inv, agentId, attempt),
    logRefusal: (message, attempt) => invitations.logRefusal(inv, 'ERROR_CORE_ADD', message, attempt),
  };
}

export function codeGrant(codes: EnrollmentCodeService, users: UserRepository, code: CodeRow): EnrollmentGrant {
  return {
    entityId: code.entity_id,
    fleetId: code.fleet_id,
    initialStatus: code.approval === 'manual' ? ENROLL_STATUS.pendingApproval : ENROLL_STATUS.enrolled,
    invitationId: null,
    codeId: code.id,
    names: { firstname: null, lastname: null },
    refusal(session, email) {
      switch (statusOfCode(code)) {
        case 'revoked':
          return 'This enrollment code has been revoked';
        case 'expired':
          return 'This enrollment code has expired';
        case 'used_up':
          return 'This enrollment code has been used up';
        case 'active':
          break;
      }
      if (!email || !isValidEmail(email)) return 'Wrong email address: enter your own email address';
      const domains = domainsOf(code);
      if (!emailDomainAllowed(email, domains)) {
        return `Wrong email address: this code is for addresses at ${domains.map((d) => `@${d}`).join(', ')}`;
      }
      if (session.userId !== code.account_user_id) return 'This enrollment code belongs to another account';
      return null;
    },
    knownPersonId: async (_session, email) => (await users.byLogin(normalizeEmail(email)))?.id ?? null,
    async person(_session, email, names) {
      const person = await users.findOrCreatePerson(normalizeEmail(email), code.entity_id, names);
      return { id: person.id, email: person.login };
    },
    consume: (agentId, personId, session, attempt) =>
      codes.consume(code, { agentId, userId: personId, sessionToken: session.token, attempt }),
    logRefusal: (message, attempt) => codes.logRefusal(code, 'ERROR_CORE_ADD', message, attempt),
  };
}

export { CodeUsedUp };
