// "Simulate a device" for the console: one enrollment run, its step log collected, never thrown.
// Its shape matches the backend's DeviceSimulator structurally: nothing here imports the backend.
// With stayOnline, after enrolling the device connects to the broker and stays online (answering pings, obeying
// lock/wipe/unenroll), as a phone would, until it is unenrolled or stopSimulatedDevices() runs.
import { reportingOf, runAgent } from './agent.ts';
import { dialectOf } from './dialect.ts';
import { AgentApiError } from './api-client.ts';
import { startMqttAgent, type MqttAgent } from './mqtt-agent.ts';

export interface SimulateEnrollmentRequest {
  deeplink: string;
  email: string;
  firstname: string | null;
  lastname: string | null;
  type: 'android' | 'apple';
  /** The agent app the invitation was made for (the `agent_app` setting): the device speaks its dialect. */
  agent_app?: 'spec' | 'flyve';
}

export interface SimulateEnrollmentResult {
  ok: boolean;
  agent_id: number | null;
  serial: string | null;
  type: string;
  log: string[];
  error: string | null;
}

/** Simulated devices still connected to the broker. */
const connected = new Set<MqttAgent>();

/** Enrolls a simulated device with the invitation's deeplink; resolves with the outcome and step log. */
export async function simulateEnrollment(
  request: SimulateEnrollmentRequest,
  { stayOnline = false } = {},
): Promise<SimulateEnrollmentResult> {
  const log: string[] = [];
  const options = {
    deeplink: request.deeplink,
    email: request.email,
    type: request.type,
    timeoutMs: 15_000,
    // A Flyve agent of release rc.7 (reports over HTTP), as the phones running the reference app today.
    ...(request.agent_app === 'flyve' ? { dialect: dialectOf('flyve', 'http') } : {}),
    ...(request.firstname ? { firstname: request.firstname } : {}),
    ...(request.lastname ? { lastname: request.lastname } : {}),
  };
  let result;
  try {
    result = await runAgent(options, (line) => log.push(line));
  } catch (error) {
    const message = error instanceof AgentApiError ? error.serverMessage : error instanceof Error ? error.message : String(error);
    return { ok: false, agent_id: null, serial: null, type: request.type, log, error: message };
  }
  if (stayOnline) {
    // Enrolled either way; a broker that cannot be reached only means the device shows offline.
    try {
      const agent = await startMqttAgent({
        ...result.mqtt,
        ...reportingOf(result.enrollment),
        firstConnectTimeoutMs: 10_000,
        log: (line) => log.push(line),
      });
      connected.add(agent);
      void agent.finished.then(() => connected.delete(agent));
    } catch (error) {
      log.push(`MQTT … not connected: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return {
    ok: true,
    agent_id: Number(result.enrollment.agentId),
    serial: result.enrollment.serial,
    type: result.enrollment.type,
    log,
    error: null,
  };
}

/** Disconnects every simulated device (cleanly: they say they are offline). */
export async function stopSimulatedDevices(): Promise<void> {
  const agents = [...connected];
  connected.clear();
  await Promise.allSettled(agents.map((agent) => agent.stop()));
}
