// Mosquitto's dynamic-security plugin, driven through its MQTT API ($CONTROL/dynamic-security/v1)
// by the admin account `mosquitto_ctrl dynsec init` made.
import { randomUUID } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import type { AgentTopicRules } from './acl.ts';

const CONTROL_TOPIC = '$CONTROL/dynamic-security/v1';
const RESPONSE_TOPIC = `${CONTROL_TOPIC}/response`;
const COMMAND_TIMEOUT_MS = 10_000;
/**
 * More time per command of a batch: Mosquitto 2.0 rewrites its whole JSON file after each change
 * (~2.3 KB per agent; ~15 ms a change at 1,000 agents, growing with the file), so a reconcile's
 * batch of 100 changes may take longer than 10 s on a broker with thousands of agents.
 */
const PER_COMMAND_MS = 1_000;
/** Commands per control message: big enough for a fast reconcile, small enough for any packet limit. */
export const BATCH = 100;

export type DynsecAclType =
  | 'publishClientSend'
  | 'publishClientReceive'
  | 'subscribeLiteral'
  | 'subscribePattern'
  | 'unsubscribeLiteral'
  | 'unsubscribePattern';

export interface DynsecAcl {
  acltype: DynsecAclType;
  topic: string;
  allow: boolean;
  priority?: number;
}

export interface DynsecCommand {
  command: string;
  [key: string]: unknown;
}

/** A role or client as the verbose getRole / getClient / listRoles / listClients answers describe them. */
export interface DynsecRole {
  rolename: string;
  acls?: DynsecAcl[];
}
export interface DynsecClientEntry {
  username: string;
  textdescription?: string;
  roles?: { rolename: string }[];
}

/** What Mosquitto's plugin answers, per command (only the fields this code reads). */
export interface DynsecResponse {
  command: string;
  error?: string;
  data?: { role?: DynsecRole; client?: DynsecClientEntry; roles?: DynsecRole[]; clients?: DynsecClientEntry[] };
  correlationData?: string;
}

/** The one rule table, as dynamic-security ACLs. */
export function rulesToAcls(rules: AgentTopicRules): DynsecAcl[] {
  return [
    ...rules.publish.map((topic) => ({ acltype: 'publishClientSend' as const, topic, allow: true })),
    ...rules.receive.map((topic) => ({ acltype: 'publishClientReceive' as const, topic, allow: true })),
    ...rules.receive.map((topic) => ({ acltype: 'subscribePattern' as const, topic, allow: true })),
    ...rules.subscribeExact.map((topic) => ({ acltype: 'subscribeLiteral' as const, topic, allow: true })),
  ];
}

/** Request/response over the control topic, matched by correlation data. */
export class DynsecClient {
  private readonly client: MqttClient;
  private readonly waiting = new Map<string, { resolve: (response: DynsecResponse) => void; timer: NodeJS.Timeout }>();

  constructor(client: MqttClient) {
    this.client = client;
    client.on('message', (topic, payload) => {
      if (topic !== RESPONSE_TOPIC) return;
      let responses: DynsecResponse[];
      try {
        responses = (JSON.parse(payload.toString('utf8')) as { responses?: DynsecResponse[] }).responses ?? [];
      } catch {
        return;
      }
      for (const response of responses) {
        const entry = response.correlationData ? this.waiting.get(response.correlationData) : undefined;
        if (!entry) continue;
        clearTimeout(entry.timer);
        this.waiting.delete(response.correlationData!);
        entry.resolve(response);
      }
    });
  }

  async listen(): Promise<void> {
    const granted = await this.client.subscribeAsync(RESPONSE_TOPIC, { qos: 1 });
    if (granted.some((grant) => grant.qos === 128))
      throw new Error(
        `the admin account may not subscribe to ${RESPONSE_TOPIC}: is it the one "mosquitto_ctrl dynsec init" made?`,
      );
  }

  /** Runs commands (in batches) and returns their responses in order; errors are in each response. */
  async run(commands: DynsecCommand[]): Promise<DynsecResponse[]> {
    const responses: DynsecResponse[] = [];
    for (let i = 0; i < commands.length; i += BATCH) {
      const batch = commands.slice(i, i + BATCH).map((command) => ({ ...command, correlationData: randomUUID() }));
      const answers = batch.map(
        (command) =>
          new Promise<DynsecResponse>((resolve) => {
            const timer = setTimeout(
              () => {
                this.waiting.delete(command.correlationData);
                resolve({ command: command.command, error: 'no answer from the broker' });
              },
              COMMAND_TIMEOUT_MS + batch.length * PER_COMMAND_MS,
            );
            this.waiting.set(command.correlationData, { resolve, timer });
          }),
      );
      // QoS 0: the response is the acknowledgement. (A PUBACK followed by the response would meet
      // Nagle's algorithm on the broker's side and wait ~40 ms for the client's delayed ACK.)
      await this.client.publishAsync(CONTROL_TOPIC, JSON.stringify({ commands: batch }), { qos: 0 });
      responses.push(...(await Promise.all(answers)));
    }
    return responses;
  }

  /** One command; throws on an error other than those `tolerated`. */
  async one(command: DynsecCommand, tolerated: RegExp | null = null): Promise<DynsecResponse> {
    const [response] = await this.run([command]);
    if (response!.error && !(tolerated && tolerated.test(response!.error)))
      throw new Error(`${command.command}: ${response!.error}`);
    return response!;
  }

  stop(): void {
    for (const [id, entry] of this.waiting) {
      clearTimeout(entry.timer);
      entry.resolve({ command: id, error: 'connection closed' });
    }
    this.waiting.clear();
  }
}
