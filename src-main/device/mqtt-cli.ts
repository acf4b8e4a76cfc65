// The `agent` command's MQTT options and the session that runs between enrollment and exit.
import { reportingOf, type AfterEnrollmentHook } from './agent.ts';
import type { StepLog } from './enroll.ts';
import { startMqttAgent, type MqttAgent, type MqttAgentEndReason, type MqttAgentState } from './mqtt-agent.ts';
import type { PolicyRunner, PolicyState } from './policies.ts';
import { policyHandling, taskReportsOf, type TaskReportChannel } from './policy-agent.ts';

export const MQTT_ARGUMENTS = {
  'no-mqtt': { type: 'boolean' },
  stay: { type: 'boolean' },
  'approval-retry': { type: 'string' },
  'mqtt-v31': { type: 'boolean' },
  'mqtt-fingerprint': { type: 'string' },
  'files-dir': { type: 'string' },
  'no-install': { type: 'boolean' },
} as const;

export const MQTT_USAGE = `  --stay                stay connected to the broker (answering commands) until Ctrl+C or unenroll;
                        a device waiting for approval keeps trying until it is approved
  --approval-retry S    with --stay: seconds between tries while waiting for approval (default 30)
  --mqtt-v31            speak MQTT 3.1 (default 3.1.1)
  --mqtt-fingerprint F  with TLS: the broker certificate's SHA-256 to expect (default: pin the first seen)
  --no-mqtt             enroll (and download) without connecting to the broker
  --files-dir DIR       with --stay: write what deployFile/deployApp policies download under DIR
                        (default: downloads are only checked, size and SHA-256, and kept in memory)
  --no-install          with --stay: deployApp downloads and checks the package and reports done, but
                        installs nothing (its inventory does not list it: "not found in inventory")`;

export interface MqttFlags {
  enabled: boolean;
  stay: boolean;
  /** With --stay: how often a device waiting for approval tries the broker again. */
  approvalRetryMs: number;
  protocolVersion: 3 | 4;
  fingerprint?: string;
  /** Where policy task statuses go (a dialect chooses; default mqtt). */
  taskReports?: TaskReportChannel;
  filesDir?: string;
  /** False (--no-install): packages are downloaded and reported done, never installed. */
  install: boolean;
}

export function mqttFlagsOf(values: {
  'no-mqtt'?: boolean;
  stay?: boolean;
  'approval-retry'?: string;
  'mqtt-v31'?: boolean;
  'mqtt-fingerprint'?: string;
  'files-dir'?: string;
  'no-install'?: boolean;
}): MqttFlags {
  if (values['no-mqtt'] && values.stay) throw new Error('--stay needs the MQTT connection: drop --no-mqtt');
  const retry = values['approval-retry'];
  if (retry !== undefined && !values.stay) throw new Error('--approval-retry needs --stay');
  const retrySeconds = retry === undefined ? 30 : Number(retry);
  if (!Number.isFinite(retrySeconds) || retrySeconds < 0.1 || retrySeconds > 3600)
    throw new Error(`--approval-retry must be a number of seconds from 0.1 to 3600, got ${JSON.stringify(retry)}`);
  const flags: MqttFlags = {
    enabled: !values['no-mqtt'],
    stay: values.stay ?? false,
    approvalRetryMs: Math.round(retrySeconds * 1000),
    protocolVersion: values['mqtt-v31'] ? 3 : 4,
    install: values['no-install'] !== true,
  };
  if (values['mqtt-fingerprint'] !== undefined) flags.fingerprint = values['mqtt-fingerprint'];
  if (values['files-dir'] !== undefined) flags.filesDir = values['files-dir'];
  return flags;
}

export interface MqttSessionSummary {
  connected: boolean;
  end: MqttAgentEndReason | null;
  state: MqttAgentState | null;
  /** What the policies installed and each task's last status. */
  policies: PolicyState | null;
}

/** Connects right after enrollment (the runAgent hook); finish() stays (--stay) and then leaves cleanly. */
export class MqttSession {
  private readonly flags: MqttFlags;
  private readonly log: StepLog;
  private agent: MqttAgent | null = null;
  private policies: PolicyRunner | null = null;
  private end: MqttAgentEndReason | null = null;

  constructor(flags: MqttFlags, log: StepLog) {
    this.flags = flags;
    this.log = log;
  }

  readonly hook: AfterEnrollmentHook = async (enrollment, credentials, log) => {
    const { policies, mqtt } = policyHandling(
      {
        backendUrl: enrollment.backendUrl,
        apiToken: enrollment.apiToken,
        agentId: enrollment.agentId,
        topic: credentials.topic,
        reports: this.flags.taskReports ?? taskReportsOf(enrollment.dialect),
        dialect: enrollment.dialect,
        log,
        ...(this.flags.filesDir ? { storageDir: this.flags.filesDir } : {}),
        ...(this.flags.install ? {} : { install: false }),
        ...(enrollment.androidVersion === undefined ? {} : { androidVersion: enrollment.androidVersion }),
        ...(enrollment.system === undefined ? {} : { system: enrollment.system }),
      },
      () => this.agent,
    );
    this.policies = policies;
    const options = {
      ...credentials,
      ...reportingOf(enrollment),
      protocolVersion: this.flags.protocolVersion,
      log,
      ...mqtt,
      // Staying, a device waiting for approval keeps trying (CONNACK 5) instead of leaving.
      ...(this.flags.stay ? { waitForApproval: { retryMs: this.flags.approvalRetryMs } } : {}),
    };
    this.agent = await startMqttAgent(
      this.flags.fingerprint === undefined ? options : { ...options, fingerprint: this.flags.fingerprint },
    );
  };

  /** With --stay: until SIGINT/SIGTERM, unenroll or refusal. Then leaves the broker. */
  async finish(): Promise<MqttSessionSummary> {
    const agent = this.agent;
    if (agent && this.flags.stay) {
      this.log(
        agent.state.waitingForApproval
          ? 'mqtt: staying until approved, then connected; Ctrl+C to leave'
          : 'mqtt: staying connected; Ctrl+C to leave',
      );
      let onSignal = () => {};
      const signalled = new Promise<void>((resolve) => (onSignal = () => resolve()));
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      await Promise.race([signalled, agent.finished]);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    await this.stop();
    return { connected: agent !== null, end: this.end, state: agent?.state ?? null, policies: this.policies?.state ?? null };
  }

  async stop(): Promise<void> {
    if (!this.agent) return;
    await this.agent.stop();
    this.end = await this.agent.finished;
  }
}
