// Topic rules of DESIGN.md "MQTT": ONE table per agent (agentTopicRules), as MQTT topic filters.
// The embedded broker checks against it in process, Mosquitto receives it as dynamic-security
// ACLs, RabbitMQ asks for it through the HTTP auth backend: the three never disagree.

/** What the broker knows about a connected agent; shared by all its connections. */
export interface AgentIdentity {
  id: number;
  entityId: number;
  fleetId: number;
  /** `/<entity_id>/agent/<serial or uuid>` */
  topic: string;
  name: string;
}

export const fleetTopic = (entityId: number, fleetId: number): string => `/${entityId}/fleet/${fleetId}`;

/** An agent's rights, each a list of MQTT filters whose every level before `#` is literal. */
export interface AgentTopicRules {
  /** Topics it may publish on. */
  publish: string[];
  /** Topics whose messages it may receive. */
  receive: string[];
  /** Filters it may subscribe with exactly as written (deliveries are then limited to `receive`). */
  subscribeExact: string[];
}

/** The manifest topics: ours and the reference's name for it (the Flyve agents subscribe to the latter). */
export const MANIFEST_TOPICS = ['MdmManifest', 'FlyvemdmManifest'] as const;

/** rc.6's task reports under an agent's own policy topic: `T/Policy/<policy>/Task/<id>/Status/Task/<id>`. */
const ownPolicyReports = (agentTopic: string) => `${agentTopic}/Policy/+/Task/+/Status/Task/+`;

/** The table itself. Add a right here and every broker mode applies it. */
export function agentTopicRules(agent: Pick<AgentIdentity, 'topic' | 'entityId' | 'fleetId'>): AgentTopicRules {
  const t = agent.topic;
  const receive = [
    `${t}/Command/#`,
    `${t}/Policy/#`,
    ...MANIFEST_TOPICS.map((root) => `${root}/#`),
    `${fleetTopic(agent.entityId, agent.fleetId)}/#`,
  ];
  return {
    // Task reports: `T/Status/Task/<id>` (within Status/#) and rc.6's under its own policy topic.
    // (rc.6 reports under the fleet's policy topic name no device: only the embedded broker, which
    // knows the publishing connection, takes those in; see policyStatusTaskId.)
    publish: [`${t}/Status/#`, ownPolicyReports(t), ...MANIFEST_TOPICS.map((root) => `${t}/${root}/#`)],
    receive,
    subscribeExact: [`${t}/#`, ...receive],
  };
}

/**
 * Whether `name` (a topic, or a filter taken literally) lies within `filter`, one of the rule
 * filters above: `a/b/#` covers `a/b` and everything below it. `+` in a rule matches one level;
 * a wildcard in `name` is only ever matched by the same character (a filter `+/x` is not within `a/#`).
 */
export function withinFilter(name: string, filter: string): boolean {
  const rule = filter.split('/');
  const levels = name.split('/');
  for (let i = 0; i < rule.length; i += 1) {
    if (rule[i] === '#') return i === rule.length - 1 && levels.length >= i;
    if (i >= levels.length) return false;
    if (rule[i] === '+' ? levels[i] === '#' : levels[i] !== rule[i]) return false;
  }
  return levels.length === rule.length;
}

const allowedBy = (filters: readonly string[], name: string) => filters.some((filter) => withinFilter(name, filter));

/**
 * A topic an agent may own: one level after `/<entity>/agent/`, free of wildcards and NUL. A serial
 * with `/` in it would make one agent's topic a sub-topic of another's, so such agents are refused.
 */
