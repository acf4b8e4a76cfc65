import { createHash } from 'node:crypto';
import { nowIso } from '../db/database.ts';
import { enrollmentLinks, type EnrollmentLinks, type LinkTargets } from '../deeplink/enrollment-links.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { UserRepository } from '../sessions/user-repository.ts';
import type { SettingsStore } from '../settings/settings.ts';
import { randomHex } from '../util/tokens.ts';
import type { CodeDetails, CodeRepository, CodeRow } from './repository.ts';
import { CODE_LIFETIME_DAYS, CODE_MAX_USES } from '../../../src-shared/contract/rules.ts';
import type { CodeApproval, CodeLogEntry, CodeStatus, EnrollmentCode } from '../../../src-shared/contract/index.ts';
import { fleetScopeParam, inFleetScope } from '../fleets/scope.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

export type { CodeApproval, CodeLogEntry, CodeStatus };

export interface CodeInput {
  name: string;
  fleet?: string | null;
  domains?: string[] | null;
  max_uses?: number | null;
  /** Lifetime in days; null or absent: the code never expires. */
  days?: number | null;
  approval?: CodeApproval;
}

export interface CodeAttempt {
  remote_addr: string | null;
  email: string | null;
  serial: string | null;
  uuid: string | null;
}

// A DNS name: dotted labels of letters, digits and inner hyphens.
const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

export function statusOfCode(
  row: Pick<CodeRow, 'revoked_at' | 'expires_at' | 'max_uses' | 'uses'>,
  now = Date.now(),
): CodeStatus {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at && Date.parse(row.expires_at) <= now) return 'expired';
  if (row.max_uses !== null && row.uses >= row.max_uses) return 'used_up';
  return 'active';
}

export function domainsOf(row: Pick<CodeRow, 'domains'>): string[] {
  return JSON.parse(row.domains) as string[];
}

/** Whether `email`'s domain is one the code allows (exactly; an empty list allows any). */
export function emailDomainAllowed(email: string, domains: string[]): boolean {
  if (domains.length === 0) return true;
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return domains.includes(domain);
}

export const sessionHash = (token: string) => createHash('sha256').update(token).digest('hex');

/** The code was used up between the check and the transaction (a concurrent enrollment won). */
export class CodeUsedUp extends Error {}

/**
 * Enrollment codes: one deeplink/QR code for many devices, bounded by email domains, uses, expiry
 * and approval. The code's account (field 2 of the deeplink) only opens sessions; each device is
 * tied to the person whose email it gives.
 */
export class EnrollmentCodeService {
  private readonly repository: CodeRepository;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly users: UserRepository;
  private readonly fleets: FleetService;
  private readonly settings: SettingsStore;
  private readonly links: LinkTargets;

  constructor(deps: {
    repository: CodeRepository;
    events: EventLog;
    work: UnitOfWork;
    users: UserRepository;
    fleets: FleetService;
    settings: SettingsStore;
    links: LinkTargets;
  }) {
    this.repository = deps.repository;
    this.events = deps.events;
    this.work = deps.work;
    this.users = deps.users;
    this.fleets = deps.fleets;
    this.settings = deps.settings;
    this.links = deps.links;
  }

  /** Checks an input; returns the problems (empty when it can be created). */
  async validate(input: CodeInput, entityId = 1): Promise<string[]> {
    const errors: string[] = [];
    if (!input.name?.trim()) errors.push('name is missing');
    for (const domain of input.domains ?? []) {
      if (!DOMAIN.test(normalizeDomain(domain))) errors.push(`"${domain}" is not a valid email domain`);
    }
    if (input.max_uses != null && (!Number.isInteger(input.max_uses) || input.max_uses < 1 || input.max_uses > CODE_MAX_USES)) {
      errors.push(`maximum uses must be 1 to ${CODE_MAX_USES} (or none for unlimited)`);
    }
    if (
      input.days != null &&
      (!Number.isInteger(input.days) || input.days < CODE_LIFETIME_DAYS.min || input.days > CODE_LIFETIME_DAYS.max)
    ) {
      errors.push(`lifetime must be ${CODE_LIFETIME_DAYS.min} to ${CODE_LIFETIME_DAYS.max} days (or none)`);
    }
    try {
      await this.fleets.resolve(entityId, input.fleet);
    } catch (error) {
      errors.push((error as Error).message);
    }
    return errors;
  }

  async create(input: CodeInput, entityId = 1): Promise<CodeRow> {
    const errors = await this.validate(input, entityId);
    if (errors.length > 0) throw new ApiError(400, 'ERROR_BAD_REQUEST', errors.join('; '));
    const domains = [...new Set((input.domains ?? []).map(normalizeDomain))];
    return this.work.run(async () => {
      const fleet = await this.fleets.resolve(entityId, input.fleet);
      const name = input.name.trim();
      const account = await this.users.createCodeAccount(entityId, name);
      const now = Date.now();
      const id = await this.repository.insert({
        entity_id: entityId,
        fleet_id: fleet.id,
        account_user_id: account.id,
        name,
        token: randomHex(32),
        domains: JSON.stringify(domains),
        max_uses: input.max_uses ?? null,
        approval: input.approval ?? 'auto',
        created_at: new Date(now).toISOString(),
        expires_at: input.days == null ? null : new Date(now + input.days * DAY_MS).toISOString(),
      });
      await this.events.record(
        'code.created',
        `Enrollment code "${name}" created`,
        { entityId },
        {
          code_id: id,
          fleet: fleet.name,
          domains,
          max_uses: input.max_uses ?? null,
          days: input.days ?? null,
          approval: input.approval ?? 'auto',
        },
      );
      return this.get(id);
    });
  }

