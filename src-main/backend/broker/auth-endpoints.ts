// The HTTP endpoints of rabbitmq_auth_backend_http (user, vhost, resource, topic), on a listener
// only the brokers reach. Every answer comes from the database and the one rule table (acl.ts).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { EventLog } from '../events/event-log.ts';
import { verifySecret } from '../util/tokens.ts';
import {
  agentTopicRules,
  BACKEND_TOPIC_RULES,
  isRabbitSafeTopic,
  isUsableAgentTopic,
  routingKeyToTopic,
  rulesAllowPublish,
  rulesAllowSubscribe,
  type AgentTopicRules,
} from './acl.ts';
import type { BrokerAgentRow, BrokerAgentStore } from '../agents/broker-repository.ts';
import { MAY_CONNECT } from '../agents/status.ts';
import { identityOf } from './external-link.ts';

export interface AuthEndpointOptions {
  host: string;
  port: number;
  store: BrokerAgentStore;
  events: EventLog;
  /** The backend's own account on the cluster, and the prefix of its MQTT client ids. */
  backend: { username: string; password: string; clientIdPrefix: string };
}

const VHOST = '/';
const EXCHANGE = 'amq.topic';
const Field = Type.String({ maxLength: 1024 });
const UserBody = Type.Object(
  { username: Field, password: Type.Optional(Field), client_id: Type.Optional(Field) },
  { additionalProperties: true },
);
const VhostBody = Type.Object({ username: Field, vhost: Field }, { additionalProperties: true });
const ResourceBody = Type.Object(
  { username: Field, vhost: Field, resource: Field, name: Field, permission: Field },
  { additionalProperties: true },
);
const TopicBody = Type.Object(
  { username: Field, vhost: Field, resource: Field, name: Field, permission: Field, routing_key: Field },
  { additionalProperties: true },
);

/** An agent that may log in now, by login; undefined when none. */
function connectable(store: BrokerAgentStore, login: string): BrokerAgentRow | undefined {
  return store
    .byLogin(login)
    .find((row) => MAY_CONNECT.includes(row.enroll_status) && isUsableAgentTopic(row.topic) && isRabbitSafeTopic(row.topic));
}

export async function startAuthEndpoints(options: AuthEndpointOptions): Promise<FastifyInstance> {
  const { store, events, backend } = options;
  const app = Fastify({
    logger: false,
    bodyLimit: 16 * 1024,
    requestTimeout: 10_000,
    forceCloseConnections: true,
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  const allow = (ok: boolean) => (ok ? 'allow' : 'deny');
  const rulesOf = (username: string): AgentTopicRules | null => {
    if (username === backend.username) return BACKEND_TOPIC_RULES;
    const row = connectable(store, username);
    return row ? agentTopicRules(identityOf(row)) : null;
  };
  const lastRefusal = new Map<string, number>();
  /** An agent's MQTT client id is its login (or that login's first 23 characters). */
  const clientIdAllowed = (username: string, clientId: string) =>
    username === backend.username
      ? clientId.startsWith(`${backend.clientIdPrefix}-`)
      : clientId === username || (clientId.length === 23 && username.startsWith(clientId));

  app.post('/auth/user', { schema: { body: UserBody } }, async (request) => {
    const { username, password = '', client_id: clientId } = request.body;
    // Where the node passes the client id, one agent cannot take over another's session by its id.
    if (clientId !== undefined && !clientIdAllowed(username, clientId)) return 'deny';
    if (username === backend.username) return allow(password === backend.password);
    const candidates = store.byLogin(username);
    const agent = candidates.find((row) => verifySecret(password, row.mqtt_password_hash));
    const usable = agent && connectable(store, username)?.id === agent.id;
    if (!usable) {
      // One event per login and minute: a retrying device does not flood the history.
      const now = Date.now();
      if (now - (lastRefusal.get(username) ?? 0) > 60_000) {
        if (lastRefusal.size > 10_000) lastRefusal.clear();
        lastRefusal.set(username, now);
        const why = !agent
          ? candidates.length > 0
            ? 'wrong password'
            : 'unknown login'
          : isRabbitSafeTopic(agent.topic)
            ? `the agent is ${agent.enroll_status}`
            : `its topic ${agent.topic} has "." or "*", which RabbitMQ cannot carry`;
        events.record(
          'mqtt.login_refused',
          `MQTT login ${JSON.stringify(username.slice(0, 64))} refused by the RabbitMQ auth endpoint: ${why}`,
          agent ? { entityId: agent.entity_id, agentId: agent.id } : {},
          { login: username.slice(0, 200), reason: why },
        );
      }
      return 'deny';
    }
    return 'allow';
  });

  app.post('/auth/vhost', { schema: { body: VhostBody } }, async (request) => {
    const { username, vhost } = request.body;
    return allow(vhost === VHOST && rulesOf(username) !== null);
  });

  app.post('/auth/resource', { schema: { body: ResourceBody } }, async (request) => {
    const { username, vhost, resource, name, permission } = request.body;
    if (vhost !== VHOST || rulesOf(username) === null) return 'deny';
    if (resource === 'exchange') return allow(name === EXCHANGE && (permission === 'read' || permission === 'write'));
    if (resource === 'queue') {
      // The MQTT plugin's subscription queues are named after the client id: an agent's must be its
      // login, so no agent can take over another one's queue (or session) by choosing its client id.
      // (MQTT 3.1 agents cut it to 23 characters: a uuid login's first 23 are accepted.)
      const match = /^mqtt-subscription-(.+)qos[01]$/.exec(name);
      if (!match) return 'deny';
      return allow(clientIdAllowed(username, match[1]!));
    }
    return 'deny';
  });

  app.post('/auth/topic', { schema: { body: TopicBody } }, async (request) => {
    const { username, vhost, name, permission, routing_key: routingKey } = request.body;
    const rules = rulesOf(username);
    if (vhost !== VHOST || name !== EXCHANGE || !rules) return 'deny';
    const topic = routingKeyToTopic(routingKey);
    // write: a publish; read: a subscription (its filter as a binding key).
    if (permission === 'write') return allow(rulesAllowPublish(rules, topic));
    if (permission === 'read') return allow(rulesAllowSubscribe(rules, topic));
    return 'deny';
  });

  app.setErrorHandler((error, _request, reply) => {
    // A malformed question is a refusal, never a 500 (RabbitMQ reads "deny").
    void reply.code(200).type('text/plain').send('deny');
    if ((error as { statusCode?: number }).statusCode === undefined)
      events.record('broker.auth_error', `RabbitMQ auth endpoint: ${error instanceof Error ? error.message : String(error)}`);
  });
  await app.listen({ host: options.host, port: options.port });
  return app;
}
