// Mode `mosquitto`: agents connect to an existing Mosquitto 2 whose dynamic-security configuration
// the backend keeps in step with the database (mosquitto-accounts.ts), through an admin connection
// of its own; the backend's link (external-link.ts) publishes and reads the agents' reports.
import mqtt, { type MqttClient } from 'mqtt';
import { parseBrokerUrl, type BrokerUrl } from './broker-url.ts';
import { followAgentLifecycle, type AgentAccounts } from './agent-accounts.ts';
import { DynsecClient } from './dynsec.ts';
import {
  commandsOverLink,
  externalBrokerFace,
  externalBrokerStatus,
  ingestOnce,
  recordExternalStopped,
  type ExternalModeOptions,
} from './external-broker.ts';
import { routeReport, announceOnConnect, BACKOFF, brokerClientOptions, ExternalLink, nodeClientId } from './external-link.ts';
import { BACKEND_ACCOUNT, backendPasswordFor, MosquittoAccounts } from './mosquitto-accounts.ts';
import type { MqttBroker } from './port.ts';
import { unlessDiskFull } from '../db/disk-full.ts';

export { BACKEND_ACCOUNT } from './mosquitto-accounts.ts';

export interface ExternalBrokerOptions extends ExternalModeOptions {
  /** mqtt[s]://ADMIN[:PASSWORD]@HOST:PORT — the account `mosquitto_ctrl dynsec init` made (its password better in `brokerPassword`). */
  brokerUrl: string;
}

/** Where agents connect: the public URL if given, else the broker URL's first host. */
export function publicEndpoint(brokerUrl: BrokerUrl, publicUrl: string | undefined) {
  const target = publicUrl ? parseBrokerUrl(publicUrl, '--mqtt-public-url') : brokerUrl;
  return { host: target.servers[0]!.host, port: target.servers[0]!.port, tls: target.tls };
}

export async function startMosquittoBroker(options: ExternalBrokerOptions): Promise<MqttBroker> {
  const { events } = options;
  const parsed = parseBrokerUrl(options.brokerUrl);
  // The dynsec admin's password: given apart from the URL (a file, the environment), else the URL's.
  const url = { ...parsed, password: options.brokerPassword ?? parsed.password };
  if (!url.username || !url.password)
    throw new Error(
      "Mosquitto mode needs the dynamic-security admin's name in --mqtt-broker-url (mqtt://admin@HOST:PORT) and its password in --mqtt-broker-password-file FILE or MDM_CONSOLE_MQTT_BROKER_PASSWORD",
    );
  const endpoint = publicEndpoint(url, options.publicUrl);
  const store = options.agents;
  const backendPassword = backendPasswordFor(url.password);
  const dynsec = new MosquittoAccounts({ store, events, backendPassword });
  let adminProblem: string | null = 'connecting';
  let closed = false;
  let linkStarted = false;

  const link: ExternalLink = new ExternalLink({
    url,
    credentials: () => ({ username: BACKEND_ACCOUNT, password: backendPassword }),
    clientId: nodeClientId(BACKEND_ACCOUNT),
    caFile: options.caFile,
    events,
    work: options.work,
    store,
    name: 'Mosquitto',
    onConnected: () => announceOnConnect(commands, policies, (topic, payload, retain) => link.publish(topic, payload, retain)),
    onRefused: () => dynsec.resetBackendPassword(),
  });
  const ingest = ingestOnce(
    {
      url,
      credentials: () => ({ username: BACKEND_ACCOUNT, password: backendPassword }),
      clientId: `${BACKEND_ACCOUNT}-ingest`,
      caFile: options.caFile,
      events,
      work: options.work,
      store,
      name: 'Mosquitto',
      onReport: (agent, subtopic, payload) => routeReport(commands, options.onTaskReport)(agent, subtopic, payload),
      onPresence: (agent, online) => link.setPresence(agent, online),
    },
    options.duties,
  );
  const accounts: AgentAccounts = {
    // Enrolled again: the old install's password stops working now (the new one comes with the record read).
    revoke: async (agentId, why) => {
      await link.forget(agentId);
      await dynsec.revoke(agentId, why === 'reenrolled');
    },
    moved: (agentId) => dynsec.moved(agentId),
  };
  const { commands, policies } = commandsOverLink(link, options, accounts);

  // The admin connection: dynamic security only.
  let adminFailures = 0;
  const admin: MqttClient = mqtt.connect(brokerClientOptions(url, url, nodeClientId('mdm-console-admin'), options.caFile));
  const adminTrouble = async (why: string) => {
    if (closed) return;
    const first = adminProblem === null || adminProblem === 'connecting';
    adminProblem = why;
    if (first)
      await events.record(
        'broker.unreachable',
        `The Mosquitto broker ${url.display} is unreachable for its dynamic-security admin: ${why}; retrying with back-off`,
        {},
        { url: url.display, reason: why },
      );
  };
  admin.on('error', (error) => unlessDiskFull(() => adminTrouble(error.message)));
  admin.on('close', () => {
    dynsec.detach();
    if (closed) return;
    if (adminProblem === null) unlessDiskFull(() => adminTrouble('connection lost'));
    adminFailures += 1;
    admin.options.reconnectPeriod = Math.min(BACKOFF.maxMs, BACKOFF.firstMs * 2 ** Math.min(adminFailures, 10));
  });
  admin.on('connect', () => {
    const control = new DynsecClient(admin);
    void (async () => {
      await control.listen();
      const result = await dynsec.attach(control);
      adminProblem = null;
      adminFailures = 0;
      admin.options.reconnectPeriod = BACKOFF.firstMs;
      await events.record(
        'broker.reconciled',
        `Mosquitto dynamic security in step: ${result.agents} agent account(s)${result.removed > 0 ? `, ${result.removed} stale one(s) removed` : ''}`,
        {},
        result,
      );
      if (!linkStarted) {
        linkStarted = true;
        link.start();
        ingest.start();
      }
    })().catch(async (error: unknown) => {
      control.stop();
      await adminTrouble(`reconcile failed: ${(error as Error).message}`);
      admin.end(true, () => {
        if (!closed) admin.reconnect();
      });
    });
  });

  // Accounts follow the records: removed on delete, unenroll and re-enrollment, rights changed with the fleet.
  const unsubscribe = followAgentLifecycle(events, commands, accounts);

  await events.record(
    'broker.started',
    `Using the external Mosquitto broker ${url.display}; agents connect to ${endpoint.host}:${endpoint.port}${endpoint.tls ? ' (TLS)' : ''}`,
    {},
    { url: url.display, endpoint },
  );

  const parts = { mode: 'mosquitto' as const, url, endpoint, link, store, commands, policies };
  return {
    ...externalBrokerFace(parts),
    credentialsIssued: (agentId, password) => dynsec.issued(agentId, password),
    status: () => externalBrokerStatus(parts, adminProblem === null && link.connected, adminProblem ?? link.lastProblem),
    close: async () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      policies.close();
      dynsec.detach();
      await Promise.all([link.close(), admin.endAsync(true).catch(() => {})]);
      await recordExternalStopped(events, await ingest.close(), 'Mosquitto');
    },
  };
}
