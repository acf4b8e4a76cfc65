// The HTTP endpoints of rabbitmq_auth_backend_http (user, vhost, resource, topic), on a listener
// only the brokers reach. Every answer comes from the database and the one rule table (acl.ts).
// Only the nodes may ask: each request carries the nodes' secret as HTTP basic credentials (the
// `rabbitmq:SECRET@` of the `auth_http.*_path` URLs in rabbitmq.conf); any other caller gets a 401
// and learns nothing. Refused logins are throttled with the embedded broker's schedule
// (auth-throttle.ts), per login and per asking node, but no answer is ever held back: a node asks
// through a couple of keep-alive connections and queues every other question behind a held answer,
// so holding one login's refusals would slow every device's login. A throttled login is refused at
// once, unchecked, until its wait has passed; then one attempt is checked.
import { createHash, timingSafeEqual } from 'node:crypto';
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
import { DEFAULT_THROTTLE, FailureThrottle, type ThrottleOptions } from './auth-throttle.ts';

export interface AuthEndpointOptions {
  host: string;
  port: number;
  store: BrokerAgentStore;
  events: EventLog;
  /** The backend's own account on the cluster, and the prefix of its MQTT client ids. */
  backend: { username: string; password: string; clientIdPrefix: string };
  /** What the nodes present as the password of HTTP basic credentials; nothing is answered without it. */
  secret: string;
  /** Slowing down of refused logins (default: the embedded broker's). */
  throttle?: Partial<ThrottleOptions> | undefined;
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** The password of `Authorization: Basic …` (whatever the user name), or null. */
function basicPassword(header: string | undefined): string | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : decoded.slice(colon + 1);
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
async function connectable(store: BrokerAgentStore, login: string): Promise<BrokerAgentRow | undefined> {
  return (await store.byLogin(login)).find(
    (row) => MAY_CONNECT.includes(row.enroll_status) && isUsableAgentTopic(row.topic) && isRabbitSafeTopic(row.topic),
  );
}

export async function startAuthEndpoints(options: AuthEndpointOptions): Promise<FastifyInstance> {
  const { store, events, backend } = options;
  const secretDigest = digest(options.secret);
  // Per login and asking node: a device that keeps failing slows only its own login. Per node,
  // whatever the login, with a higher threshold: a scan of logins; slows refusals only.
  const throttle = new FailureThrottle(options.throttle);
  const scanThrottle = new FailureThrottle(
    options.throttle,
    Date.now,
    { ...DEFAULT_THROTTLE, ...options.throttle }.freeFailuresPerAddress,
  );
  const app = Fastify({
    logger: false,
    bodyLimit: 16 * 1024,
    requestTimeout: 10_000,
    forceCloseConnections: true,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Before anything is read: a caller without the nodes' secret gets a 401, the same for every
  // question (no login, serial or right can be told from another).
  app.addHook('onRequest', async (request, reply) => {
    const presented = basicPassword(request.headers.authorization);
    if (presented !== null && timingSafeEqual(digest(presented), secretDigest)) return;
    return reply.code(401).header('www-authenticate', 'Basic realm="mdm-console-rabbitmq-auth"').type('text/plain').send('deny');
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  const allow = (ok: boolean) => (ok ? 'allow' : 'deny');
  const rulesOf = async (username: string): Promise<AgentTopicRules | null> => {
    if (username === backend.username) return BACKEND_TOPIC_RULES;
    const row = await connectable(store, username);
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
    const node = request.ip;
    const key = `${node}\u0000${username}`;
    // Past freeFailuresPerAddress refusals through this node whatever the login (a scan), a login
    // refused through it is throttled from its first refusal instead of its sixth.
    const free = scanThrottle.isThrottled(node) ? 0 : undefined;
    /** One event per login and minute: a retrying device (or a flood) does not flood the history. */
    const note = async (why: string, agent?: BrokerAgentRow) => {
      const now = Date.now();
      if (now - (lastRefusal.get(username) ?? 0) <= 60_000) return;
      if (lastRefusal.size > 10_000) lastRefusal.clear();
      lastRefusal.set(username, now);
      await events.record(
        'mqtt.login_refused',
        `MQTT login ${JSON.stringify(username.slice(0, 64))} refused by the RabbitMQ auth endpoint: ${why}`,
        agent ? { entityId: agent.entity_id, agentId: agent.id } : {},
        { login: username.slice(0, 200), reason: why, node },
      );
    };
    // A throttled login whose wait has not passed: refused at once, its password not looked at
    // (so a guess in the window tells nothing, and many connections at once guess no faster than
    // one); not counted, so the device's own login gets in once the wait has passed.
    const wait = throttle.waitLeft(key, free);
    if (wait > 0) {
      await note(`throttled after repeated failures; not checked for ${Math.ceil(wait / 100) / 10} s more`);
      return 'deny';
    }
    /** `guess`: a wrong password or an unknown login, counted (a right password for an agent that may not connect is not). */
    const refuse = async (why: string, agent?: BrokerAgentRow, guess = true): Promise<string> => {
      if (guess) {
        throttle.fail(key);
        scanThrottle.fail(node);
      }
      const throttled = throttle.waitLeft(key, scanThrottle.isThrottled(node) ? 0 : undefined) > 0;
      await note(
        `${why}${throttled ? '; further attempts for this login are refused unchecked until its wait has passed' : ''}`,
        agent,
      );
      return 'deny';
    };
    const accept = (): string => {
      throttle.succeed(key);
      return 'allow';
    };
    // Where the node passes the client id, one agent cannot take over another's session by its id.
    if (clientId !== undefined && !clientIdAllowed(username, clientId))
      return refuse(`client id ${JSON.stringify(clientId.slice(0, 64))} is not its own`, undefined, false);
    if (username === backend.username) {
      const right = timingSafeEqual(digest(password), digest(backend.password));
      return right ? accept() : await refuse("wrong password for the backend's own account");
    }
    const candidates = await store.byLogin(username);
    const agent = candidates.find((row) => verifySecret(password, row.mqtt_password_hash));
    const usable = agent && (await connectable(store, username))?.id === agent.id;
    if (!usable) {
      if (!agent)
        return refuse(
          candidates.length > 0 ? 'wrong password' : 'unknown login',
          candidates.length === 1 ? candidates[0] : undefined,
        );
      const why = isRabbitSafeTopic(agent.topic)
        ? `the agent is ${agent.enroll_status}`
        : `its topic ${agent.topic} has "." or "*", which RabbitMQ cannot carry`;
      return refuse(why, agent, false);
    }
    return accept();
  });

  app.post('/auth/vhost', { schema: { body: VhostBody } }, async (request) => {
    const { username, vhost } = request.body;
    return allow(vhost === VHOST && (await rulesOf(username)) !== null);
  });

  app.post('/auth/resource', { schema: { body: ResourceBody } }, async (request) => {
    const { username, vhost, resource, name, permission } = request.body;
    if (vhost !== VHOST || (await rulesOf(username)) === null) return 'deny';
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
    const rules = await rulesOf(username);
    if (vhost !== VHOST || name !== EXCHANGE || !rules) return 'deny';
    const topic = routingKeyToTopic(routingKey);
    // write: a publish; read: a subscription (its filter as a binding key).
    if (permission === 'write') return allow(rulesAllowPublish(rules, topic));
    if (permission === 'read') return allow(rulesAllowSubscribe(rules, topic));
    return 'deny';
  });

  app.setErrorHandler(async (error, _request, reply) => {
    // A malformed question is a refusal, never a 500 (RabbitMQ reads "deny").
    void reply.code(200).type('text/plain').send('deny');
    if ((error as { statusCode?: number }).statusCode === undefined)
      await events.record(
        'broker.auth_error',
        `RabbitMQ auth endpoint: ${error instanceof Error ? error.message : String(error)}`,
      );
  });
  await app.listen({ host: options.host, port: options.port });
  return app;
}
