import { nowIso } from '../db/database.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog } from '../events/event-log.ts';
import type { FleetRow, FleetService } from '../fleets/fleets.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import { fleetTopic, isUsableAgentTopic, type AgentIdentity } from './acl.ts';
import type { BrokerAgentRow, BrokerAgentStore } from '../agents/broker-repository.ts';
import { ENROLL_STATUS } from '../agents/status.ts';
import { InventoryError, positionOf, type DeviceReports } from '../agents/reports.ts';
import { AGENT_COMMANDS, type AgentCommand, type CommandResult } from '../../../src-shared/contract/index.ts';
import { inFleetScope } from '../fleets/scope.ts';
import { GroupWrite } from '../util/group-write.ts';

/** What the commands need to know of an agent's connections, whatever broker holds them. */
export interface AgentLinks {
  /** Whether the agent is connected now (a ping is only sent then). */
  isConnected(agentId: number): boolean;
  /**
   * The agent now belongs to another fleet: its rights follow (before it is told, so that its
   * subscription to the new fleet's topic is allowed).
   */
  fleetChanged(agentId: number, fleetId: number): void | Promise<void>;
}

// The command names are the contract's: the console offers the same ones.
export { AGENT_COMMANDS, type AgentCommand, type CommandResult };
/** Commands only a connected agent can act on: not kept for later. */
const LIVE_ONLY: readonly AgentCommand[] = ['ping', 'inventory', 'geolocate'];

interface CommandMessage {
  label: string;
  subtopic: string;
  payload: Record<string, unknown>;
  retain: boolean;
}

/** DESIGN.md "MQTT": what each command publishes under the agent's topic. */
const MESSAGES: Record<AgentCommand, CommandMessage> = {
  ping: { label: 'Ping', subtopic: 'Command/Ping', payload: { query: 'Ping' }, retain: false },
  lock: { label: 'Lock', subtopic: 'Command/Lock', payload: { lock: 'now' }, retain: true },
  unlock: { label: 'Unlock', subtopic: 'Command/Lock', payload: { lock: 'unlock' }, retain: true },
  wipe: { label: 'Wipe', subtopic: 'Command/Wipe', payload: { wipe: 'now' }, retain: true },
  unenroll: { label: 'Unenroll', subtopic: 'Command/Unenroll', payload: { unenroll: 'now' }, retain: true },
  // The reference's queries; the agent answers with Status/Inventory / Status/Geolocation (MQTT) or over HTTP.
  inventory: { label: 'Inventory request', subtopic: 'Command/Inventory', payload: { query: 'Inventory' }, retain: false },
  geolocate: { label: 'Geolocate request', subtopic: 'Command/Geolocate', payload: { query: 'Geolocate' }, retain: false },
};
const SUBSCRIBE_SUBTOPIC = 'Command/Subscribe';

/** A ping's answer, until it is written. */
interface PingReply {
  agent: AgentIdentity;
  rtt: number;
  payload: string;
  transport: 'mqtt' | 'http';
}

/** The backend's own publishing, with the rights of the backend (outside the agents' ACL). */
export interface Publisher {
  /** `payload` may be one buffer shared by many publishes (a bulk command): it is never changed. */
  publish(topic: string, payload: string | Buffer, retain: boolean): Promise<void>;
}

/** Status events other than the known replies: at most one per agent and topic in this time. */
const STATUS_EVENT_INTERVAL_MS = 5_000;
const STATUS_PAYLOAD_LIMIT = 1_000;

/**
 * Commands to agents and their replies: the rules (who may receive what, which flags follow) and
 * the messages. Retained commands are remembered per topic so they can be cleared when an agent
 * leaves or enrolls again (a stale retained Unenroll would unenroll the new install at once).
 */
export class AgentCommands {
  private readonly store: BrokerAgentStore;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly fleets: FleetService;
  private readonly links: AgentLinks;
  private readonly publisher: Publisher;
  private readonly pendingPings = new Map<number, number>();
  /** agent id → its topic and the retained messages (subtopic → payload) sent to it in this run. */
  private readonly retained = new Map<number, { topic: string; messages: Map<string, string> }>();
  private readonly lastStatusEvent = new Map<string, number>();

