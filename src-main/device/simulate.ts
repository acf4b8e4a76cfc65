// "Simulate a device" for the console: the backend's admin route hands an invitation to this
// function, injected by `serve` (the backend never imports the simulator). The shapes repeat
// the backend's DeviceSimulator contract structurally, since this folder knows only the wire.
import { AgentApiError } from './api-client.ts';
import { enrollDevice } from './enroll.ts';

export interface SimulationRequest {
  deeplink: string;
  email: string;
  firstname: string | null;
  lastname: string | null;
  type: 'android' | 'apple';
}

export interface SimulationResult {
  ok: boolean;
  agent_id: number | null;
  serial: string | null;
  type: string;
  /** One line per enrollment step, as the agent CLI prints them. */
  log: string[];
  /** The server's refusal or the failure, when ok is false. */
  error: string | null;
}

/** Enrolls a fresh random device with the invitation; a refusal is an outcome (ok: false), not a throw. */
export async function simulateEnrollment(request: SimulationRequest): Promise<SimulationResult> {
  const log: string[] = [];
  const options: Parameters<typeof enrollDevice>[0] = { deeplink: request.deeplink, email: request.email, type: request.type };
  if (request.firstname !== null) options.firstname = request.firstname;
  if (request.lastname !== null) options.lastname = request.lastname;
  try {
    const result = await enrollDevice(options, (line) => log.push(line));
    const agentId = Number.isInteger(result.agent.id) ? result.agent.id : Number(result.agentId);
    return { ok: true, agent_id: Number.isInteger(agentId) ? agentId : null, serial: result.serial, type: result.type, log, error: null };
  } catch (error) {
    const message =
      error instanceof AgentApiError ? `${error.code}: ${error.serverMessage}`
      : error instanceof Error ? error.message
      : String(error);
    return { ok: false, agent_id: null, serial: null, type: request.type, log, error: message };
  }
}
