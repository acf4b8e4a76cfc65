// The enrollment sequence of spec §1/§3, step by step, as a real agent performs it.
import { randomInt, randomUUID } from 'node:crypto';
import { AgentApiClient, AgentApiError } from './api-client.ts';
import type { AgentCreationInput, AgentRecord, FullSession } from './api-client.ts';
import { decodeDeeplink } from './deeplink.ts';
import type { DeeplinkData } from './deeplink.ts';
import { SPEC_DIALECT, type Dialect } from './dialect.ts';
import { fakeInventoryXml } from './inventory.ts';

export type AgentType = 'android' | 'apple';

export interface EnrollOptions {
  /** Deeplink page URL, app link or bare base64 data. */
  deeplink: string;
  /** The invited address; the deeplink does not carry it. */
  email: string;
  /** Generated (realistic, random) when not given. */
  serial?: string;
  /** Generated (random v4) when not given. */
  uuid?: string;
  /** Default android. Not checked here, so tests can make the server refuse other values. */
  type?: AgentType;
  /** Agent software version. Default DEFAULT_AGENT_VERSION. */
  version?: string;
  firstname?: string;
  lastname?: string;
  /** Time limit of each request in ms. Default 30 s. */
  timeoutMs?: number;
  /** The wire dialect (dialect.ts): the spec's agent (default) or a Flyve agent. */
  dialect?: Dialect;
  /** The Android version the phone runs (its inventory says so; value policies above it are incompatible). Default: one per serial. */
  androidVersion?: string;
  /** Whether the agent is a system app (the Flyve agent says `has_system_permission`). Default false. */
  system?: boolean;
}

/** Receives one human-readable line per step. */
export type StepLog = (line: string) => void;

export const DEFAULT_AGENT_VERSION = '1.0.0';

export interface EnrollmentResult {
  /** The REST base URL from the deeplink. */
  backendUrl: string;
  agentId: string;
  /** Confirmation text of the creation response. */
  creationMessage: string;
  agent: AgentRecord;
  /** Replaces the user token, which is discarded (spec §5). */
  apiToken: string;
  serial: string;
  uuid: string;
  type: string;
  /** As given in EnrollOptions. */
  androidVersion?: string;
  system?: boolean;
  version: string;
  /** Whether step 3 switched to the guest profile (false: already active). */
  switchedProfile: boolean;
  guestProfileId: number;
  /** Helpdesk info from the deeplink (fields 4–7), as an agent would show it. */
  helpdesk: { name: string; phone: string; website: string; email: string };
  dialect: Dialect;
}

/** What the MQTT connection needs after enrollment (spec §5.6, DESIGN.md "MQTT"). */
export interface MqttCredentials {
  host: string;
  port: number;
  tls: boolean;
  /** The device serial (the uuid when enrolled without a serial). */
  username: string;
  password: string;
  topic: string;
}

const STEPS = 5;

/**
 * Enrolls a device: initSession → getFullSession → [changeActiveProfile] → POST PluginMdmAgent
 * → GET PluginMdmAgent/<id>. Every step logs one line; the first failure is logged and thrown
 * (an AgentApiError carries the server's status, code and message; a DeeplinkError bad data).
 */
