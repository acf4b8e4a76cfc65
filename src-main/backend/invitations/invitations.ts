import { randomUUID } from 'node:crypto';
import { nowIso } from '../db/database.ts';
import { enrollmentLinks, type EnrollmentLinks, type LinkTargets } from '../deeplink/enrollment-links.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { UserRepository } from '../sessions/user-repository.ts';
import type { SettingsStore } from '../settings/settings.ts';
import { randomHex } from '../util/tokens.ts';
import type { InvitationDeliveries, InvitationMailer } from './ports.ts';
import type { InvitationDetails, InvitationRepository, InvitationRow } from './repository.ts';
import { INVITATION_LIFETIME_DAYS, isValidEmail, normalizeEmail } from '../../../src-shared/contract/rules.ts';
import type { Invitation, InvitationFilter, InvitationLogEntry, InvitationStatus } from '../../../src-shared/contract/index.ts';
import { fleetScopeParam, inFleetScope } from '../fleets/scope.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

export type { InvitationFilter, InvitationLogEntry, InvitationStatus };

export interface InvitationInput {
  email: string;
  firstname?: string | null;
  lastname?: string | null;
  fleet?: string | null;
  days?: number | null;
}

export type { LinkTargets };

/** "x@y already has a pending invitation (#12, valid until …)". */
export function pendingMessage(row: Pick<InvitationRow, 'id' | 'email' | 'expires_at'>): string {
  return `${row.email} already has a pending invitation (#${row.id}, valid until ${row.expires_at.slice(0, 16).replace('T', ' ')} UTC)`;
}

export function statusOf(row: Pick<InvitationRow, 'status' | 'expires_at'>, now = Date.now()): InvitationStatus {
  if (row.status === 'pending' && Date.parse(row.expires_at) <= now) return 'expired';
  return row.status;
}

export interface CreateOptions {
  /** Queue their emails; default: the mail_send_on_create setting. */
  send?: boolean;
  entityId?: number;
  /** Give the emails a batch id (for a progress bar); default: when more than one. */
  batch?: boolean;
  /** Allow an address that already has a pending invitation (a second device). */
  allowPending?: boolean;
}

/** Invitations: their creation (and the email it queues), their life, and what the admin sees of them. */
export class InvitationService {
  private readonly repository: InvitationRepository;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly users: UserRepository;
  private readonly fleets: FleetService;
  private readonly settings: SettingsStore;
  private readonly links: LinkTargets;
  private readonly mailer: InvitationMailer;
  private readonly deliveries: InvitationDeliveries;

  constructor(deps: {
    repository: InvitationRepository;
    events: EventLog;
    work: UnitOfWork;
    users: UserRepository;
    fleets: FleetService;
    settings: SettingsStore;
    links: LinkTargets;
    /** Queues invitation emails (mail/). */
    mailer: InvitationMailer;
    /** Email delivery state shown with each invitation (mail/). */
    deliveries: InvitationDeliveries;
  }) {
    this.repository = deps.repository;
    this.events = deps.events;
    this.work = deps.work;
    this.users = deps.users;
    this.fleets = deps.fleets;
    this.settings = deps.settings;
    this.links = deps.links;
    this.mailer = deps.mailer;
    this.deliveries = deps.deliveries;
  }

  /** The newest pending, unexpired invitation of an address, if any. */
  pendingFor(email: string, entityId = 1): Promise<InvitationRow | undefined> {
    return this.repository.pendingFor(normalizeEmail(email), entityId, nowIso());
  }

  /**
   * Validates every input first, so a bad row creates nothing; row numbers start at 1. An address
   * that already has a pending invitation is refused unless `allowPending` (a second device).
   */
  async validate(
    inputs: InvitationInput[],
    entityId = 1,
    { allowPending = true }: { allowPending?: boolean } = {},
  ): Promise<string[]> {
    const errors: string[] = [];
    const seen = new Map<string, number>();
    for (const [index, input] of inputs.entries()) {
      const row = index + 1;
      const email = normalizeEmail(input.email ?? '');
      if (!email) errors.push(`row ${row}: email is missing`);
      else if (!isValidEmail(email)) errors.push(`row ${row}: "${input.email}" is not a valid email address`);
      else if (seen.has(email)) errors.push(`row ${row}: ${email} already appears in row ${seen.get(email)}`);
      else {
        seen.set(email, row);
        const pending = allowPending ? undefined : await this.pendingFor(email, entityId);
        if (pending) errors.push(`row ${row}: ${pendingMessage(pending)}`);
      }
      const days = input.days ?? this.settings.get().invitation_lifetime_days;
      if (!Number.isInteger(days) || days < INVITATION_LIFETIME_DAYS.min || days > INVITATION_LIFETIME_DAYS.max) {
        errors.push(`row ${row}: lifetime must be ${INVITATION_LIFETIME_DAYS.min} to ${INVITATION_LIFETIME_DAYS.max} days`);
      }
      try {
        await this.fleets.resolve(entityId, input.fleet);
      } catch (error) {
        errors.push(`row ${row}: ${(error as Error).message}`);
      }
    }
    return errors;
  }

