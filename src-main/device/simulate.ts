// "Simulate a device" for the console: one enrollment run, its step log collected, never thrown.
// Its shape matches the backend's DeviceSimulator structurally: nothing here imports the backend.
// With stayOnline, after enrolling the device connects to the broker and stays online (answering pings, obeying
// lock/wipe/unenroll, and every policy and deployment as the CLI's `agent --stay` does), as a phone would, until it is unenrolled or stopSimulatedDevices() runs. A device that
// waits for an admin's approval keeps trying the broker until it is approved, as the reference agent does.
// With a state file, the devices are remembered (their credentials, as a phone keeps them) and
// resumeSimulatedDevices() brings them back after a server restart.
import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { reportingOf, runAgent } from './agent.ts';
import { dialectOf, type DialectName, type ReportTransport } from './dialect.ts';
import { AgentApiError } from './api-client.ts';
import type { MqttCredentials } from './enroll.ts';
import { MqttAgent, type MqttAgentOptions } from './mqtt-agent.ts';
import { policyHandling, taskReportsOf } from './policy-agent.ts';
import type { HttpReportTarget, ReportingDevice } from './reporter.ts';

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
  /** Enrolled with a code that needs an admin's approval: the device waits (and comes online once approved). */
  waiting_for_approval: boolean;
  log: string[];
  error: string | null;
}

export interface SimulateOptions {
  /** After enrolling, connect to the broker and stay there (waiting for approval first when needed). */
  stayOnline?: boolean;
  /** Where the devices that stay are remembered (JSON, 0600), for resumeSimulatedDevices(). */
  stateFile?: string;
  /** How often a device waiting for approval tries the broker again (default 30 s). */
  approvalRetryMs?: number;
}

/** What a staying device keeps, as a phone keeps what its record gave it. */
interface RememberedDevice {
  agent_id: number;
  mqtt: MqttCredentials;
  /** The pinned broker certificate (TLS). */
  fingerprint: string | null;
  dialect: { name: DialectName; reports: ReportTransport };
  device: ReportingDevice;
  http: HttpReportTarget;
  /** Whether it said it is a system app (system-only policies need it). */
  system?: boolean;
}

/** Simulated devices still running (connected, or waiting to be), by agent id. */
const running = new Map<number, MqttAgent>();
/** The state file's devices, by agent id, and the writes to it, one at a time. */
const remembered = new Map<string, Map<number, RememberedDevice>>();
let writing: Promise<void> = Promise.resolve();

