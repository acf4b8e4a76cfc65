import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import { SerialQueue } from '../util/serial.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FleetService } from '../fleets/fleets.ts';
import { enrollmentRefused, itemNotFound } from '../errors.ts';
import type { EnrollmentCodeService } from '../codes/codes.ts';
import type { AttemptDetails, InvitationService } from '../invitations/invitations.ts';
import { RateLimiter, type RateBuckets } from '../sessions/rate-limit.ts';
import { TooManyRequests, type SessionService } from '../sessions/sessions.ts';
import type { SessionContext } from '../sessions/types.ts';
import { isSharedAccount, type UserRepository } from '../sessions/user-repository.ts';
import type { SettingsStore } from '../settings/settings.ts';
import { hashSecret, randomPassword } from '../util/tokens.ts';
import { CodeUsedUp, codeGrant, invitationGrant, type EnrollmentGrant } from './grants.ts';
import { parseInventory } from '../inventory/fusion-inventory.ts';
import { InventoryError, type DeviceReports } from './reports.ts';
import type { AgentRepository, AgentRow } from './repository.ts';
import { ENROLL_STATUS, FREED, type EnrollStatus } from './status.ts';

/** The `input` of POST PluginMdmAgent; everything optional here, the rules below decide. */
export interface AgentInput {
  _email?: string | null;
  _invitation_token?: string | null;
  _serial?: string | null;
  _uuid?: string | null;
  csr?: string | null;
  firstname?: string | null;
  lastname?: string | null;
  version?: string | null;
  type?: string | null;
  /** Sent by the reference agents (Flyve dialect); stored, never required. */
  phone?: string | null;
  has_system_permission?: string | null;
  /** Base64 of the device's FusionInventory XML. */
  inventory?: string | null;
  notification_type?: string | null;
  notification_token?: string | null;
}

export const AGENT_TYPES = ['android', 'apple'] as const;
/**
 * SemVer 2.0 (pre-release and build parts allowed: the reference agent sends `2.0.0-rc.7`), with the
 * numeric core as loose as the spec's `^\d+(\.\d+)*` (a `1.2` keeps being accepted).
 */