  /**
   * Creates invitations, all or nothing after every row validated, and, when `send`, queues their
   * emails in the same transaction: either both happen or neither. Sending starts after the commit.
   */
  create(
    inputs: InvitationInput[],
    options: CreateOptions = {},
  ): Promise<{ rows: InvitationRow[]; batch_id: string | null; queued: number }> {
    const entityId = options.entityId ?? 1;
    const send = options.send ?? this.settings.get().mail_send_on_create;
    if (inputs.length === 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', 'No invitations to create');
    // Checked in the transaction that inserts: two requests for one email cannot both pass.
    return this.work.run(async () => {
      const errors = await this.validate(inputs, entityId, { allowPending: options.allowPending });
      if (errors.length > 0) {
        const single = inputs.length === 1;
        throw new ApiError(400, 'ERROR_BAD_REQUEST', single ? errors[0]!.replace(/^row 1: /, '') : errors.join('; '));
      }
      const rows: InvitationRow[] = [];
      for (const input of inputs) rows.push(await this.insert(input, entityId));
      const batchId = send && (options.batch ?? rows.length > 1) ? randomUUID() : null;
      const queued = send
        ? await this.mailer.queue(
            rows.map((r) => r.id),
            batchId,
          )
        : 0;
      return { rows, batch_id: batchId, queued };
    });
  }

  private async insert(input: InvitationInput, entityId: number): Promise<InvitationRow> {
    const email = normalizeEmail(input.email);
    const firstname = input.firstname?.trim() || null;
    const lastname = input.lastname?.trim() || null;
    const fleet = await this.fleets.resolve(entityId, input.fleet);
    const user = await this.users.findOrCreatePerson(email, entityId, { firstname, lastname });
    const days = input.days ?? this.settings.get().invitation_lifetime_days;
    const now = Date.now();
    const id = await this.repository.insert({
      entity_id: entityId,
      user_id: user.id,
      fleet_id: fleet.id,
      email,
      firstname,
      lastname,
      token: randomHex(32),
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + days * DAY_MS).toISOString(),
    });
    await this.events.record(
      'invitation.created',
      `Invitation created for ${email}`,
      { entityId, invitationId: id },
      { email, fleet: fleet.name, days },
    );
    return this.get(id);
  }

  /** Sends an invitation's email again: same token, same expiry. Only for pending invitations. */
  async resend(id: number): Promise<InvitationRow> {
    const status = statusOf(await this.get(id));
    if (status !== 'pending') {
      const why = { done: 'has already been used', revoked: 'was revoked', expired: 'has expired; create a new invitation' }[
        status
      ];
      throw new ApiError(409, 'ERROR_INVITATION_NOT_PENDING', `This invitation ${why}`);
    }
    await this.mailer.queue([id], null);
    return this.get(id);
  }

  /** An invitation of a fleet the request may see (fleets/scope.ts): another one answers 404, as if it did not exist. */
  async get(id: number): Promise<InvitationRow> {
    const row = await this.repository.get(id);
    if (!row || !inFleetScope(row.fleet_id)) throw itemNotFound('Invitation not found');
    return row;
  }

  byToken(token: string): Promise<InvitationRow | undefined> {
    return this.repository.byToken(token);
  }

  /** A page of invitations as the admin sees them: a fixed number of statements whatever its length. */
  async list(filter: InvitationFilter = {}): Promise<{ items: InvitationView[]; total: number }> {
    const { rows, total } = await this.repository.list(filter, nowIso(), fleetScopeParam());
    return { items: await this.present(rows), total };
  }