/** Enrolls a simulated device with the invitation's deeplink; resolves with the outcome and step log. */
export async function simulateEnrollment(
  request: SimulateEnrollmentRequest,
  { stayOnline = false, stateFile, approvalRetryMs }: SimulateOptions = {},
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
    return { ok: false, agent_id: null, serial: null, type: request.type, waiting_for_approval: false, log, error: message };
  }
  const agentId = Number(result.enrollment.agentId);
  const waiting = result.enrollment.agent.enroll_status === 'pending_approval';
  if (stayOnline) {
    const reporting = reportingOf(result.enrollment);
    const device: RememberedDevice = {
      agent_id: agentId,
      mqtt: result.mqtt,
      fingerprint: null,
      dialect: { name: result.enrollment.dialect.name, reports: result.enrollment.dialect.reports },
      device: reporting.device!,
      http: reporting.http!,
      ...(result.enrollment.system === undefined ? {} : { system: result.enrollment.system }),
    };
    // Enrolled either way; a broker that cannot be reached only means the device shows offline.
    try {
      const agent = await stay(device, {
        stateFile,
        approvalRetryMs,
        firstConnectTimeoutMs: 10_000,
        log: (line) => log.push(line),
      });
      if (agent.state.waitingForApproval)
        log.push('The device waits for approval by an administrator: it comes online once approved');
    } catch (error) {
      log.push(`MQTT … not connected: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return {
    ok: true,
    agent_id: agentId,
    serial: result.enrollment.serial,
    type: result.enrollment.type,
    waiting_for_approval: waiting,
    log,
    error: null,
  };
}

/**
 * Brings back the devices of the state file (after a server restart): each reconnects with what it
 * kept, waiting for the broker to be there and, when needed, for its approval. Resolves with how many.
 */
export async function resumeSimulatedDevices(
  stateFile: string,
  { approvalRetryMs }: Pick<SimulateOptions, 'approvalRetryMs'> = {},
): Promise<number> {
  const devices = await load(stateFile);
  let resumed = 0;
  for (const device of devices.values()) {
    if (running.has(device.agent_id)) continue;
    resumed += 1;
    // Not awaited: start() resolves only once connected (or waiting), and the server may still be coming up.
    stay(device, { stateFile, approvalRetryMs, firstConnectTimeoutMs: Infinity }).catch(() => {});
  }
  return resumed;
}

/** Told that a device was approved: it tries the broker now instead of at its next retry. */
export function simulatedDeviceApproved(agentId: number): void {
  running.get(agentId)?.retryNow();
}

/** Disconnects every simulated device (cleanly: they say they are offline). The state file keeps them. */
export async function stopSimulatedDevices(): Promise<void> {
  const agents = [...running.values()];
  running.clear();
  await Promise.allSettled(agents.map((agent) => agent.stop()));
}

/** Starts a device's MQTT side and keeps it in `running` (and in the state file) until it ends for good. */
async function stay(
  device: RememberedDevice,
  options: Pick<SimulateOptions, 'stateFile' | 'approvalRetryMs'> & Pick<MqttAgentOptions, 'firstConnectTimeoutMs' | 'log'>,
): Promise<MqttAgent> {
  const { stateFile } = options;
  const dialect = dialectOf(device.dialect.name, device.dialect.name === 'flyve' ? device.dialect.reports : undefined);
  let current: MqttAgent | null = null;
  // What it installed lives as long as this run (a resumed device starts with nothing installed).
  const { mqtt } = policyHandling(
    {
      backendUrl: device.http.backendUrl,
      apiToken: device.http.apiToken,
      agentId: device.http.agentId,
      topic: device.mqtt.topic,
      reports: taskReportsOf(dialect),
      dialect,
      ...(options.log ? { log: options.log } : {}),
      ...(device.device.androidVersion === undefined ? {} : { androidVersion: device.device.androidVersion }),
      ...(device.system === undefined ? {} : { system: device.system }),
    },
    () => current,
  );
  const agentOptions: MqttAgentOptions = {
    ...device.mqtt,
    ...mqtt,
    dialect,
    device: device.device,
    http: device.http,
    waitForApproval: { retryMs: options.approvalRetryMs ?? 30_000 },
    ...(device.fingerprint ? { fingerprint: device.fingerprint } : {}),
    ...(options.firstConnectTimeoutMs !== undefined ? { firstConnectTimeoutMs: options.firstConnectTimeoutMs } : {}),
    ...(options.log ? { log: options.log } : {}),
  };
  const agent = new MqttAgent(agentOptions);
  current = agent;
  running
    .get(device.agent_id)
    ?.stop()
    .catch(() => {});
  running.set(device.agent_id, agent);
  void agent.finished.then((reason) => {
    if (running.get(device.agent_id) === agent) running.delete(device.agent_id);
    // Unenrolled, deleted or rejected (its login refused): nothing to come back to.
    if (stateFile && reason !== 'stopped') void forget(stateFile, device.agent_id);
  });
  if (stateFile) await remember(stateFile, device);
  await agent.start();
  if (stateFile && agent.state.fingerprint && agent.state.fingerprint !== device.fingerprint)
    await remember(stateFile, { ...device, fingerprint: agent.state.fingerprint });
  return agent;
}

async function load(stateFile: string): Promise<Map<number, RememberedDevice>> {
  let devices = remembered.get(stateFile);
  if (devices) return devices;
  devices = new Map();
  try {
    const parsed = JSON.parse(await readFile(stateFile, 'utf8')) as { devices?: RememberedDevice[] };
    for (const device of parsed.devices ?? []) if (Number.isInteger(device.agent_id)) devices.set(device.agent_id, device);
  } catch {
    // none yet (or unreadable: started afresh)
  }
  remembered.set(stateFile, devices);
  return devices;
}

async function remember(stateFile: string, device: RememberedDevice): Promise<void> {
  (await load(stateFile)).set(device.agent_id, device);
  await save(stateFile);
}

async function forget(stateFile: string, agentId: number): Promise<void> {
  if ((await load(stateFile)).delete(agentId)) await save(stateFile);
}

/** Writes the whole file anew (a temporary file renamed over it), one write at a time. */
function save(stateFile: string): Promise<void> {
  const next = writing.then(async () => {
    const devices = [...(remembered.get(stateFile)?.values() ?? [])];
    const temporary = `${stateFile}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temporary, `${JSON.stringify({ devices }, null, 2)}\n`, { mode: 0o600 });
    await rename(temporary, stateFile);
  });
  writing = next.catch(() => {});
  return next;
}