export function isUsableAgentTopic(topic: string): boolean {
  // eslint-disable-next-line no-control-regex -- NUL is refused in a topic (MQTT forbids it)
  return /^\/\d+\/agent\/[^/+#\u0000]+$/.test(topic);
}

/** Whether rules allow publishing on `topic`. */
export const rulesAllowPublish = (rules: AgentTopicRules, topic: string): boolean => allowedBy(rules.publish, topic);
/** Whether rules allow subscribing with `filter`: one of the exact filters, or one within what may be received. */
export const rulesAllowSubscribe = (rules: AgentTopicRules, filter: string): boolean =>
  rules.subscribeExact.includes(filter) || allowedBy(rules.receive, filter);

/** The agent may publish `T/Status/#`, `T/MdmManifest/#` and `T/FlyvemdmManifest/#`. */
export function mayPublish(agent: AgentIdentity, topic: string): boolean {
  return rulesAllowPublish(agentTopicRules(agent), topic);
}

/** The agent may receive `T/Command/#`, `T/Policy/#`, `MdmManifest/#`, `FlyvemdmManifest/#` and its fleet's topic. */
export function mayReceive(agent: AgentIdentity, topic: string): boolean {
  return allowedBy(agentTopicRules(agent).receive, topic);
}

/**
 * `T/#` (what agents subscribe to; deliveries are then filtered by mayReceive) or a filter whose
 * every match is receivable. Literal levels refuse `#`, `+/…`, `$SYS/#` and other agents.
 */
export function maySubscribe(agent: AgentIdentity, filter: string): boolean {
  return rulesAllowSubscribe(agentTopicRules(agent), filter);
}

/**
 * The backend's own rights on an external broker: it alone publishes commands, policies, fleet
 * messages and manifests, and it reads every agent's reports (task reports included).
 */
export const BACKEND_TOPIC_RULES: AgentTopicRules = {
  publish: ['/+/agent/+/Command/#', '/+/agent/+/Policy/#', '/+/fleet/#', ...MANIFEST_TOPICS.map((root) => `${root}/#`)],
  // (and it may read back the policies it keeps retained: MqttBroker.retained)
  receive: [
    '/+/agent/+/Status/#',
    ownPolicyReports('/+/agent/+'),
    ...MANIFEST_TOPICS.map((root) => `/+/agent/+/${root}/#`),
    '/+/agent/+/Policy/#',
    '/+/fleet/+/Policy/#',
  ],
  subscribeExact: [
    '/+/agent/+/Status/#',
    ownPolicyReports('/+/agent/+'),
    ...MANIFEST_TOPICS.map((root) => `/+/agent/+/${root}/#`),
  ],
};

/**
 * RabbitMQ's MQTT plugin turns topics into routing keys: `/` becomes `.` and `+` becomes `*`
 * (`#` stays). Back again for the rules; a topic whose own characters include `.` or `*` would be
 * ambiguous, so such agents cannot use RabbitMQ (isRabbitSafeTopic).
 */
export function routingKeyToTopic(routingKey: string): string {
  return routingKey.replace(/\./g, '/').replace(/\*/g, '+');
}

export function isRabbitSafeTopic(topic: string): boolean {
  return !/[.*]/.test(topic);
}

/** `T/Status/Task/<taskId>`: a task status report (DESIGN.md "MQTT"); the task id or null. */
export function statusTaskId(agent: AgentIdentity, topic: string): number | null {
  const prefix = `${agent.topic}/Status/Task/`;
  if (!topic.startsWith(prefix)) return null;
  return taskNumber(topic.slice(prefix.length));
}

/**
 * The agent release 2.0.0-rc.6 reports on `<policy topic>/Status/Task/<taskId>`, under its fleet's
 * or its own policy topic. Such a report is taken in and delivered to nobody (other devices of
 * the fleet must not read it). The task id, or null when the topic is not one of those.
 */
export function policyStatusTaskId(agent: AgentIdentity, topic: string): number | null {
  for (const base of [fleetTopic(agent.entityId, agent.fleetId), agent.topic]) {
    if (!topic.startsWith(`${base}/Policy/`)) continue;
    const match = /^\/Policy\/[^/+#]+\/Task\/(\d+)\/Status\/Task\/(\d+)$/.exec(topic.slice(base.length));
    if (match && match[1] === match[2]) return taskNumber(match[2]!);
  }
  return null;
}

function taskNumber(text: string): number | null {
  if (!/^[1-9]\d{0,15}$/.test(text)) return null;
  const id = Number(text);
  return Number.isSafeInteger(id) ? id : null;
}