  private readonly reports: DeviceReports;
  /** Ping answers over MQTT, written a group per transaction (util/group-write.ts). */
  private readonly pingReplies = new GroupWrite<PingReply>((replies) => this.work.run(() => this.recordPingReplies(replies)));

  constructor(deps: {
    store: BrokerAgentStore;
    events: EventLog;
    work: UnitOfWork;
    fleets: FleetService;
    links: AgentLinks;
    publisher: Publisher;
    reports: DeviceReports;
  }) {
    this.reports = deps.reports;
    this.store = deps.store;
    this.events = deps.events;
    this.work = deps.work;
    this.fleets = deps.fleets;
    this.links = deps.links;
    this.publisher = deps.publisher;
  }

  async send(agentId: number, command: AgentCommand): Promise<CommandResult> {
    const agent = await this.commandable(agentId);
    const message = MESSAGES[command];
    const online = this.links.isConnected(agentId);
    if (LIVE_ONLY.includes(command) && !online) {
      throw new ApiError(
        409,
        'ERROR_AGENT_OFFLINE',
        `${agent.name} is offline: ${message.label.toLowerCase()} is not kept for later (lock, wipe and unenroll are)`,
      );
    }
    const topic = `${agent.topic}/${message.subtopic}`;
    const at = nowIso();
    const event = await this.work.run(async () => {
      if (command === 'lock' || command === 'unlock') await this.store.setLock(agentId, command === 'lock', at);
      if (command === 'wipe') await this.store.setWipe(agentId, true, at);
      if (command === 'unenroll') await this.store.setEnrollStatus(agentId, ENROLL_STATUS.unenrolling, at);
      return this.events.record(
        'agent.command',
        `${message.label} sent to ${agent.name}${online || !message.retain ? '' : ' (kept until it connects)'}`,
        { entityId: agent.entity_id, agentId, agentName: agent.name },
        { command, topic, payload: message.payload, retained: message.retain, online, ...stateChange(agent, command) },
      );
    });
    if (command === 'ping') this.pendingPings.set(agentId, Date.now());
    await this.publish(agent, message.subtopic, message.payload, message.retain);
    return { agent_id: agentId, command, topic, payload: message.payload, retained: message.retain, online, event_id: event.id };
  }

  /**
   * Another node sent this agent a ping at `sentAt` (its `agent.command` event, seen on the cluster
   * feed): the reply may reach this node (an external broker's shared subscription, an HTTP report
   * through the balancer), and is then recorded as that ping's reply, with its latency.
   */
  pingSentElsewhere(agentId: number, sentAt: number): void {
    const known = this.pendingPings.get(agentId);
    if (known === undefined || known < sentAt) this.pendingPings.set(agentId, sentAt);
    if (this.pendingPings.size > 100_000) this.pendingPings.clear();
  }

  /** Another node recorded the reply to this agent's ping: none is awaited here any more. */
  pingAnsweredElsewhere(agentId: number): void {
    this.pendingPings.delete(agentId);
  }

  /** Whether the agent is connected now (to this broker or the external one). */
  isConnected(agentId: number): boolean {
    return this.links.isConnected(agentId);
  }

  /**
   * The bulk path for many agents at once: the message's text and buffer are made once and shared
   * by every publish (the broker never changes a payload); one publish per agent, all in flight
   * together. Resolves once every publish is acknowledged or failed: the failures, per agent.
   */
  async publishCommands(
    agents: readonly { id: number; topic: string }[],
    command: AgentCommand,
  ): Promise<{ agentId: number; error: unknown }[]> {
    const message = MESSAGES[command];
    const text = JSON.stringify(message.payload);
    const payload = Buffer.from(text);
    const sentAt = Date.now();
    const failures: { agentId: number; error: unknown }[] = [];
    await Promise.all(
      agents.map((agent) => {
        if (command === 'ping') this.pendingPings.set(agent.id, sentAt);
        if (message.retain) this.rememberRetained(agent, message.subtopic, text);
        return this.publisher.publish(`${agent.topic}/${message.subtopic}`, payload, message.retain).catch((error: unknown) => {
          failures.push({ agentId: agent.id, error });
        });
      }),
    );
    return failures;
  }

