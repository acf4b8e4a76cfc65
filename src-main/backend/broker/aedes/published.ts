// aedes' `published` hook: what an agent publishes under its own topic reaches presence (its
// Status/Online), task reports (Status/Task/<id>) and commands (replies, inventories, positions).
import type { AedesOptions } from 'aedes';
import { unlessDiskFull } from '../../db/disk-full.ts';
import { mayPublish, statusTaskId } from '../acl.ts';
import type { AgentCommands } from '../commands.ts';
import type { ConnectionRegistry } from '../connections.ts';
import type { TaskReportHandler } from '../port.ts';
import { ONLINE_SUBTOPIC, onlineFlag, type PresenceTracker } from '../presence.ts';
import { DENIED_PREFIX, toBuffer } from './authorize.ts';

export interface PublishedOptions {
  registry: ConnectionRegistry;
  presence: PresenceTracker;
  commands: AgentCommands;
  /** A task status report of an agent (`T/Status/Task/<id>`). */
  onTaskReport?: TaskReportHandler | undefined;
}

export function publishedHook({
  registry,
  presence,
  commands,
  onTaskReport,
}: PublishedOptions): NonNullable<AedesOptions['published']> {
  const received = (
    packet: Parameters<NonNullable<AedesOptions['published']>>[0],
    client: Parameters<NonNullable<AedesOptions['published']>>[1],
  ) => {
    const agent = registry.identityOf(client);
    if (!client || !agent || packet.topic.startsWith(DENIED_PREFIX) || !mayPublish(agent, packet.topic)) return;
    const subtopic = packet.topic.slice(agent.topic.length + 1);
    const payload = toBuffer(packet.payload);
    unlessDiskFull(async () => {
      if (subtopic === ONLINE_SUBTOPIC) {
        await presence.reported(client, agent, onlineFlag(payload), packet.retain);
        return;
      }
      if (!client.closed) await presence.touch(agent);
      const taskId = statusTaskId(agent, packet.topic);
      if (taskId !== null && onTaskReport) {
        await onTaskReport(agent, taskId, payload);
        return;
      }
      await commands.received(agent, subtopic, payload);
    });
  };
  return (packet, client, done) => {
    try {
      received(packet, client);
    } finally {
      done();
    }
  };
}
