// Mode `rabbitmq`: agents connect to a RabbitMQ cluster (rabbitmq_mqtt) whose every login and right
// is asked of this backend through rabbitmq_auth_backend_http (auth-endpoints.ts). The backend
// itself is an MQTT client of the cluster. RabbitMQ keeps retained messages per node, so what an
// agent must find is published again each time it says it is online.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { followAgentLifecycle, type AgentAccounts } from './agent-accounts.ts';
import { startAuthEndpoints } from './auth-endpoints.ts';
import type { ThrottleOptions } from './auth-throttle.ts';
import { AUTH_SECRET_PATTERN, parseBrokerUrl } from './broker-url.ts';
import {
  commandsOverLink,
  externalBrokerFace,
  externalBrokerStatus,
  ingestOnce,
  recordExternalStopped,
  type ExternalModeOptions,
} from './external-broker.ts';
import { routeReport, announceOnConnect, ExternalLink, nodeClientId } from './external-link.ts';
import { publicEndpoint } from './mosquitto.ts';
import type { MqttBroker } from './port.ts';

export interface RabbitmqBrokerOptions extends ExternalModeOptions {
  /**
   * mqtt[s]://[USER[:PASSWORD]@]HOST:PORT,HOST:PORT — the backend's account, which the backend
   * itself accepts: without a password (here or in `brokerPassword`) one is drawn at each start.
   */
  brokerUrl: string;
  authHost: string;
  authPort: number;
  /** The secret the nodes present to the auth endpoints; default: DIR/rabbitmq-auth-secret, made on first use. */
  authSecret?: string | undefined;
  dataDir: string;
  /** Slowing down of refused logins (default: the embedded broker's). */
  throttle?: Partial<ThrottleOptions> | undefined;
}

export const DEFAULT_BACKEND_ACCOUNT = 'mdm-console-backend';
export const AUTH_SECRET_FILE = 'rabbitmq-auth-secret';
/** base64url: characters that pass unescaped in a URL's user info. */
const newSecret = () => randomBytes(32).toString('base64url');

/** Why a password an operator chose is weak, or null: short, or of few different characters. */
export function weakPasswordReason(password: string): string | null {
  if (password.length < 16)
    return `it has ${password.length} characters (use 16 or more; better, give none and let the backend draw one)`;
  if (new Set(password).size < 8) return 'it repeats a few characters (use 8 or more different ones)';
  return null;
}

/**
 * The nodes' secret: given, else kept in DIR/rabbitmq-auth-secret (0600), drawn on first use. The
 * nodes present it in their rabbitmq.conf; the README says how.
 */
export function authSecretOf(dataDir: string, given: string | undefined): { secret: string; file: string | null } {
  if (given !== undefined) {
    if (!AUTH_SECRET_PATTERN.test(given))
      throw new Error(
        'The RabbitMQ auth secret must be 16 or more letters, digits, ".", "_", "~" or "-" (it is written into URLs in rabbitmq.conf)',
      );
    return { secret: given, file: null };
  }
  const file = join(dataDir, AUTH_SECRET_FILE);
  try {
    const kept = readFileSync(file, 'utf8').trim();
    if (kept) return { secret: kept, file };
  } catch {
    // none yet
  }
  const secret = newSecret();
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'w' });
  return { secret, file };
}

export async function startRabbitmqBroker(options: RabbitmqBrokerOptions): Promise<MqttBroker> {
  const { events } = options;
  const parsed = parseBrokerUrl(options.brokerUrl);
  // The backend's own account may publish lock, wipe and unenroll to every agent: its password is
  // drawn here unless the operator gives one (and then it had better be strong).
  const given = options.brokerPassword ?? (parsed.password || undefined);
  const password = given ?? newSecret();
  const url = { ...parsed, username: parsed.username || DEFAULT_BACKEND_ACCOUNT, password };
  const warnings: string[] = [];
  const weak = given === undefined ? null : weakPasswordReason(given);
  if (weak) {
    const warning = `The backend's RabbitMQ account ${url.username} has a weak password: ${weak}. Anyone who guesses it may lock, wipe and unenroll every device.`;
    warnings.push(warning);
    await events.record('broker.weak_password', warning, {}, { account: url.username });
  }
  const { secret, file: secretFile } = authSecretOf(options.dataDir, options.authSecret);
  const endpoint = publicEndpoint(url, options.publicUrl);
  const store = options.agents;
  const clientIdPrefix = DEFAULT_BACKEND_ACCOUNT;
  const auth: FastifyInstance = await startAuthEndpoints({
    host: options.authHost,
    port: options.authPort,
    store,
    events,
    backend: { username: url.username, password: url.password, clientIdPrefix },
    secret,
    throttle: options.throttle,
  });

  const link: ExternalLink = new ExternalLink({
    url,
    credentials: () => ({ username: url.username, password: url.password }),
    clientId: nodeClientId(clientIdPrefix),
    caFile: options.caFile,
    events,
    work: options.work,
    store,
    name: 'RabbitMQ',
    onConnected: () => announceOnConnect(commands, policies, (topic, payload, retain) => link.publish(topic, payload, retain)),
  });
  const ingest = ingestOnce(
    {
      url,
      credentials: () => ({ username: url.username, password: url.password }),
      clientId: `${clientIdPrefix}-ingest`,
      caFile: options.caFile,
      events,
      work: options.work,
      store,
      name: 'RabbitMQ',
      onReport: (agent, subtopic, payload) => routeReport(commands, options.onTaskReport)(agent, subtopic, payload),
      onPresence: (agent, online) => link.setPresence(agent, online),
      // Retained messages live on the node that took them: the agent may be on another one now.
      // Its commands (Command/Subscribe among them) and its fleet's and own policies.
      onAgentOnline: (agent) => {
        void commands.republishFor(agent.id).catch(() => {});
        policies.republishFor(agent);
        return Promise.resolve();
      },
    },
    options.duties,
  );
  const accounts: AgentAccounts = {
    // RabbitMQ offers no kick without its management API: the agent leaves by itself, and its
    // next login is refused (the auth endpoints ask the database).
    revoke: (agentId) => link.forget(agentId),
    // Rights are asked of the database at each SUBSCRIBE: nothing to push.
    moved: () => {},
  };
  const { commands, policies } = commandsOverLink(link, options, accounts);
  const unsubscribe = followAgentLifecycle(events, commands, accounts);

  const authAddress = auth.server.address() as { port: number };
  await events.record(
    'broker.started',
    `Using the RabbitMQ cluster ${url.display} (auth endpoints on ${options.authHost}:${authAddress.port}, for the nodes presenting the secret${secretFile ? ` in ${secretFile}` : ''}); agents connect to ${endpoint.host}:${endpoint.port}${endpoint.tls ? ' (TLS)' : ''}`,
    {},
    { url: url.display, endpoint, auth_port: authAddress.port, auth_secret_file: secretFile },
  );
  link.start();
  ingest.start();

  let closed = false;
  const parts = { mode: 'rabbitmq' as const, url, endpoint, link, store, commands, policies };
  return {
    ...externalBrokerFace(parts),
    warnings,
    // The auth endpoints check the stored hash at each login: nothing to hand over.
    credentialsIssued: async () => {},
    status: () => externalBrokerStatus(parts, link.connected, link.lastProblem),
    close: async () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      policies.close();
      await link.close();
      const offline = await ingest.close();
      await auth.close();
      await recordExternalStopped(events, offline, 'RabbitMQ');
    },
  };
}