  /** Moves the agent to another fleet of its entity and tells it with a retained Command/Subscribe. */
  async moveToFleet(agentId: number, target: { fleet_id?: number; fleet?: string }): Promise<CommandResult | null> {
    const agent = await this.commandable(agentId);
    let fleet: FleetRow;
    if (target.fleet_id !== undefined) {
      fleet = await this.fleets.get(target.fleet_id);
      if (fleet.entity_id !== agent.entity_id) {
        throw new ApiError(400, 'ERROR_UNKNOWN_FLEET', `Fleet #${fleet.id} belongs to another entity than ${agent.name}`);
      }
    } else {
      fleet = await this.fleets.resolve(agent.entity_id, target.fleet ?? '');
    }
    if (fleet.id === agent.fleet_id) return null;
    const previous = await this.fleets.byId(agent.fleet_id);
    const payload = { subscribe: [{ topic: fleetTopic(agent.entity_id, fleet.id) }] };
    const topic = `${agent.topic}/${SUBSCRIBE_SUBTOPIC}`;
    const online = this.links.isConnected(agentId);
    const event = await this.work.run(async () => {
      await this.store.setFleet(agentId, fleet.id, nowIso());
      return this.events.record(
        'agent.fleet_changed',
        `${agent.name} moved from fleet "${previous?.name ?? agent.fleet_id}" to "${fleet.name}"`,
        { entityId: agent.entity_id, agentId, agentName: agent.name },
        {
          from_fleet_id: agent.fleet_id,
          fleet_id: fleet.id,
          command: 'subscribe',
          topic,
          payload,
          retained: true,
          online,
          before: { fleet: previous?.name ?? null },
          after: { fleet: fleet.name },
        },
      );
    });
    await this.links.fleetChanged(agentId, fleet.id);
    await this.publish(agent, SUBSCRIBE_SUBTOPIC, payload, true);
    return { agent_id: agentId, command: 'subscribe', topic, payload, retained: true, online, event_id: event.id };
  }

  /**
   * Tells the agent which fleet topic to subscribe to (retained Command/Subscribe), as the
   * reference does when an agent is created: without it a new device never hears its fleet's policies.
   */
  async announceFleet(agentId: number): Promise<void> {
    const agent = await this.store.byId(agentId);
    if (!agent || agent.enroll_status === ENROLL_STATUS.unenrolled) return;
    await this.publish(agent, SUBSCRIBE_SUBTOPIC, { subscribe: [{ topic: fleetTopic(agent.entity_id, agent.fleet_id) }] }, true);
  }

  /** After a restart: every enrolled agent's Command/Subscribe is retained again. */
  async restoreSubscriptions(): Promise<number> {
    const agents = await this.store.connectable();
    for (const agent of agents)
      await this.publish(
        agent,
        SUBSCRIBE_SUBTOPIC,
        { subscribe: [{ topic: fleetTopic(agent.entity_id, agent.fleet_id) }] },
        true,
      );
    return agents.length;
  }