const VERSION =
  /^(0|[1-9]\d*)(\.(0|[1-9]\d*))*(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$/;
/**
 * A replay: a POST PluginMdmAgent for a device already enrolled, made through a session opened
 * before (or the very session that made) the device's current enrollment. A device that gave up on
 * a slow request (its timeout, the balancer's 504) enrolls again through a new session, reads its
 * record and connects; the first attempt's POST, still in a slow node, arrives after. Handled as a
 * re-enrollment it would drop the password the device now holds (and, in Mosquitto mode, its broker
 * login): so it is answered as the enrollment it duplicates (201, the current agent id) and changes
 * nothing (no write, no code use, no event). A genuine re-enrollment (the app reinstalled, a factory
 * reset) always opens a new session first (initSession, as the Flyve agent does), numbered after
 * the enrollment's, and resets the agent and its password as before. Sessions are compared by
 * their numbers in opening order (sessions.seq), not by times: no clock granularity or node clock
 * skew decides it. A freed device (unenrolled, rejected) is enrolled by any POST; an agent or a
 * session from before sessions were numbered keeps the old behaviour.
 */
function isReplay(existing: AgentRow, session: SessionContext): boolean {
  return (
    !FREED.includes(existing.enroll_status) &&
    existing.enrolled_session_seq !== null &&
    session.seq !== null &&
    session.seq <= existing.enrolled_session_seq
  );
}

/** Thrown inside the enrollment's transaction (rolling it back) when the re-enrollment turns out a replay. */
class ReplayedEnrollment extends Error {
  readonly agentId: number;
  constructor(agentId: number) {
    super(`Agent ${agentId} was enrolled through a later session meanwhile`);
    this.agentId = agentId;
  }
}

/** The 201 body of POST PluginMdmAgent. */
function enrolledAnswer(agentId: number, status: string): { id: string; message: string } {
  return {
    id: String(agentId),
    message:
      status === ENROLL_STATUS.pendingApproval ? 'Device enrolled; waiting for approval by an administrator' : 'Device enrolled',
  };
}

/** Printable, no MQTT topic separators or wildcards, no spaces. */
const MQTT_SAFE_ID = /^[^/+#\s\p{Cc}]+$/u;
/**
 * How long the session that enrolled a device may read its record (and the records it links to).
 * The agent reads it right after creating it, then switches to its api_token; after that, and for
 * every other session of the person (a used QR code's user token), the agent's secrets are out of reach.
 */
export const ENROLLMENT_READ_WINDOW_MS = 15 * 60 * 1000;
/**
 * Enrollment attempts per person: each refusal is written to the invitation's log and the
 * history, so a used QR code replayed in a loop must not grow them without bound.
 */
const ATTEMPTS_PER_USER = { burst: 20, perMinute: 10 };
/**
 * Unknown invitation tokens per client address, whatever session they come in: a code's QR opens
 * as many sessions as an address may hold, each with its own attempts, so guesses at invitation
 * tokens (and their lines in the history) are bounded by address too. Past it, a 429, not logged.
 * Valid tokens never count: 1,000 phones behind one NAT enroll at once.
 */
const UNKNOWN_TOKENS_PER_ADDRESS = { burst: 30, perMinute: 30 };

/** Where agents find the broker; read when a record is served. */
export interface BrokerTargets {
  /** Where agents connect, given the `mqtt_tls` setting (an external broker decides its own TLS). */
  endpoint(tlsSetting: boolean): { host: string; port: number; tls: boolean };
  apiUrl(): string;
  /** The plaintext of a freshly drawn mqttpasswd, for a broker that keeps its own copy (Mosquitto). */
  credentialsIssued(agentId: number, password: string): Promise<void>;
}

export class EnrollmentService {
  private readonly rows: AgentRepository;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly serial = new SerialQueue();
  private readonly users: UserRepository;
  private readonly sessions: SessionService;
  private readonly invitations: InvitationService;
  private readonly codes: EnrollmentCodeService;
  private readonly fleets: FleetService;
  private readonly settings: SettingsStore;
  private readonly broker: BrokerTargets;
  private readonly reports: DeviceReports;
  private readonly attempts: RateLimiter;
  private readonly unknownTokens: RateLimiter;

  constructor(deps: {
    rows: AgentRepository;
    events: EventLog;
    work: UnitOfWork;
    users: UserRepository;
    sessions: SessionService;
    invitations: InvitationService;
    codes: EnrollmentCodeService;
    fleets: FleetService;
    settings: SettingsStore;
    broker: BrokerTargets;
    reports: DeviceReports;
    /** The rate limits' buckets: in the database with several nodes, in memory with one (rate-limit.ts). */
    rates: RateBuckets;
  }) {
    this.attempts = new RateLimiter('enroll-attempts', ATTEMPTS_PER_USER, deps.rates);
    this.unknownTokens = new RateLimiter('enroll-unknown-token', UNKNOWN_TOKENS_PER_ADDRESS, deps.rates);
    this.rows = deps.rows;
    this.events = deps.events;
    this.work = deps.work;
    this.users = deps.users;
    this.sessions = deps.sessions;
    this.invitations = deps.invitations;
    this.codes = deps.codes;
    this.fleets = deps.fleets;
    this.settings = deps.settings;
    this.broker = deps.broker;
    this.reports = deps.reports;
  }

  /**
   * POST PluginMdmAgent. Refusals come in DESIGN.md's order, each written to the log of the
   * invitation or code named; success creates (or, for a known device, reuses) computer + agent and
   * consumes the grant in one transaction.
   */
  async enroll(session: SessionContext, input: AgentInput, remoteAddr: string | null): Promise<{ id: string; message: string }> {
    // A code's sessions share its account: each device (session) gets its own bucket.
    const wait = await this.attempts.take(isSharedAccount(session) ? `session:${session.token}` : String(session.userId));
    if (wait > 0) throw new TooManyRequests('Too many enrollment attempts', wait);
    // One enrollment's checks and writes at a time (the device, its login, the grant's state are
    // read before the transaction that writes them): two devices racing for one serial, login or
    // last use of a grant are decided one after the other, as when all of it was synchronous.
    return this.serial.run(() => this.enrollChecked(session, input, remoteAddr));
  }

  private async enrollChecked(
    session: SessionContext,
    input: AgentInput,
    remoteAddr: string | null,
  ): Promise<{ id: string; message: string }> {
    const serial = clean(input._serial);
    const uuid = clean(input._uuid);
    const attempt: AttemptDetails = { remote_addr: remoteAddr, email: clean(input._email), serial, uuid };
    const grant = await this.grantOf(clean(input._invitation_token));

    const refuse = async (message: string): Promise<never> => {
      if (grant) await grant.logRefusal(message, attempt);
      else {
        await this.events.record(
          'enrollment.refused',
          `Enrollment refused: ${message}`,
          { entityId: session.entityId },
          { ...attempt, code: 'ERROR_CORE_ADD' },
        );
      }
      throw enrollmentRefused(message);
    };

    if (!grant) {
      const slowed = remoteAddr === null ? 0 : await this.unknownTokens.take(remoteAddr);
      if (slowed > 0) throw new TooManyRequests(`Too many unknown invitation tokens from ${remoteAddr}`, slowed);
      return refuse('Invalid invitation token');
    }
    const refusal = grant.refusal(session, attempt.email);
    if (refusal) await refuse(refusal);
    const email = attempt.email!;
    if (session.activeProfileId !== (await this.users.guestProfile()).id)
      await refuse('Switch to the guest profile before enrolling');
    if (!serial && !uuid) await refuse('The device serial number or UUID is required');
    // Either becomes the agent's MQTT login and the last level of its topic.
    if ([serial, uuid].some((id) => id !== null && !MQTT_SAFE_ID.test(id))) {
      await refuse(
        'The device serial number or UUID contains characters that cannot be used (/, +, #, spaces or control characters)',
      );
    }
    const version = clean(input.version);
    if (!version || !VERSION.test(version)) await refuse('The agent version is missing or invalid');
    const type = clean(input.type);
    if (!type || !(AGENT_TYPES as readonly string[]).includes(type)) await refuse('The MDM type must be android or apple');
    const inventory = clean(input.inventory);
    const inventoryXml = inventory === null ? null : decodeInventory(inventory);
    if (inventoryXml instanceof InventoryError) await refuse(`The inventory could not be read: ${inventoryXml.message}`);

    // Another person's device is not taken over by quoting its serial: an admin frees it first
    // (delete, unenroll or reject it). The same person enrolling again gets the records back.
    const existing = await this.knownDevice(grant.entityId, serial, uuid);
    if (
      existing &&
      existing.enrolled_by_user_id !== (await grant.knownPersonId(session, email)) &&
      !FREED.includes(existing.enroll_status)
    ) {
      await refuse('This device is already enrolled for another user; ask your administrator to remove it first');
    }
    // The login (and the last level of the topic) is the serial, else the uuid: a uuid equal to
    // another device's serial (or the reverse) would share that device's login, topic and commands.
    const login = loginOf(serial ?? existing?.serial ?? null, uuid);
    const owner = await this.rows.loginOwner(login);
    if (owner && owner.id !== existing?.id) {
      await refuse(
        `Another device already uses ${login} as its MQTT login (its serial number or UUID): this device cannot be enrolled with it; ask your administrator`,
      );
    }

    if (existing && isReplay(existing, session)) return enrolledAnswer(existing.id, existing.enroll_status);

    const names = {
      firstname: clean(input.firstname) ?? grant.names.firstname,
      lastname: clean(input.lastname) ?? grant.names.lastname,
    };
    try {
      const { id: agentId, status } = await this.work.run(async () => {
        const created = await this.createOrReuse(
          grant,
          session,
          existing,
          {
            serial,
            uuid,
            version: version!,
            type: type as AgentRow['type'],
            email,
            ...names,
          },
          attempt,
        );
        const id = created.id;
        const permission = clean(input.has_system_permission);
        await this.rows.setDeviceDetails(id, {
          phone: clean(input.phone),
          has_system_permission: permission === null ? null : ['1', 'true'].includes(permission.toLowerCase()) ? 1 : 0,
          notification_type: clean(input.notification_type),
          notification_token: clean(input.notification_token),
        });
        // What a device waiting for approval says about itself is not taken as fact: its inventory
        // is left out (ask for one once it is approved), as its reports are refused until then.
        if (typeof inventoryXml === 'string' && created.status !== ENROLL_STATUS.pendingApproval)
          await this.reports.inventory(id, inventoryXml, 'enrollment');
        return created;
      });
      return enrolledAnswer(agentId, status);
    } catch (error) {
      if (error instanceof CodeUsedUp) return refuse('This enrollment code has been used up');
      if (error instanceof ReplayedEnrollment) {
        const current = await this.rows.byId(error.agentId);
        if (current) return enrolledAnswer(current.id, current.enroll_status);
        return refuse('The device was removed while it enrolled; enroll it again');
      }
      throw error;
    }
  }

  /** The invitation or enrollment code a token names. */
  private async grantOf(token: string | null): Promise<EnrollmentGrant | undefined> {
    if (!token) return undefined;
    const invitation = await this.invitations.byToken(token);
    if (invitation) return invitationGrant(this.invitations, invitation);
    const code = await this.codes.byToken(token);
    return code ? codeGrant(this.codes, this.users, code) : undefined;
  }

  /** The agent a device already has in the entity: by serial first, then by uuid. */
  private async knownDevice(entityId: number, serial: string | null, uuid: string | null): Promise<AgentRow | undefined> {
    return (
      (serial ? await this.rows.bySerial(entityId, serial) : undefined) ??
      (uuid ? await this.rows.byUuid(entityId, uuid) : undefined)
    );
  }

  private async createOrReuse(
    grant: EnrollmentGrant,
    session: SessionContext,
    existing: AgentRow | undefined,
    device: {
      serial: string | null;
      uuid: string | null;
      version: string;
      type: AgentRow['type'];
      email: string;
      firstname: string | null;
      lastname: string | null;
    },
    attempt: AttemptDetails,
  ): Promise<{ id: number; status: EnrollStatus }> {
    const entityId = grant.entityId;
    const now = nowIso();
    const login = loginOf(device.serial ?? existing?.serial ?? null, device.uuid);
    const person = await grant.person(session, device.email, { firstname: device.firstname, lastname: device.lastname });
    // The uuid may already name another agent (serial matched this one): then this one keeps its own.
    // A new device's uuid was looked up already (knownDevice found none), and is used as sent anyway.
    const uuidOwner = existing && device.uuid ? await this.rows.byUuid(entityId, device.uuid) : undefined;
    const uuid = uuidOwner && existing && uuidOwner.id !== existing.id ? existing.uuid : device.uuid;
    // The same person's device enrolling again (the app reinstalled, the simulator run again) keeps
    // the approval it has: an admin approved this device for this person once. A device freed
    // since (unenrolled, rejected) starts over as the grant says.
    const status: EnrollStatus =
      existing?.enroll_status === ENROLL_STATUS.enrolled ? ENROLL_STATUS.enrolled : grant.initialStatus;
    const fields = {
      fleet_id: grant.fleetId,
      enrolled_by_user_id: person.id,
      invitation_id: grant.invitationId,
      enrollment_code_id: grant.codeId,
      enroll_status: status,
      name: login,
      serial: device.serial ?? existing?.serial ?? null,
      uuid: uuid ?? existing?.uuid ?? null,
      version: device.version,
      type: device.type,
      firstname: device.firstname,
      lastname: device.lastname,
      topic: `/${entityId}/agent/${login}`,
      mqtt_login: login,
      enrolled_session_seq: session.seq,
      now,
    };
    let agentId: number;
    if (existing) {
      // Same device again: keep its records, give it a fresh account token (the old install loses it).
      agentId = existing.id;
      // First write of the transaction, and conditional: `existing` was read before it, and another
      // node may have enrolled the device through a later session since. Then this POST is a replay
      // after all, and the whole transaction rolls back (the person, the code's use, the events:
      // nothing of it is kept; the events' effects, such as Mosquitto's client delete, run only
      // after a commit).
      if (!(await this.rows.reenroll(agentId, fields))) throw new ReplayedEnrollment(agentId);
      await this.rows.updateComputer(existing.computer_id, { name: login, serial: device.serial, uuid, user_id: person.id, now });
      await this.sessions.closeAllOf(existing.account_user_id);
      await this.users.rotateToken(existing.account_user_id);
    } else {
      const computerId = await this.rows.insertComputer({
        entity_id: entityId,
        name: login,
        serial: device.serial,
        uuid: device.uuid,
        user_id: person.id,
        now,
      });
      const account = await this.users.createAgentAccount(entityId, login);
      agentId = await this.rows.insertAgent({
        ...fields,
        entity_id: entityId,
        computer_id: computerId,
        account_user_id: account.id,
      });
    }
    await grant.consume(agentId, person.id, session, attempt);
    await this.sessions.bindEnrollment(session.token, agentId, now);
    const waiting =
      status === ENROLL_STATUS.pendingApproval
        ? ', waiting for approval'
        : grant.initialStatus === ENROLL_STATUS.pendingApproval
          ? ' (enrolled before: it needs no new approval)'
          : '';
    await this.events.record(
      existing ? 'agent.reenrolled' : 'agent.enrolled',
      `${login} enrolled by ${person.email}${existing ? ' (again)' : ''}${waiting}`,
      { entityId, invitationId: grant.invitationId, agentId },
      {
        serial: fields.serial,
        uuid: fields.uuid,
        type: device.type,
        version: device.version,
        code_id: grant.codeId,
        enroll_status: status,
      },
    );
    return { id: agentId, status };
  }

  /**
   * GET PluginMdmAgent/<id>: for the session that enrolled it (guest profile, for a short while),
   * or the agent's own account. Each read draws a new MQTT password and keeps only its hash.
   */
  async record(session: SessionContext, id: number): Promise<Record<string, unknown>> {
    const agent = await this.ownAgent(session);
    if (!agent || agent.id !== id) throw itemNotFound();
    const mqttpasswd = randomPassword(40);
    await this.rows.setPasswordHash(id, hashSecret(mqttpasswd), nowIso());
    // The broker must know the password before the agent, which connects right after this read.
    await this.broker.credentialsIssued(id, mqttpasswd);
    const settings = this.settings.get();
    const endpoint = this.broker.endpoint(settings.mqtt_tls);
    const account = (await this.users.byId(agent.account_user_id))!;
    const base = this.broker.apiUrl();
    return {
      id: agent.id,
      name: agent.name,
      version: agent.version,
      computers_id: agent.computer_id,
      wipe: agent.wipe,
      lock: agent.lock,
      enroll_status: agent.enroll_status,
      entities_id: agent.entity_id,
      plugin_mdm_fleets_id: agent.fleet_id,
      // The reference agents' names (Flyve dialect): the Android agent throws without the fleet's.
      plugin_flyvemdm_fleets_id: agent.fleet_id,
      mdm_type: agent.type,
      is_online: agent.is_online,
      last_report: agent.last_report,
      last_contact: agent.last_contact,
      certificate: agent.certificate,
      topic: agent.topic,
      mqttpasswd,
      api_token: account.user_token,
      broker: endpoint.host,
      port: endpoint.port,
      tls: endpoint.tls ? 1 : 0,
      android_bugcollecctor_url: settings.android_bugcollector_url,
      android_bugcollector_login: settings.android_bugcollector_login,
      android_bugcollector_passwd: settings.android_bugcollector_passwd,
      serial: agent.serial,
      uuid: agent.uuid,
      type: agent.type,
      links: [
        { rel: 'Computer', href: `${base}/Computer/${agent.computer_id}` },
        { rel: 'Entity', href: `${base}/Entity/${agent.entity_id}` },
        { rel: 'PluginMdmFleet', href: `${base}/PluginMdmFleet/${agent.fleet_id}` },
      ],
    };
  }

  /**
   * The one agent a session acts for: its own, for an agent's account; for a person's session, the
   * agent that very session enrolled, within ENROLLMENT_READ_WINDOW_MS, under the guest profile.
   * Any other session (another of the person's, e.g. opened with a used QR code) has none.
   */
  private async ownAgent(session: SessionContext): Promise<AgentRow | undefined> {
    if (session.userKind === 'agent') return this.rows.byAccount(session.userId);
    if (session.enrolledAgentId === null || session.enrolledAt === null) return undefined;
    if (Date.now() - Date.parse(session.enrolledAt) > ENROLLMENT_READ_WINDOW_MS) return undefined;
    if (session.activeProfileId !== (await this.users.guestProfile()).id) return undefined;
    const agent = await this.rows.byId(session.enrolledAgentId);
    if (!agent) return undefined;
    // A code's sessions all share its account: the code's log names the session of the latest use.
    if (agent.enrollment_code_id !== null)
      return (await this.codes.lastEnrolledInSession(agent.id, session.token)) ? agent : undefined;
    // Freed by an admin and enrolled by someone else since: no longer this session's.
    return agent.enrolled_by_user_id === session.userId ? agent : undefined;
  }

  /** The targets of the record's links: only those of the session's own agent (404 for any other). */
  async computer(session: SessionContext, id: number): Promise<Record<string, unknown>> {
    const own = await this.ownAgent(session);
    const row = own?.computer_id === id ? await this.rows.computer(id) : undefined;
    if (!row) throw itemNotFound();
    return {
      id: row.id,
      name: row.name,
      serial: row.serial,
      uuid: row.uuid,
      entities_id: row.entity_id,
      users_id: row.user_id,
      date_creation: row.created_at,
      date_mod: row.updated_at,
    };
  }

  async entity(session: SessionContext, id: number): Promise<Record<string, unknown>> {
    const row = (await this.ownAgent(session))?.entity_id === id ? await this.rows.entity(id) : undefined;
    if (!row) throw itemNotFound();
    return { id: row.id, name: row.name, completename: row.name, entities_id: row.parent_id ?? 0, date_creation: row.created_at };
  }

  async fleet(session: SessionContext, id: number): Promise<Record<string, unknown>> {
    const row = (await this.ownAgent(session))?.fleet_id === id ? await this.fleets.byId(id) : undefined;
    if (!row) throw itemNotFound();
    return { id: row.id, name: row.name, entities_id: row.entity_id, is_default: row.is_default, date_creation: row.created_at };
  }
}

/** The create input's `inventory`: base64 of FusionInventory XML; an InventoryError when unusable. */
function decodeInventory(base64: string): string | InventoryError {
  const compact = base64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact)) return new InventoryError('it is not base64');
  try {
    const xml = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(compact, 'base64'));
    parseInventory(xml);
    return xml;
  } catch (error) {
    return error instanceof InventoryError ? error : new InventoryError('it is not UTF-8 text');
  }
}

/** An agent's MQTT login: its serial, else its uuid (one of them is always there). */
function loginOf(serial: string | null, uuid: string | null): string {
  return (serial ?? uuid)!;
}

function clean(value: string | undefined | null): string | null {
  const trimmed = typeof value === 'string' ? value.trim() : '';
  return trimmed === '' ? null : trimmed;
}
