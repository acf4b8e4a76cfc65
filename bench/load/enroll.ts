// Enrollment load: simulated devices (the device simulator, wire only) running the full
// five-request sequence, `concurrency` at a time, each timing its own requests.
import { enrollDevice, mqttCredentialsOf, type MqttCredentials } from '../../src-main/device/index.ts';

export const STEP_NAMES = [
  'initSession',
  'getFullSession',
  'changeActiveProfile',
  'POST PluginMdmAgent',
  'GET PluginMdmAgent/<id>',
] as const;

export interface Invite {
  deeplink: string;
  email: string;
}

export interface EnrolledAgent extends MqttCredentials {
  agentId: number;
  /** The device's REST base URL and api token: enough to read its record again. */
  backendUrl: string;
  apiToken: string;
}

export interface EnrollLoadResult {
  enrolled: EnrolledAgent[];
  /** Per step, the latency of every request in ms. */
  steps: number[][];
  errors: string[];
  elapsedMs: number;
}

/** Runs `invites` through the simulator, `concurrency` devices at a time. */
export async function enrollLoad(
  invites: readonly Invite[],
  concurrency: number,
  options: { serialPrefix?: string } = {},
): Promise<EnrollLoadResult> {
  const steps: number[][] = STEP_NAMES.map(() => []);
  const enrolled: EnrolledAgent[] = [];
  const errors: string[] = [];
  let next = 0;
  const started = performance.now();
  const device = async () => {
    while (next < invites.length) {
      const index = next++;
      const invite = invites[index]!;
      const marks: number[] = [];
      try {
        const result = await enrollDevice(
          {
            deeplink: invite.deeplink,
            email: invite.email,
            ...(options.serialPrefix ? { serial: `${options.serialPrefix}${index}` } : {}),
          },
          // One line per step, written as the step completes: the time between lines is the request.
          () => marks.push(performance.now()),
        );
        for (let step = 0; step < STEP_NAMES.length; step++) steps[step]!.push(marks[step + 1]! - marks[step]!);
        enrolled.push({
          ...mqttCredentialsOf(result),
          agentId: Number(result.agentId),
          backendUrl: result.backendUrl,
          apiToken: result.apiToken,
        });
      } catch (error) {
        if (errors.length < 20) errors.push(error instanceof Error ? error.message : String(error));
        else errors.push('');
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, device));
  return { enrolled, steps, errors, elapsedMs: performance.now() - started };
}