export async function enrollDevice(options: EnrollOptions, log: StepLog = () => {}): Promise<EnrollmentResult> {
  if (options.email.trim() === '') throw new Error('the invited email address is required');
  let invitation: DeeplinkData;
  try {
    invitation = decodeDeeplink(options.deeplink);
  } catch (error) {
    log(`deeplink … failed: ${error instanceof Error ? error.message : String(error)}`);
    throw error;
  }
  const type = options.type ?? 'android';
  const serial = options.serial ?? randomSerial(type);
  const uuid = options.uuid ?? randomUUID();
  const dialect = options.dialect ?? SPEC_DIALECT;
  const version = options.version ?? (options.dialect ? dialect.defaultVersion : DEFAULT_AGENT_VERSION);
  log(
    `deeplink … ok (backend ${invitation.backendUrl}, ${invitation.format} format${dialect.name === 'flyve' ? `; Flyve agent ${version}, reports over ${dialect.reports.toUpperCase()}` : ''})`,
  );

  const client = new AgentApiClient(invitation.backendUrl, { ...optionalTimeout(options.timeoutMs), dialect });

  await step(
    log,
    1,
    'initSession',
    () => client.initSession(invitation.userToken),
    (token) => `session ${shorten(token)}`,
  );

  const { activeProfileId, guestProfileId } = await step(
    log,
    2,
    'getFullSession',
    async () => {
      const profiles = readProfiles(await client.getFullSession(), dialect);
      if (profiles.guestProfileId === undefined) {
        throw new AgentApiError(
          'GET getFullSession',
          200,
          'BAD_RESPONSE',
          `full session has no ${dialect.guestProfileKeys.join(' or ')}`,
        );
      }
      return { activeProfileId: profiles.activeProfileId, guestProfileId: profiles.guestProfileId };
    },
    (profiles) => `active profile ${profiles.activeProfileId ?? 'none'}, guest profile ${profiles.guestProfileId}`,
  );

  // The Android Flyve agent never reads the active profile: it always switches.
  const switchedProfile = dialect.alwaysSwitchProfile || activeProfileId !== guestProfileId;
  if (switchedProfile) {
    await step(
      log,
      3,
      `changeActiveProfile ${guestProfileId}`,
      () => client.changeActiveProfile(guestProfileId),
      () => 'switched to the guest profile',
    );
  } else {
    log(`3/${STEPS} changeActiveProfile … skipped (profile ${guestProfileId} is already the guest profile)`);
  }

  const input: AgentCreationInput = {
    _email: options.email,
    _invitation_token: invitation.invitationToken,
    _serial: serial,
    _uuid: uuid,
    csr: '', // the spec's CSR feature is not implemented: the field is sent empty
    version,
    type,
    ...dialect.extraCreateFields({
      inventoryXml: fakeInventoryXml({
        serial,
        uuid,
        type,
        ...(options.androidVersion ? { androidVersion: options.androidVersion } : {}),
      }),
      system: options.system ?? false,
    }),
  };
  // Optional names are left out rather than sent empty, so they cannot blank the user's own.
  if (options.firstname !== undefined) input.firstname = options.firstname;
  if (options.lastname !== undefined) input.lastname = options.lastname;
  const agentResource = dialect.resource('Agent');
  const created = await step(
    log,
    4,
    `POST ${agentResource}`,
    () => client.createAgent(input),
    (response) => `agent ${response.id}${response.message ? ` — ${response.message}` : ''}`,
  );

  const agent = await step(
    log,
    5,
    `GET ${agentResource}/${created.id}`,
    async () => {
      const record = await client.getAgent(created.id);
      const missing = dialect.requiredRecordFields.filter((field) => record[field] === undefined || record[field] === null);
      if (missing.length > 0) {
        throw new AgentApiError(
          `GET ${agentResource}/${created.id}`,
          200,
          'BAD_RESPONSE',
          `agent record has no ${missing.join(', ')}`,
        );
      }
      if (typeof record.api_token !== 'string' || record.api_token === '') {
        throw new AgentApiError(`GET ${agentResource}/${created.id}`, 200, 'BAD_RESPONSE', 'agent record has no api_token');
      }
      return record;
    },
    (record) =>
      `${String(record.enroll_status)}, topic ${String(record.topic)}, broker ${String(record.broker)}:${String(record.port)}`,
  );
  for (const warning of checkAgentRecord(agent)) log(`   warning: ${warning}`);
  // The user token and the enrollment session are not kept: the api_token replaces them (spec §5.5).

  return {
    backendUrl: invitation.backendUrl,
    agentId: created.id,
    creationMessage: created.message,
    agent,
    apiToken: agent.api_token,
    serial,
    uuid,
    type,
    version,
    ...(options.androidVersion ? { androidVersion: options.androidVersion } : {}),
    ...(options.system === undefined ? {} : { system: options.system }),
    switchedProfile,
    guestProfileId,
    helpdesk: {
      name: invitation.helpdeskName,
      phone: invitation.helpdeskPhone,
      website: invitation.helpdeskWebsite,
      email: invitation.helpdeskEmail,
    },
    dialect,
  };
}

/** A new session opened with the agent's api_token, as the agent does before downloads (spec §5). */
export async function startAgentSession(
  backendUrl: string,
  apiToken: string,
  options: { timeoutMs?: number; dialect?: Dialect } = {},
): Promise<AgentApiClient> {
  const client = new AgentApiClient(backendUrl, {
    ...optionalTimeout(options.timeoutMs),
    ...(options.dialect ? { dialect: options.dialect } : {}),
  });
  await client.initSession(apiToken);
  return client;
}

/** Extension point for the MQTT connection that follows enrollment. */
export function mqttCredentialsOf(result: EnrollmentResult): MqttCredentials {
  return {
    host: String(result.agent.broker),
    port: Number(result.agent.port),
    tls: Number(result.agent.tls) === 1,
    username: result.serial !== '' ? result.serial : result.uuid,
    password: String(result.agent.mqttpasswd),
    topic: String(result.agent.topic),
  };
}

