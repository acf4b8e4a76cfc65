// aedes' `authenticate` hook: an agent's login checked against its hashed mqttpasswd, refusals
// slowed down per (login, address) and per address, the accepted connection handed to the client
// lifecycle (client-lifecycle.ts).
import type { AedesOptions, AuthenticateError, Client } from 'aedes';
import type { BrokerAgentRow, BrokerAgentStore } from '../../agents/broker-repository.ts';
import { ENROLL_STATUS, MAY_CONNECT } from '../../agents/status.ts';
import { isDiskFull } from '../../db/disk-full.ts';
import type { EventLog } from '../../events/event-log.ts';
import { verifySecret } from '../../util/tokens.ts';
import { isUsableAgentTopic } from '../acl.ts';
import { DEFAULT_THROTTLE, FailureThrottle, type ThrottleOptions } from '../auth-throttle.ts';
import { connectionInfo } from '../connections.ts';

/** How often the history notes the refused logins of one device waiting for approval. */
const WAITING_NOTE_MS = 10 * 60 * 1000;

/** CONNACK 3 (server unavailable): the device retries later, as it does after any outage. */
const DISK_FULL_REFUSAL = "the server's disk is full: nothing can be saved";

function refusal(returnCode: 3 | 4 | 5, message: string): AuthenticateError {
  return Object.assign(new Error(message), { returnCode }) as unknown as AuthenticateError;
}

export interface AuthenticateOptions {
  store: BrokerAgentStore;
  events: EventLog;
  throttle?: Partial<ThrottleOptions> | undefined;
  /** The login is accepted: the connection becomes the agent's (throws when that cannot be saved). */
  accepted(client: Client, agent: BrokerAgentRow): Promise<void>;
  /** Whether the broker is closed (a delayed answer is then not given). */
  closed(): boolean;
}

export interface AuthenticateHook {
  authenticate: NonNullable<AedesOptions['authenticate']>;
  /** Drops the answers still waiting out their delay. */
  stop(): void;
}

export function authenticateHook(options: AuthenticateOptions): AuthenticateHook {
  const { store, events } = options;
  // Per login and address: one bad device behind a NAT slows only its own login, never the others.
  const throttle = new FailureThrottle(options.throttle);
  // Per address, whatever the login, with a higher threshold: a scan of logins; slows refusals only.
  const scanThrottle = new FailureThrottle(
    options.throttle,
    Date.now,
    { ...DEFAULT_THROTTLE, ...options.throttle }.freeFailuresPerAddress,
  );
  const pendingChecks = new Set<NodeJS.Timeout>();
  const waitingNoted = new Map<number, number>();

  /**
   * Checks a login at once (a salted SHA-256: cheap) and says how long its answer waits: a
   * refusal waits what its (login, address) and its address have earned; a correct password at
   * most the first step, and nothing at all when its own (login, address) has no failures.
   */
  const check = async (
    client: Client,
    username: string | undefined,
    password: Buffer | undefined,
  ): Promise<{ result: AuthenticateError | BrokerAgentRow; delay: number }> => {
    const address = connectionInfo(client, client.id).address ?? 'unknown';
    const login = username ?? '';
    const key = `${address}\u0000${login}`;
    const shown = JSON.stringify(login.length > 64 ? `${login.slice(0, 64)}…` : login);
    // The throttles are read and counted with no await in between (after the database read), so
    // concurrent attempts each see the failures counted before them.
    const refuse = async (returnCode: 4 | 5, why: string, agent?: BrokerAgentRow, noted = true) => {
      const delay = Math.max(throttle.delayFor(key), scanThrottle.delayFor(address));
      if (returnCode === 4) {
        throttle.fail(key);
        scanThrottle.fail(address);
      }
      if (delay === 0 && noted) {
        const slowed = throttle.isThrottled(key)
          ? `; further attempts for this login from ${address} are slowed down`
          : scanThrottle.isThrottled(address)
            ? `; further refused logins from ${address} are slowed down`
            : '';
        await events.record(
          'mqtt.login_refused',
          `MQTT login ${shown} from ${address} refused: ${why}${slowed}`,
          agent ? { entityId: agent.entity_id, agentId: agent.id } : {},
          {
            login: login.slice(0, 200),
            address,
            reason: why,
            return_code: returnCode,
          },
        );
      }
      return { result: refusal(returnCode, why), delay };
    };
    const secret = password?.toString('utf8') ?? '';
    if (!login || !secret) return refuse(4, 'login and password are required');
    const candidates = await store.byLogin(login);
    const agent = candidates.find((row) => verifySecret(secret, row.mqtt_password_hash));
    if (!agent)
      return refuse(
        4,
        candidates.length > 0 ? 'wrong password' : 'unknown login',
        candidates.length === 1 ? candidates[0] : undefined,
      );
    if (agent.enroll_status === ENROLL_STATUS.pendingApproval) {
      // A waiting device retries until approved (every 30 s, as the reference agent does): the
      // history notes it once per WAITING_NOTE_MS, not at every attempt.
      const now = Date.now();
      const noted = now - (waitingNoted.get(agent.id) ?? -Infinity) >= WAITING_NOTE_MS;
      if (noted) {
        if (waitingNoted.size >= 10_000) waitingNoted.clear();
        waitingNoted.set(agent.id, now);
      }
      return refuse(5, 'the device is waiting for approval by an administrator', agent, noted);
    }
    if (!MAY_CONNECT.includes(agent.enroll_status)) return refuse(5, `the agent is ${agent.enroll_status}`, agent);
    if (!isUsableAgentTopic(agent.topic)) return refuse(5, `the agent's topic ${agent.topic} cannot be used in MQTT`, agent);
    const keyDelay = throttle.delayFor(key);
    throttle.succeed(key);
    return { result: agent, delay: Math.min(keyDelay, throttle.firstStepMs) };
  };

  /** A login that could not be checked or saved: refused as "server unavailable", the agent retries. */
  const unavailable = (error: unknown) => {
    if (isDiskFull(error)) return refusal(3, DISK_FULL_REFUSAL);
    console.error(error);
    return refusal(3, 'the server could not check the login');
  };

  const authenticate: AuthenticateHook['authenticate'] = (client, username, password, done) => {
    check(client, username ?? undefined, password ?? undefined).then(
      (checked) => answerLater(client, checked, done),
      (error: unknown) => done(unavailable(error), false), // a refusal could not be logged
    );
  };

  const answerLater = (
    client: Client,
    { result, delay }: { result: AuthenticateError | BrokerAgentRow; delay: number },
    done: Parameters<AuthenticateHook['authenticate']>[3],
  ) => {
    const answer = () => {
      if (result instanceof Error) return done(result, false);
      options.accepted(client, result).then(
        () => done(null, true),
        // not online, since that could not be saved
        (error: unknown) => done(unavailable(error), false),
      );
    };
    if (delay === 0) return answer();
    const timer = setTimeout(() => {
      pendingChecks.delete(timer);
      if (!client.closed && !options.closed()) answer();
    }, delay);
    pendingChecks.add(timer);
  };

  return {
    authenticate,
    stop: () => {
      for (const timer of pendingChecks) clearTimeout(timer);
      pendingChecks.clear();
    },
  };
}
