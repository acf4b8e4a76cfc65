// Helpers of the broker tests: enrolled agents, mqtt.js and mosquitto clients, waiting for events.
import { spawn } from 'node:child_process';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { RecordedEvent } from '../../src-main/backend/events/event-log.ts';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { agentCall, enrollByHand, startTestBackend, type TestBackend } from './backend.ts';

export interface EnrolledAgent {
  id: number;
  serial: string;
  password: string;
  topic: string;
  record: Record<string, any>;
  /** The enrolling session (guest profile): reading the record again draws a new password. */
  session: string;
}

let counter = 0;

/** Invites, enrolls by the spec's HTTP sequence and reads the record: an agent with MQTT credentials. */
export async function enrollAgent(
  t: TestBackend,
  options: { serial?: string; fleet?: string; extra?: Record<string, unknown> } = {},
): Promise<EnrolledAgent> {
  counter += 1;
  const email = `mqtt${counter}-${process.pid}@example.com`;
  const invited = await t.admin('POST', '/invitations', { email, fleet: options.fleet, send_email: false });
  if (invited.status !== 201) throw new Error(`invitation failed: ${JSON.stringify(invited.body)}`);
  const serial = options.serial ?? `MQ${counter}X${Math.random().toString(36).slice(2, 8).toUpperCase()}`;
  const { session, created } = await enrollByHand(t.apiUrl, { ...invited.body, email }, { serial, extra: options.extra });
  if (created.status !== 201) throw new Error(`enrollment failed: ${JSON.stringify(created.body)}`);
  return { ...(await readRecord(t, session, Number(created.body.id))), serial };
}

/** GET PluginMdmAgent/<id>: a fresh mqttpasswd each time. */
export async function readRecord(
  t: TestBackend,
  session: string,
  id: number,
): Promise<Omit<EnrolledAgent, 'serial'> & { serial: string }> {
  const read = await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${id}?session_token=${session}`);
  if (read.status !== 200) throw new Error(`record read failed: ${JSON.stringify(read.body)}`);
  return {
    id,
    serial: String(read.body.name),
    password: read.body.mqttpasswd,
    topic: read.body.topic,
    record: read.body,
    session,
  };
}

const openClients = new Set<MqttClient>();

/** mqtt.js, connected (or the CONNACK refusal as an error with `code`). Closed by closeClients(). */
export async function connectAgent(
  t: TestBackend,
  agent: { serial: string; password: string },
  options: IClientOptions & { tls?: boolean } = {},
): Promise<MqttClient> {
  const { tls, ...rest } = options;
  const client = mqtt.connect({
    protocol: tls ? 'mqtts' : 'mqtt',
    host: '127.0.0.1',
    port: tls ? t.backend.info.mqtt_tls_port : t.backend.info.mqtt_port,
    username: agent.serial,
    password: agent.password,
    clientId: agent.serial,
    reconnectPeriod: 0,
    connectTimeout: 10_000,
    ...rest,
  });
  openClients.add(client);
  client.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', (error) => reject(error));
    client.once('close', () => reject(new Error('closed before CONNACK')));
  });
  return client;
}

/** The CONNACK refusal code of a login that must fail. */
export async function refusalCode(
  t: TestBackend,
  agent: { serial: string; password: string },
  options: IClientOptions = {},
): Promise<number | string> {
  try {
    const client = await connectAgent(t, agent, options);
    client.end(true);
    return 0;
  } catch (error) {
    return (error as { code?: number | string }).code ?? (error as Error).message;
  }
}

export async function closeClients(): Promise<void> {
  await Promise.all([...openClients].map((client) => client.endAsync(true).catch(() => {})));
  openClients.clear();
}

/** Messages a client receives, and a way to wait for the next matching one. */
export function inbox(client: MqttClient) {
  const messages: { topic: string; text: string; retain: boolean }[] = [];
  const waiters: { match: (m: (typeof messages)[number]) => boolean; resolve: (m: (typeof messages)[number]) => void }[] = [];
  client.on('message', (topic, payload, packet) => {
    const message = { topic, text: payload.toString('utf8'), retain: packet.retain };
    messages.push(message);
    for (const waiter of [...waiters]) {
      if (waiter.match(message)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  });
  return {
    messages,
    next(match: (m: (typeof messages)[number]) => boolean = () => true, timeoutMs = 10_000) {
      const already = messages.find(match);
      if (already) return Promise.resolve(already);
      return new Promise<(typeof messages)[number]>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`)),
          timeoutMs,
        );
        waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)) });
      });
    },
  };
}

/**
 * Starts listening now for the first event matching `match`; await the result after acting.
 * Generous timeout: the tests wait for what happens, they never time it.
 */
export function nextEvent(t: TestBackend, match: (event: RecordedEvent) => boolean, timeoutMs = 10_000): Promise<RecordedEvent> {
  return new Promise((resolve, reject) => {
    const stop = t.backend.services.events.subscribe((event) => {
      if (!match(event)) return;
      clearTimeout(timer);
      stop();
      resolve(event);
    });
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no matching event within ${timeoutMs} ms`));
    }, timeoutMs);
  });
}

export const ofAgent = (id: number, type: string) => (event: RecordedEvent) => event.agent_id === id && event.type === type;

/** Polls until `check` returns a value other than undefined/false. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export async function agentRow(t: TestBackend, id: number) {
  return (await t.backend.services.agentRepository.byId(id))!;
}

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a program (mosquitto_sub, mosquitto_pub, the CLI) to its end, killed after `timeoutMs`.
 * `onStdout` sees the output as it comes (e.g. to act once mosquitto_sub reports its SUBACK).
 */
export function run(
  command: string,
  args: string[],
  options: { timeoutMs?: number; onStdout?: (soFar: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      options.onStdout?.(stdout);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** mosquitto_sub / mosquitto_pub arguments for an agent's login on the test broker. */
export function mosquittoLogin(t: TestBackend, agent: { serial: string; password: string }, tls?: { cafile: string }): string[] {
  const base = ['-h', '127.0.0.1', '-u', agent.serial, '-P', agent.password];
  return tls
    ? [...base, '-p', String(t.backend.info.mqtt_tls_port), '--cafile', tls.cafile]
    : [...base, '-p', String(t.backend.info.mqtt_port)];
}

/**
 * The hooks every broker test file wants: one backend for the file (handed to `use` once started),
 * the MQTT clients of a test closed after it, the backend stopped at the end.
 */
export function useBrokerBackend(use: (backend: TestBackend) => void | Promise<void>): void {
  let backend: TestBackend | undefined;
  beforeAll(async () => {
    backend = await startTestBackend();
    await use(backend);
  });
  afterEach(async () => {
    await closeClients();
  });
  afterAll(async () => {
    await backend?.stop();
  });
}

/** Not the retained Command/Subscribe every agent finds at its first connection (its fleet topic). */
export const notFleetAnnouncement = (message: { topic: string; retain: boolean }): boolean =>
  !(message.retain && message.topic.endsWith('/Command/Subscribe'));