/** Android serials look like R58N123ABCD; Apple's like C02XK1ABCDEF. */
export function randomSerial(type: string = 'android'): string {
  const alphabet = '0123456789ABCDEFGHJKLMNPQRSTUVWXYZ';
  const [prefix, length] = type === 'apple' ? ['C02', 9] : ['R58', 8];
  let serial = prefix;
  for (let i = 0; i < length; i += 1) serial += alphabet[randomInt(alphabet.length)];
  return serial;
}

/** Reads the profile ids at the top level, else under `session` (DESIGN.md "getFullSession"). */
export function readProfiles(
  session: FullSession,
  dialect: Dialect = SPEC_DIALECT,
): { activeProfileId?: number; guestProfileId?: number } {
  const nested = (typeof session.session === 'object' && session.session !== null ? session.session : {}) as Record<
    string,
    unknown
  >;
  const top = session as Record<string, unknown>;
  const first = (keys: readonly string[]) => keys.map((key) => top[key] ?? nested[key]).find((value) => value !== undefined);
  const active = first(dialect.activeProfileKeys) as { id?: unknown } | undefined;
  const guest = first(dialect.guestProfileKeys);
  const result: { activeProfileId?: number; guestProfileId?: number } = {};
  const activeId = toId(active?.id);
  const guestId = toId(guest);
  if (activeId !== undefined) result.activeProfileId = activeId;
  if (guestId !== undefined) result.guestProfileId = guestId;
  return result;
}

/** Ids are integers, but GLPI-style servers may send them as strings. */
function toId(value: unknown): number | undefined {
  const id = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof id === 'number' && Number.isInteger(id) ? id : undefined;
}

const RECORD_FIELD_TYPES: Record<string, 'integer' | 'string' | 'string|null' | 'array'> = {
  id: 'integer',
  name: 'string',
  version: 'string',
  computers_id: 'integer',
  wipe: 'integer',
  lock: 'integer',
  enroll_status: 'string',
  entities_id: 'integer',
  plugin_mdm_fleets_id: 'integer',
  last_report: 'string|null',
  last_contact: 'string|null',
  certificate: 'string',
  topic: 'string',
  mqttpasswd: 'string',
  api_token: 'string',
  broker: 'string',
  port: 'integer',
  tls: 'integer',
  android_bugcollecctor_url: 'string',
  android_bugcollector_login: 'string',
  android_bugcollector_passwd: 'string',
  links: 'array',
};

/** Differences between the record and the spec's field list; logged, not fatal. */
export function checkAgentRecord(record: AgentRecord): string[] {
  const warnings: string[] = [];
  for (const [field, expected] of Object.entries(RECORD_FIELD_TYPES)) {
    const value = record[field];
    const ok =
      expected === 'integer'
        ? Number.isInteger(value)
        : expected === 'string'
          ? typeof value === 'string'
          : expected === 'string|null'
            ? value === null || typeof value === 'string'
            : Array.isArray(value);
    if (!ok)
      warnings.push(
        `agent record field ${field} should be ${expected}, got ${value === undefined ? 'nothing' : JSON.stringify(value)}`,
      );
  }
  if (record.enroll_status === 'pending_approval') {
    warnings.push(`enroll_status is pending_approval: an administrator must approve this device before the broker lets it in`);
  } else if (typeof record.enroll_status === 'string' && record.enroll_status !== 'enrolled') {
    warnings.push(`enroll_status is ${record.enroll_status}, expected enrolled`);
  }
  return warnings;
}

/** Runs one numbered step, logging "n/5 name … ok (detail)" or "n/5 name … failed: why". */
async function step<T>(
  log: StepLog,
  index: number,
  name: string,
  run: () => Promise<T>,
  describe: (value: T) => string,
): Promise<T> {
  const prefix = `${index}/${STEPS} ${name} …`;
  let value: T;
  try {
    value = await run();
  } catch (error) {
    log(`${prefix} failed: ${error instanceof Error ? error.message : String(error)}`);
    throw error;
  }
  log(`${prefix} ok (${describe(value)})`);
  return value;
}

function shorten(secret: string): string {
  return secret.length > 8 ? `${secret.slice(0, 4)}…` : '…';
}

function optionalTimeout(timeoutMs: number | undefined): { timeoutMs?: number } {
  return timeoutMs === undefined ? {} : { timeoutMs };
}
