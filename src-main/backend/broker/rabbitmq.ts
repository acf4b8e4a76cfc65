// Mode `rabbitmq`: agents connect to a RabbitMQ cluster (rabbitmq_mqtt) whose every login and right
// is asked of this backend through rabbitmq_auth_backend_http (auth-endpoints.ts). The backend
// itself is an MQTT client of the cluster. RabbitMQ keeps retained messages per node, so what an
// agent must find is published again each time it says it is online.
import type { FastifyInstance } from 'fastify';
import { startAuthEndpoints } from './auth-endpoints.ts';
import { parseBrokerUrl } from './broker-url.ts';
import {
  commandsOverLink,
  externalBrokerFace,
  externalBrokerStatus,
  recordExternalStopped,
  type ExternalModeOptions,
} from './external-broker.ts';
import { routeReport, announceOnConnect, ExternalLink } from './external-link.ts';
import { publicEndpoint } from './mosquitto.ts';
import type { MqttBroker } from './port.ts';

export interface RabbitmqBrokerOptions extends ExternalModeOptions {
  /** mqtt[s]://USER:PASSWORD@HOST:PORT,HOST:PORT — the backend's account; the backend itself accepts it. */
  brokerUrl: string;
  authHost: string;
  authPort: number;
}

export async function startRabbitmqBroker(options: RabbitmqBrokerOptions): Promise<MqttBroker> {
  const { events } = options;
  const url = parseBrokerUrl(options.brokerUrl);
  if (!url.username || !url.password)
    throw new Error(
      '--mqtt-broker-url for rabbitmq needs USER:PASSWORD: the account the backend uses on the cluster (the backend itself accepts it)',
    );
  const endpoint = publicEndpoint(url, options.publicUrl);
  const store = options.agents;
  const clientIdPrefix = 'mdm-console-backend';
  const auth: FastifyInstance = await startAuthEndpoints({
    host: options.authHost,
    port: options.authPort,
    store,
    events,
    backend: { username: url.username, password: url.password, clientIdPrefix },
  });

  const link: ExternalLink = new ExternalLink({
    url,
    credentials: () => ({ username: url.username, password: url.password }),
    clientId: `${clientIdPrefix}-${process.pid}`,
    caFile: options.caFile,
    events,
    work: options.work,
    store,
    name: 'RabbitMQ',
    onConnected: () => announceOnConnect(commands, policies, (topic, payload, retain) => link.publish(topic, payload, retain)),
    onReport: (agent, subtopic, payload) => routeReport(commands, options.onTaskReport)(agent, subtopic, payload),
    // Retained messages live on the node that took them: the agent may be on another one now.
    // Its commands (Command/Subscribe among them) and its fleet's and own policies.
    onAgentOnline: (agent) => {
      void commands.republishFor(agent.id).catch(() => {});
      policies.republishFor(agent);
    },
  });
  const { commands, policies } = commandsOverLink(link, options, {
    // Rights are asked of the database at each SUBSCRIBE: nothing to push.
    fleetChanged: () => {},
    // RabbitMQ offers no kick without its management API: the agent leaves by itself, and its
    // next login is refused.
    disconnect: (agentId) => link.forget(agentId),
  });
  const unsubscribe = events.subscribe((event) => {
    if (event.agent_id === null) return;
    if (['agent.deleted', 'agent.reenrolled', 'agent.unenrolled'].includes(event.type)) {
      commands.forgetAgent(event.agent_id);
      link.forget(event.agent_id);
    }
    // A new (or re-enrolled) agent is told its fleet topic, retained, as the reference does.
    if (event.type === 'agent.enrolled' || event.type === 'agent.reenrolled')
      void commands.announceFleet(event.agent_id).catch(() => {});
  });

  const wasOnline = store.allOffline();
  const authAddress = auth.server.address() as { port: number };
  events.record(
    'broker.started',
    `Using the RabbitMQ cluster ${url.display} (auth endpoints on ${options.authHost}:${authAddress.port}); agents connect to ${endpoint.host}:${endpoint.port}${endpoint.tls ? ' (TLS)' : ''}`,
    {},
    { url: url.display, endpoint, auth_port: authAddress.port, marked_offline: wasOnline },
  );
  link.start();

  let closed = false;
  const parts = { mode: 'rabbitmq' as const, url, endpoint, link, store, commands, policies };
  return {
    ...externalBrokerFace(parts),
    // The auth endpoints check the stored hash at each login: nothing to hand over.
    credentialsIssued: async () => {},
    status: () => externalBrokerStatus(parts, link.connected, link.lastProblem),
    close: async () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      policies.close();
      await link.close();
      await auth.close();
      recordExternalStopped(events, store, 'RabbitMQ');
    },
  };
}