  /** A code of a fleet the request may see (fleets/scope.ts): another one answers 404, as if it did not exist. */
  async get(id: number): Promise<CodeRow> {
    const row = await this.repository.get(id);
    if (!row || !inFleetScope(row.fleet_id)) throw itemNotFound('Enrollment code not found');
    return row;
  }

  byToken(token: string): Promise<CodeRow | undefined> {
    return this.repository.byToken(token);
  }

  /** Whether this user is a code's account (it enrolls devices, it never downloads). */
  isCodeAccount(userId: number): Promise<boolean> {
    return this.repository.isAccount(userId);
  }

  /** Every code as the admin sees it, newest first: a fixed number of statements. */
  async list(): Promise<CodeView[]> {
    return (await this.repository.details(undefined, fleetScopeParam())).map((row) => this.present(row));
  }

  async revoke(id: number): Promise<CodeRow> {
    const row = await this.get(id);
    if (row.revoked_at) return row;
    return this.work.run(async () => {
      await this.repository.revoke(id, nowIso());
      await this.events.record(
        'code.revoked',
        `Enrollment code "${row.name}" revoked`,
        { entityId: row.entity_id },
        { code_id: id },
      );
      return this.get(id);
    });
  }

  /** New code token and account token: every printed or sent copy stops working. */
  async rotate(id: number): Promise<CodeRow> {
    const row = await this.get(id);
    return this.work.run(async () => {
      await this.repository.rotate(id, randomHex(32), nowIso());
      await this.users.rotateToken(row.account_user_id);
      await this.events.record(
        'code.rotated',
        `Enrollment code "${row.name}" rotated: printed and shared copies of its QR code and link no longer work`,
        { entityId: row.entity_id },
        { code_id: id },
      );
      return this.get(id);
    });
  }

  /** Counts one use; call inside the transaction that creates the agent. Throws CodeUsedUp when none is left. */
  async consume(
    row: CodeRow,
    use: { agentId: number; userId: number; sessionToken: string; attempt: CodeAttempt },
  ): Promise<void> {
    const at = nowIso();
    if (!(await this.repository.use(row.id, at))) throw new CodeUsedUp();
    await this.repository.log({
      code_id: row.id,
      at,
      outcome: 'used',
      code: null,
      message: 'Device enrolled',
      ...use.attempt,
      user_id: use.userId,
      agent_id: use.agentId,
      session_hash: sessionHash(use.sessionToken),
    });
  }

  async logRefusal(row: CodeRow, code: string, message: string, attempt: CodeAttempt): Promise<void> {
    const at = nowIso();
    await this.work.run(async () => {
      await this.repository.log({
        code_id: row.id,
        at,
        outcome: 'refused',
        code,
        message,
        ...attempt,
        user_id: null,
        agent_id: null,
        session_hash: null,
      });
      await this.repository.touch(row.id, at);
      await this.events.record(
        'code.refused',
        `Enrollment with code "${row.name}" refused for ${attempt.email ?? '(no email)'}: ${message}`,
        { entityId: row.entity_id },
        {
          code_id: row.id,
          code,
          ...attempt,
        },
      );
    });
  }

  /**
   * Whether this session made the agent's latest enrollment with a code. Every session of a code
   * shares its account, so the account alone cannot tell whose device an agent is.
   */
  async lastEnrolledInSession(agentId: number, sessionToken: string): Promise<boolean> {
    return (await this.repository.lastUseSession(agentId)) === sessionHash(sessionToken);
  }

  logOf(id: number): Promise<CodeLogEntry[]> {
    return this.repository.logOf(id);
  }

  async deeplinkOf(row: CodeRow): Promise<EnrollmentLinks> {
    return enrollmentLinks(this.settings, this.links, (await this.users.byId(row.account_user_id))!.user_token, row.token);
  }

  /** What the admin API and CLI show of a code. */
  async view(row: Pick<CodeRow, 'id'>): Promise<CodeView> {
    const [details] = await this.repository.details([row.id]);
    if (!details) throw itemNotFound('Enrollment code not found');
    return this.present(details);
  }

  private present(row: CodeDetails): EnrollmentCode {
    const links = enrollmentLinks(this.settings, this.links, row.user_token, row.token);
    return {
      id: row.id,
      entity_id: row.entity_id,
      name: row.name,
      status: statusOfCode(row),
      fleet_id: row.fleet_id,
      fleet: row.fleet,
      domains: domainsOf(row),
      max_uses: row.max_uses,
      uses: row.uses,
      approval: row.approval,
      created_at: row.created_at,
      expires_at: row.expires_at,
      revoked_at: row.revoked_at,
      rotated_at: row.rotated_at,
      last_used_at: row.last_used_at,
      refused_attempts: row.refused_attempts,
      pending_approval: row.pending_approval,
      token: row.token,
      user_token: row.user_token,
      deeplink: links.url,
      deeplink_data: links.data,
      app_link: links.app_link,
      helpdesk: this.settings.helpdesk(),
    };
  }
}

export type CodeView = ReturnType<EnrollmentCodeService['present']>;

function normalizeDomain(domain: string): string {
  return domain.trim().toLowerCase().replace(/^@/, '');
}
