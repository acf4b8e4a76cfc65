// Wires the policy runner to an agent: its REST session (api_token) for downloads and, as the
// dialect chooses, MQTT or REST for the task reports.
import type { AgentApiClient } from './api-client.ts';
import type { Dialect } from './dialect.ts';
import { startAgentSession, type StepLog } from './enroll.ts';
import type { MqttAgent, MqttAgentOptions } from './mqtt-agent.ts';
import { PolicyRunner, type PolicyEvent } from './policies.ts';
import { HttpTaskReporter, MqttTaskReporter, type MqttPublish, type TaskReporter } from './task-reports.ts';

/** mqtt: `T/Status/Task/<id>`; mqtt-policy-topic: rc.6's `<policy topic>/Status/Task/<id>`; http: search + PUT. */
export type TaskReportChannel = 'mqtt' | 'mqtt-policy-topic' | 'http';
export const TASK_REPORT_CHANNELS: readonly TaskReportChannel[] = ['mqtt', 'mqtt-policy-topic', 'http'];

/** How each agent reports its tasks: the spec's on T/Status/Task, rc.6 under the policy topic, rc.7 over REST. */
export function taskReportsOf(dialect: Dialect | undefined): TaskReportChannel {
  if (!dialect || dialect.name === 'spec') return 'mqtt';
  return dialect.reports === 'http' ? 'http' : 'mqtt-policy-topic';
}

export interface PolicyAgentOptions {
  backendUrl: string;
  apiToken: string;
  agentId: string | number;
  /** The agent's own topic. */
  topic: string;
  reports: TaskReportChannel;
  /** Resource names and token placement of the agent's REST calls (default the spec's). */
  dialect?: Dialect;
  /** Publishes on the agent's MQTT connection (needed by the MQTT reporters). */
  publish: MqttPublish;
  log?: StepLog;
  onEvent?: (event: PolicyEvent) => void;
  chunkSize?: number;
  storageDir?: string;
  timeoutMs?: number;
  /** PolicyRunnerOptions.retries. */
  retries?: number;
  /** PolicyRunnerOptions.androidVersion and system. */
  androidVersion?: string;
  system?: boolean;
  /** PolicyRunnerOptions.install (false: packages are reported done, never installed). */
  install?: boolean;
}

export function createPolicyRunner(options: PolicyAgentOptions): PolicyRunner {
  let session: Promise<AgentApiClient> | null = null;
  const open = (renew: boolean): Promise<AgentApiClient> => {
    if (!session || renew) {
      session = startAgentSession(options.backendUrl, options.apiToken, {
        ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
        ...(options.dialect ? { dialect: options.dialect } : {}),
      });
      session.catch(() => (session = null));
    }
    return session;
  };
  const reporter: TaskReporter =
    options.reports === 'http'
      ? new HttpTaskReporter(() => open(false), options.agentId)
      : new MqttTaskReporter(options.publish, options.topic, { underPolicyTopic: options.reports === 'mqtt-policy-topic' });
  return new PolicyRunner({
    session: open,
    reporter,
    ...(options.log ? { log: options.log } : {}),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    ...(options.chunkSize ? { chunkSize: options.chunkSize } : {}),
    ...(options.storageDir ? { storageDir: options.storageDir } : {}),
    ...(options.retries ? { retries: options.retries } : {}),
    ...(options.androidVersion === undefined ? {} : { androidVersion: options.androidVersion }),
    ...(options.system === undefined ? {} : { system: options.system }),
    ...(options.install === undefined ? {} : { install: options.install }),
  });
}

/**
 * The policy half of an agent that stays on the broker (`agent --stay`, startDevice, the console's
 * "Simulate a device"): a runner whose MQTT reports go out on the agent once it exists, and the
 * MqttAgentOptions that hand it the policy messages and list what it installed in each inventory.
 */
export function policyHandling(
  options: Omit<PolicyAgentOptions, 'publish'>,
  agent: () => MqttAgent | null,
): { policies: PolicyRunner; mqtt: Required<Pick<MqttAgentOptions, 'onPolicy' | 'installedApps'>> } {
  const policies = createPolicyRunner({
    ...options,
    publish: (topic, payload) => {
      const connected = agent();
      return connected ? connected.publish(topic, payload) : Promise.reject(new Error('not connected yet'));
    },
  });
  return {
    policies,
    mqtt: {
      onPolicy: (topic, payload) => policies.handle(topic, payload),
      installedApps: () => policies.installedApps(),
    },
  };
}
