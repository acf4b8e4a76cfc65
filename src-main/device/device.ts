// A simulated device that stays: enrolled, connected to the broker, obeying commands and policies.
// For tests, demos and load generation (the CLI's `agent --stay` runs the same pieces).
import { enrollDevice, mqttCredentialsOf, type EnrollmentResult, type EnrollOptions, type StepLog } from './enroll.ts';
import { startMqttAgent, type MqttAgent, type MqttAgentOptions } from './mqtt-agent.ts';
import type { PolicyEvent, PolicyRunner } from './policies.ts';
import { reportingOf } from './agent.ts';
import { policyHandling, taskReportsOf, type TaskReportChannel } from './policy-agent.ts';

export interface DeviceOptions extends EnrollOptions {
  /** How task statuses reach the server (default: as the dialect's agent does, `T/Status/Task/<id>` for the spec's). */
  reports?: TaskReportChannel;
  protocolVersion?: 3 | 4;
  chunkSize?: number;
  storageDir?: string;
  /** Downloads resumed after a network error or a 503, up to this many times (default 0). */
  downloadRetries?: number;
  log?: StepLog;
  /** False: packages are downloaded and reported done, never installed (its inventory does not list them). */
  install?: boolean;
  onPolicyEvent?: (event: PolicyEvent) => void;
  mqtt?: Partial<Pick<MqttAgentOptions, 'backoff' | 'firstConnectTimeoutMs' | 'keepaliveSeconds' | 'onEvent'>>;
}

export interface SimulatedDevice {
  enrollment: EnrollmentResult;
  agent: MqttAgent;
  policies: PolicyRunner;
  stop(): Promise<void>;
}

/** Enrolls, connects and starts obeying policies; stop() leaves the broker cleanly. */
export async function startDevice(options: DeviceOptions): Promise<SimulatedDevice> {
  const log = options.log ?? (() => {});
  const enrollment = await enrollDevice(options, log);
  return connectEnrolledDevice(enrollment, options);
}

/** The MQTT and policy half of startDevice, for a device enrolled already. */
export async function connectEnrolledDevice(
  enrollment: EnrollmentResult,
  options: Omit<DeviceOptions, keyof EnrollOptions> & Partial<EnrollOptions> = {},
): Promise<SimulatedDevice> {
  const credentials = mqttCredentialsOf(enrollment);
  let agent: MqttAgent | null = null;
  const { policies, mqtt } = policyHandling(
    {
      backendUrl: enrollment.backendUrl,
      apiToken: enrollment.apiToken,
      agentId: enrollment.agentId,
      topic: credentials.topic,
      reports: options.reports ?? taskReportsOf(enrollment.dialect),
      dialect: enrollment.dialect,
      ...(options.log ? { log: options.log } : {}),
      ...(options.onPolicyEvent ? { onEvent: options.onPolicyEvent } : {}),
      ...(options.chunkSize ? { chunkSize: options.chunkSize } : {}),
      ...(options.storageDir ? { storageDir: options.storageDir } : {}),
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.downloadRetries ? { retries: options.downloadRetries } : {}),
      ...(enrollment.androidVersion === undefined ? {} : { androidVersion: enrollment.androidVersion }),
      ...(enrollment.system === undefined ? {} : { system: enrollment.system }),
      ...(options.install === undefined ? {} : { install: options.install }),
    },
    () => agent,
  );
  agent = await startMqttAgent({
    ...credentials,
    ...reportingOf(enrollment),
    ...(options.mqtt ?? {}),
    protocolVersion: options.protocolVersion ?? 4,
    ...(options.log ? { log: options.log } : {}),
    ...mqtt,
  });
  const connected = agent;
  return { enrollment, agent: connected, policies, stop: () => connected.stop() };
}
