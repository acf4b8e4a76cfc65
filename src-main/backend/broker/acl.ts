// Topic rules of DESIGN.md "MQTT", as pure functions over an agent's identity.
// The backend's own publishing is in-process and never passes through here.

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

/** `name` itself or anything below it; `base` is literal, so a wildcard in its place never matches. */
function within(name: string, base: string): boolean {
  return name === base || name.startsWith(`${base}/`);
}

/**
 * A topic an agent may own: one level after `/<entity>/agent/`, free of wildcards and NUL. A serial
 * with `/` in it would make one agent's topic a sub-topic of another's, so such agents are refused.
 */
export function isUsableAgentTopic(topic: string): boolean {
  return /^\/\d+\/agent\/[^/+#\u0000]+$/.test(topic);
}

/** The manifest topics: ours and the reference's name for it (the Flyve agents subscribe to the latter). */
export const MANIFEST_TOPICS = ['MdmManifest', 'FlyvemdmManifest'] as const;

const withinManifest = (name: string, prefix = ''): boolean => MANIFEST_TOPICS.some((manifest) => within(name, `${prefix}${manifest}`));

/** The agent may publish `T/Status/#`, `T/MdmManifest/#` and `T/FlyvemdmManifest/#`. */
export function mayPublish(agent: AgentIdentity, topic: string): boolean {
  return within(topic, `${agent.topic}/Status`) || withinManifest(topic, `${agent.topic}/`);
}

/** The agent may receive `T/Command/#`, `T/Policy/#`, `MdmManifest/#`, `FlyvemdmManifest/#` and its fleet's topic. */
export function mayReceive(agent: AgentIdentity, topic: string): boolean {
  return (
    within(topic, `${agent.topic}/Command`) ||
    within(topic, `${agent.topic}/Policy`) ||
    withinManifest(topic) ||
    within(topic, fleetTopic(agent.entityId, agent.fleetId))
  );
}

/**
 * `T/#` (what agents subscribe to; deliveries are then filtered by mayReceive) or a filter whose
 * every match is receivable. The literal prefix rule refuses `#`, `+/…`, `$SYS/#` and other agents.
 */
export function maySubscribe(agent: AgentIdentity, filter: string): boolean {
  if (filter === `${agent.topic}/#`) return true;
  return (
    within(filter, `${agent.topic}/Command`) ||
    within(filter, `${agent.topic}/Policy`) ||
    withinManifest(filter) ||
    within(filter, fleetTopic(agent.entityId, agent.fleetId))
  );
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