  /**
   * A message the agent published under `T/Status/…` or `T/MdmManifest/…` (Online excepted,
   * presence has it): replies update the record, anything else is noted, rate-limited.
   */
  async received(agent: AgentIdentity, subtopic: string, payload: Buffer, transport: 'mqtt' | 'http' = 'mqtt'): Promise<void> {
    const refs = { entityId: agent.entityId, agentId: agent.id };
    const over = transport === 'http' ? ' over HTTP' : '';
    const text = payload.toString('utf8');
    if (subtopic === 'Status/Ping' && this.pendingPings.has(agent.id)) {
      const rtt = Date.now() - this.pendingPings.get(agent.id)!;
      this.pendingPings.delete(agent.id);
      const reply: PingReply = { agent, rtt, payload: text.slice(0, 100), transport };
      // Over MQTT the answers to a bulk ping arrive by the thousand: written a group at a time.
      if (transport === 'mqtt') await this.pingReplies.add(reply);
      else await this.work.run(() => this.recordPingReplies([reply]));
      return;
    }
    if (subtopic === 'Status/Inventory' && (await this.inventoryReceived(agent, text))) return;
    if (subtopic === 'Status/Geolocation' && text !== '?' && (await this.positionReceived(agent, text))) return;
    if (subtopic === 'Status/Unenroll' && parseJson(text)?.unenroll === 'unenrolled') {
      const row = await this.store.byId(agent.id);
      if (row && row.enroll_status !== ENROLL_STATUS.unenrolled) {
        await this.work.run(async () => {
          await this.store.setEnrollStatus(agent.id, ENROLL_STATUS.unenrolled, nowIso());
          await this.events.record('agent.unenrolled', `${agent.name} confirmed it is unenrolled`, refs, {
            previous_status: row.enroll_status,
          });
        });
        // Its retained commands and account go with the event (agent-accounts.ts).
        return;
      }
    }
    await this.store.reported(agent.id, nowIso());
    const key = `${agent.id} ${subtopic}`;
    const now = Date.now();
    if (now - (this.lastStatusEvent.get(key) ?? 0) < STATUS_EVENT_INTERVAL_MS) return;
    if (this.lastStatusEvent.size > 10_000) this.lastStatusEvent.clear();
    this.lastStatusEvent.set(key, now);
    await this.events.record('agent.status', `${agent.name} sent ${subtopic}${over}`, refs, {
      topic: subtopic,
      transport,
      payload: text.length > STATUS_PAYLOAD_LIMIT ? `${text.slice(0, STATUS_PAYLOAD_LIMIT)}…` : text,
    });
  }

  /** Each reply's `last_contact` (one statement) and its `agent.ping_reply` event, in the caller's transaction. */
  private async recordPingReplies(replies: readonly PingReply[]): Promise<void> {
    await this.store.touchMany(
      replies.map((reply) => reply.agent.id),
      nowIso(),
    );
    for (const { agent, rtt, payload, transport } of replies) {
      const over = transport === 'http' ? ' over HTTP' : '';
      await this.events.record(
        'agent.ping_reply',
        `${agent.name} answered the ping (${rtt} ms)${over}`,
        { entityId: agent.entityId, agentId: agent.id },
        { payload, rtt_ms: rtt, transport },
      );
    }
  }

  /** `T/Status/Inventory`: the FusionInventory XML (release rc.6). False when it cannot be read: noted as any status is. */
  private async inventoryReceived(agent: AgentIdentity, xml: string): Promise<boolean> {
    try {
      await this.reports.inventory(agent.id, xml, 'mqtt');
      return true;
    } catch (error) {
      if (error instanceof InventoryError) return false;
      throw error;
    }
  }

  /** `T/Status/Geolocation` `{"latitude", "longitude", "datetime"}` or `{"gps": "off", "datetime"}`. */
  private async positionReceived(agent: AgentIdentity, text: string): Promise<boolean> {
    const body = parseJson(text);
    if (!body) return false;
    const position = positionOf({ latitude: body.latitude, longitude: body.longitude, datetime: body.datetime, gps: body.gps });
    if ('error' in position) return false;
    await this.reports.position(agent.id, position, 'mqtt');
    return true;
  }

  /**
   * Retained messages live in the broker's memory: after a restart, the commands the records still
   * hold (lock, wipe, unenroll) are retained again, so an agent that was offline still gets them.
   */
  async restoreRetained(): Promise<number> {
    const agents = await this.store.withPendingCommands();
    for (const agent of agents) {
      for (const command of pendingCommands(agent))
        await this.publish(agent, MESSAGES[command].subtopic, MESSAGES[command].payload, true);
    }
    for (const [agentId, entry] of this.retained) {
      if (agents.some((agent) => agent.id === agentId)) continue;
      for (const [subtopic, payload] of entry.messages)
        if (payload !== '') await this.publisher.publish(`${entry.topic}/${subtopic}`, payload, true);
    }
    return agents.length;
  }