  async revoke(id: number): Promise<InvitationRow> {
    const row = await this.get(id);
    if (row.status === 'done') throw new ApiError(409, 'ERROR_INVITATION_USED', 'This invitation has already been used');
    if (row.status === 'revoked') return row;
    return this.work.run(async () => {
      await this.repository.revoke(id, nowIso());
      await this.events.record(
        'invitation.revoked',
        `Invitation for ${row.email} revoked`,
        { entityId: row.entity_id, invitationId: id },
        { email: row.email, before: { status: row.status }, after: { status: 'revoked' } },
      );
      return this.get(id);
    });
  }

  async remove(id: number): Promise<void> {
    const row = await this.get(id);
    await this.work.run(async () => {
      await this.repository.remove(id);
      // Its fleet is named: once the invitation is gone, the live stream still knows whom to tell.
      await this.events.record(
        'invitation.deleted',
        `Invitation for ${row.email} deleted`,
        { entityId: row.entity_id, invitationId: id },
        { fleet_id: row.fleet_id, email: row.email, before: { email: row.email, status: row.status }, after: null },
      );
    });
  }

  /** Marks the invitation used; call inside the transaction that creates the agent. */
  async consume(row: InvitationRow, agentId: number, attempt: AttemptDetails): Promise<void> {
    const at = nowIso();
    if (!(await this.repository.markUsed(row.id, agentId, at)))
      throw new ApiError(400, 'ERROR_CORE_ADD', 'This invitation has already been used');
    await this.repository.log({ invitation_id: row.id, at, outcome: 'used', code: null, message: 'Device enrolled', ...attempt });
  }

  /** Writes a refused attempt to the invitation's log, and notes when its token was last used. */
  async logRefusal(row: InvitationRow, code: string, message: string, attempt: AttemptDetails): Promise<void> {
    const at = nowIso();
    await this.work.run(async () => {
      await this.repository.log({ invitation_id: row.id, at, outcome: 'refused', code, message, ...attempt });
      await this.repository.touch(row.id, at);
      await this.events.record(
        'invitation.refused',
        `Enrollment refused for ${row.email}: ${message}`,
        { entityId: row.entity_id, invitationId: row.id },
        { code, ...attempt },
      );
    });
  }

  logOf(id: number): Promise<InvitationLogEntry[]> {
    return this.repository.logOf(id);
  }

  /** The deeplink data and URLs for an invitation, with today's settings. */
  async deeplinkOf(row: InvitationRow): Promise<EnrollmentLinks> {
    return enrollmentLinks(this.settings, this.links, (await this.users.byId(row.user_id))!.user_token, row.token);
  }

  /** What the admin API and CLI show of an invitation. */
  async view(row: Pick<InvitationRow, 'id'>): Promise<InvitationView> {
    const [view] = await this.views([row]);
    if (!view) throw itemNotFound('Invitation not found');
    return view;
  }

  /** Views of many invitations (a bulk creation), in their order, read at once. */
  async views(rows: Pick<InvitationRow, 'id'>[]): Promise<InvitationView[]> {
    const byId = new Map(
      (await this.present(await this.repository.details(rows.map((r) => r.id)))).map((view) => [view.id, view]),
    );
    return rows.flatMap((r) => byId.get(r.id) ?? []);
  }

  private async present(rows: InvitationDetails[]): Promise<InvitationView[]> {
    const deliveries = await this.deliveries.deliveriesOf(rows.map((r) => r.id));
    const helpdesk = this.settings.helpdesk();
    return rows.map((row) => {
      const deeplink = enrollmentLinks(this.settings, this.links, row.user_token, row.token);
      return {
        id: row.id,
        entity_id: row.entity_id,
        email: row.email,
        firstname: row.firstname,
        lastname: row.lastname,
        status: statusOf(row),
        created_at: row.created_at,
        expires_at: row.expires_at,
        used_at: row.used_at,
        last_used_at: row.last_used_at,
        revoked_at: row.revoked_at,
        fleet_id: row.fleet_id,
        fleet: row.fleet,
        agent: row.agent_id ? row.agent : null,
        refused_attempts: row.refused_attempts,
        invitation_token: row.token,
        user_token: row.user_token,
        deeplink: deeplink.url,
        deeplink_data: deeplink.data,
        app_link: deeplink.app_link,
        /** The invitation email: null when none was ever queued. */
        delivery: deliveries.get(row.id) ?? null,
        helpdesk,
      };
    });
  }
}

/** What the admin API and CLI show of an invitation: the contract's Invitation. */
export type InvitationView = Invitation;

export interface AttemptDetails {
  remote_addr: string | null;
  email: string | null;
  serial: string | null;
  uuid: string | null;
}
