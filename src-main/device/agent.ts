// The simulated agent's life: enroll, (later) connect to MQTT, download what it was asked to.
// Programmatic entry points for the CLI, tests and load generation; nothing here prints.
import { downloadAndVerify } from './download.ts';
import type { DownloadSummary, DownloadTarget } from './download.ts';
import { enrollDevice, mqttCredentialsOf } from './enroll.ts';
import type { EnrollmentResult, EnrollOptions, MqttCredentials, StepLog } from './enroll.ts';
import type { MqttAgentOptions } from './mqtt-agent.ts';

/**
 * Extension point: runs right after enrollment, before any download. The MQTT task plugs its
 * connection in here (login = serial, password = mqttpasswd, see mqttCredentialsOf).
 */
export type AfterEnrollmentHook = (enrollment: EnrollmentResult, mqtt: MqttCredentials, log: StepLog) => Promise<void>;

export interface AgentRunOptions extends EnrollOptions {
  /** "file:ID" / "package:ID" or targets, downloaded and verified in order after enrollment. */
  downloads?: (string | DownloadTarget)[];
  afterEnrollment?: AfterEnrollmentHook;
}

export interface AgentRunResult {
  enrollment: EnrollmentResult;
  mqtt: MqttCredentials;
  downloads: DownloadSummary[];
  /** False when a download check failed (errors are thrown instead). */
  ok: boolean;
}

/** Enrolls, runs the after-enrollment hook, then downloads each target with the api_token. */
export async function runAgent(options: AgentRunOptions, log: StepLog = () => {}): Promise<AgentRunResult> {
  const enrollment = await enrollDevice(options, log);
  const mqtt = mqttCredentialsOf(enrollment);
  if (options.afterEnrollment !== undefined) await options.afterEnrollment(enrollment, mqtt, log);

  const downloads: DownloadSummary[] = [];
  for (const target of options.downloads ?? []) {
    const downloadOptions = {
      backendUrl: enrollment.backendUrl,
      apiToken: enrollment.apiToken,
      target,
      dialect: enrollment.dialect,
    };
    downloads.push(
      await downloadAndVerify(
        options.timeoutMs === undefined ? downloadOptions : { ...downloadOptions, timeoutMs: options.timeoutMs },
        log,
      ),
    );
  }
  return { enrollment, mqtt, downloads, ok: downloads.every((summary) => summary.ok) };
}

/** What the MQTT side needs of an enrollment besides credentials: dialect, device, HTTP report target. */
export function reportingOf(enrollment: EnrollmentResult): Pick<MqttAgentOptions, 'dialect' | 'device' | 'http'> {
  const computersId = Number(enrollment.agent.computers_id);
  return {
    dialect: enrollment.dialect,
    device: {
      serial: enrollment.serial,
      uuid: enrollment.uuid,
      type: enrollment.type,
      ...(enrollment.androidVersion ? { androidVersion: enrollment.androidVersion } : {}),
    },
    http: {
      backendUrl: enrollment.backendUrl,
      apiToken: enrollment.apiToken,
      agentId: enrollment.agentId,
      ...(Number.isInteger(computersId) ? { computersId } : {}),
    },
  };
}

/** Enrollment without any output, for tests and load generation. Throws like enrollDevice. */
export function enrollSilently(options: EnrollOptions): Promise<EnrollmentResult> {
  return enrollDevice(options);
}
