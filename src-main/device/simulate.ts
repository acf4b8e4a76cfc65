// "Simulate a device" for the console: one enrollment run, its step log collected, never thrown.
// Its shape matches the backend's DeviceSimulator structurally: nothing here imports the backend.
import { runAgent } from './agent.ts';
import { AgentApiError } from './api-client.ts';

export interface SimulateEnrollmentRequest {
  deeplink: string;
  email: string;
  firstname: string | null;
  lastname: string | null;
  type: 'android' | 'apple';
}

export interface SimulateEnrollmentResult {
  ok: boolean;
  agent_id: number | null;
  serial: string | null;
  type: string;
  log: string[];
  error: string | null;
}

/** Enrolls a simulated device with the invitation's deeplink; resolves with the outcome and step log. */
export async function simulateEnrollment(request: SimulateEnrollmentRequest): Promise<SimulateEnrollmentResult> {
  const log: string[] = [];
  const options = {
    deeplink: request.deeplink,
    email: request.email,
    type: request.type,
    timeoutMs: 15_000,
    ...(request.firstname ? { firstname: request.firstname } : {}),
    ...(request.lastname ? { lastname: request.lastname } : {}),
  };
  try {
    const result = await runAgent(options, (line) => log.push(line));
    return { ok: true, agent_id: Number(result.enrollment.agentId), serial: result.enrollment.serial, type: result.enrollment.type, log, error: null };
  } catch (error) {
    const message = error instanceof AgentApiError ? error.serverMessage : error instanceof Error ? error.message : String(error);
    return { ok: false, agent_id: null, serial: null, type: request.type, log, error: message };
  }
}
