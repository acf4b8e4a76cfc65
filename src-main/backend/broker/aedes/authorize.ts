// aedes' `authorizePublish`, `authorizeSubscribe` and `authorizeForward` hooks: DESIGN.md's topic
// rules (acl.ts) for the agent a connection belongs to.
import type { AedesOptions, Client } from 'aedes';
import { unlessDiskFull } from '../../db/disk-full.ts';
import type { EventLog } from '../../events/event-log.ts';
import { mayPublish, mayReceive, maySubscribe, policyStatusTaskId } from '../acl.ts';
import type { ConnectionRegistry } from '../connections.ts';
import type { TaskReportHandler } from '../port.ts';
import { ONLINE_SUBTOPIC, type PresenceTracker } from '../presence.ts';
import type { ResubscribeGuard } from '../resubscribe.ts';

/** Where denied publishes go: acknowledged (MQTT-3.3.5-2), delivered to nobody. */
export const DENIED_PREFIX = '$denied/';
/** Where rc.6 task reports go once taken in: delivered to nobody. */
const TAKEN_PREFIX = '$taken/';

export interface AuthorizeOptions {
  registry: ConnectionRegistry;
  presence: PresenceTracker;
  resubscribe: ResubscribeGuard;
  events: EventLog;
  /** A task status report of an agent under rc.6's `<policy topic>/Status/Task/<id>`. */
  onTaskReport?: TaskReportHandler | undefined;
}

type AuthorizeHooks = Required<Pick<AedesOptions, 'authorizePublish' | 'authorizeSubscribe' | 'authorizeForward'>>;

export function authorizeHooks({ registry, presence, resubscribe, events, onTaskReport }: AuthorizeOptions): AuthorizeHooks {
  const deniedNoted = new WeakSet<Client>();
  const authorizePublish = async (...[client, packet, callback]: Parameters<AuthorizeHooks['authorizePublish']>) => {
    const agent = registry.identityOf(client);
    if (!client || !agent) return callback(new Error('not an agent'));
    if (client.closed) {
      // The will of a connection that ended.
      if (!mayPublish(agent, packet.topic)) return callback(new Error('will topic not allowed'));
      if (packet.topic === `${agent.topic}/${ONLINE_SUBTOPIC}` && !presence.willAllowed(agent))
        return callback(new Error('superseded by a newer connection'));
      return callback(null);
    }
    const policyTask = policyStatusTaskId(agent, packet.topic);
    if (policyTask !== null) {
      await onTaskReport?.(agent, policyTask, toBuffer(packet.payload));
      packet.topic = `${TAKEN_PREFIX}${agent.id}`;
      packet.retain = false;
      return callback(null);
    }
    if (mayPublish(agent, packet.topic)) {
      // Only the presence flag is kept for late subscribers: an agent cannot fill the broker's
      // memory with retained messages under topics of its own invention.
      if (packet.retain && packet.topic !== `${agent.topic}/${ONLINE_SUBTOPIC}`) packet.retain = false;
      return callback(null);
    }
    if (!deniedNoted.has(client)) {
      deniedNoted.add(client);
      unlessDiskFull(() =>
        events.record(
          'mqtt.publish_denied',
          `${agent.name} may not publish on ${packet.topic.slice(0, 200)}: dropped`,
          { entityId: agent.entityId, agentId: agent.id },
          {
            topic: packet.topic.slice(0, 500),
          },
        ),
      );
    }
    packet.topic = `${DENIED_PREFIX}${agent.id}`;
    packet.retain = false;
    callback(null);
  };
  return {
    authorizePublish(client, packet, callback) {
      // A report that could not be saved (a full disk) refuses the publish: the agent sends it again.
      authorizePublish(client, packet, callback).catch((error: unknown) =>
        callback(error instanceof Error ? error : new Error(String(error))),
      );
    },
    authorizeSubscribe(client, subscription, callback) {
      const agent = registry.identityOf(client);
      const allowed = agent !== undefined && maySubscribe(agent, subscription.topic);
      if (allowed) resubscribe.clientSubscribed(client, agent, [subscription.topic]);
      callback(null, allowed ? subscription : null);
    },
    authorizeForward(client, packet) {
      const agent = registry.identityOf(client);
      return agent && mayReceive(agent, packet.topic) && resubscribe.mayDeliver(client, packet) ? packet : null;
    },
  };
}

export function toBuffer(payload: Buffer | string): Buffer {
  return typeof payload === 'string' ? Buffer.from(payload) : payload;
}
