import { nowIso } from '../db/database.ts';
import { enrollmentLinks, type LinkTargets } from '../deeplink/enrollment-links.ts';
import type { SettingsStore } from '../settings/settings.ts';
import { statusOf, type InvitationStatus } from './invitations.ts';
import type { InvitationRepository } from './repository.ts';
import { fleetScopeParam } from '../fleets/scope.ts';

/** What an invitation's email is composed from: recipient, names, expiry and links, nothing of the admin view. */
export interface InvitationForMailing {
  id: number;
  entity_id: number;
  email: string;
  firstname: string | null;
  lastname: string | null;
  expires_at: string;
  status: InvitationStatus;
  deeplink: string;
  app_link: string;
}

/** The narrow read the mail room needs of invitations (it declares it as its port). */
export class InvitationMailQuery {
  private readonly repository: InvitationRepository;
  private readonly settings: SettingsStore;
  private readonly links: LinkTargets;

  constructor(deps: { repository: InvitationRepository; settings: SettingsStore; links: LinkTargets }) {
    this.repository = deps.repository;
    this.settings = deps.settings;
    this.links = deps.links;
  }

  /** Undefined when the invitation is gone. */
  async forMail(id: number): Promise<InvitationForMailing | undefined> {
    const facts = await this.repository.mailFacts(id);
    if (!facts) return undefined;
    const links = enrollmentLinks(this.settings, this.links, facts.user_token, facts.token);
    return {
      id: facts.id,
      entity_id: facts.entity_id,
      email: facts.email,
      firstname: facts.firstname,
      lastname: facts.lastname,
      expires_at: facts.expires_at,
      status: statusOf(facts),
      deeplink: links.url,
      app_link: links.app_link,
    };
  }

  /**
   * Of these invitations, those still pending (neither used, revoked nor expired), and within the
   * request's fleet scope (a scoped operator's retry of every failed email retries its fleets' only).
   */
  pendingAmong(ids: number[]): Promise<number[]> {
    return this.repository.pendingAmong(ids, nowIso(), fleetScopeParam());
  }
}