  /**
   * Publishes again, retained, what this agent must find when it connects: the commands its record
   * holds and the retained messages of this run. For brokers whose retained messages may be
   * lost or kept on another node (RabbitMQ keeps them per node).
   */
  async republishFor(agentId: number): Promise<void> {
    const row = await this.store.byId(agentId);
    if (!row || row.enroll_status === ENROLL_STATUS.unenrolled) return;
    const sent = new Set<string>();
    for (const command of pendingCommands(row)) {
      sent.add(MESSAGES[command].subtopic);
      await this.publish(row, MESSAGES[command].subtopic, MESSAGES[command].payload, true);
    }
    const entry = this.retained.get(agentId);
    if (!entry || entry.topic !== row.topic) return;
    for (const [subtopic, payload] of entry.messages) {
      if (!sent.has(subtopic) && payload !== '') await this.publisher.publish(`${entry.topic}/${subtopic}`, payload, true);
    }
  }

  /** Clears an agent's retained commands (it was deleted, unenrolled or enrolled again). */
  forgetAgent(agentId: number): void {
    const entry = this.retained.get(agentId);
    this.retained.delete(agentId);
    this.pendingPings.delete(agentId);
    for (const subtopic of entry?.messages.keys() ?? [])
      void this.publisher.publish(`${entry!.topic}/${subtopic}`, '', true).catch(() => {});
  }

  private async commandable(agentId: number): Promise<BrokerAgentRow> {
    const agent = await this.store.byId(agentId);
    // A device of a fleet the request may not see answers as if it did not exist (fleets/scope.ts).
    if (!agent || !inFleetScope(agent.fleet_id)) throw itemNotFound('Agent not found');
    const refusal = commandRefusal(agent);
    if (refusal) throw refusal;
    return agent;
  }

  private async publish(
    agent: { id: number; topic: string },
    subtopic: string,
    payload: Record<string, unknown>,
    retain: boolean,
  ): Promise<void> {
    const text = JSON.stringify(payload);
    if (retain) this.rememberRetained(agent, subtopic, text);
    await this.publisher.publish(`${agent.topic}/${subtopic}`, text, retain);
  }

  private rememberRetained(agent: { id: number; topic: string }, subtopic: string, text: string): void {
    let entry = this.retained.get(agent.id);
    if (!entry || entry.topic !== agent.topic) this.retained.set(agent.id, (entry = { topic: agent.topic, messages: new Map() }));
    entry.messages.set(subtopic, text);
  }
}

/** Why no command may go to this agent (an ApiError to throw or to record), or null when one may. */
export function commandRefusal(agent: { name: string; enroll_status: string; topic: string }): ApiError | null {
  if (agent.enroll_status === ENROLL_STATUS.unenrolled) {
    return new ApiError(
      409,
      'ERROR_AGENT_UNENROLLED',
      `${agent.name} is unenrolled: enroll the device again before sending it commands`,
    );
  }
  if (!isUsableAgentTopic(agent.topic)) {
    // Its login was another device's (migration 3 disabled it): a command could reach the wrong device.
    return new ApiError(
      409,
      'ERROR_AGENT_NO_TOPIC',
      `${agent.name} has no usable MQTT topic: remove it and enroll the device again`,
    );
  }
  return null;
}

/** Commands only a connected agent can act on (ping, inventory, geolocate): never kept for later. */
export const isLiveOnlyCommand = (command: AgentCommand): boolean => LIVE_ONLY.includes(command);

/** The retained commands an agent's record still holds. */
function pendingCommands(agent: BrokerAgentRow): AgentCommand[] {
  const pending: AgentCommand[] = [];
  if (agent.lock === 1) pending.push('lock');
  if (agent.wipe === 1) pending.push('wipe');
  if (agent.enroll_status === ENROLL_STATUS.unenrolling) pending.push('unenroll');
  return pending;
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The device's state a command changes, before and after (a ping changes none). */
function stateChange(agent: { lock: number; wipe: number; enroll_status: string }, command: AgentCommand) {
  if (command === 'lock' || command === 'unlock') {
    return { before: { locked: agent.lock === 1 }, after: { locked: command === 'lock' } };
  }
  if (command === 'wipe') return { before: { wipe: agent.wipe === 1 }, after: { wipe: true } };
  if (command === 'unenroll')
    return { before: { enroll_status: agent.enroll_status }, after: { enroll_status: ENROLL_STATUS.unenrolling } };
  return {};
}
