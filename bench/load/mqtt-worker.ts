// A load-generator process holding thousands of simulated agents on one broker: each one is the
// device simulator's MQTT agent (src-main/device/mqtt-agent.ts: will, T/# subscription, retained
// "online", ping answers), driven over IPC by the bench.
import net from 'node:net';
import { MqttAgent } from '../../src-main/device/mqtt-agent.ts';
import type { MqttCredentials } from '../../src-main/device/index.ts';

// Source addresses: each worker connects from its own loopback addresses (127.0.<worker+1>.1-8), so
// that 20,000 connections to one port do not crowd one address's ephemeral ports (connect() slows
// down as they fill up). mqtt.js has no option for it: its TCP transport calls net.createConnection.
const worker = Number(process.argv[2] ?? 0);
let nextSource = 0;
const createConnection = net.createConnection;
(net as { createConnection: typeof net.createConnection }).createConnection = ((
  options: net.NetConnectOpts,
  listener?: () => void,
) => {
  const localAddress = `127.0.${worker + 1}.${(nextSource++ % 8) + 1}`;
  return createConnection(
    typeof options === 'object' && !('path' in options && options.path) ? { ...options, localAddress } : options,
    listener,
  );
}) as typeof net.createConnection;

export type WorkerRequest =
  | { type: 'connect'; agents: MqttCredentials[]; port: number; concurrency: number }
  | { type: 'await-command'; name: string; timeoutMs: number }
  /** Forgets the receipts of a command (a second fan-out of the same command is then measured afresh). */
  | { type: 'forget'; name: string }
  | { type: 'exit' };

export type WorkerReply =
  | {
      type: 'connected';
      ok: number;
      failed: number;
      errors: string[];
      startedAt: number;
      doneAt: number;
      /** When the last agent that got in got in (doneAt also waits for the refused ones' time-outs). */
      lastOkAt: number;
      held: number;
    }
  | { type: 'commands'; name: string; received: number; expected: number; lastAt: number }
  | { type: 'forgotten'; name: string };

const now = () => performance.timeOrigin + performance.now();
const agents: MqttAgent[] = [];
/** The agents (by index) that got in: a command is awaited by these only (a refused agent never gets it). */
const admitted = new Set<number>();
/** Per command name, the agents (by index) that received it and when the last one did. */
const received = new Map<string, { agents: Set<number>; lastAt: number }>();
let waiter: { name: string; resolve: () => void } | null = null;

const send = (message: WorkerReply) => process.send!(message);

function onCommand(index: number, name: string): void {
  let entry = received.get(name);
  if (!entry) received.set(name, (entry = { agents: new Set(), lastAt: 0 }));
  entry.agents.add(index);
  entry.lastAt = now();
  if (waiter?.name === name && entry.agents.size >= admitted.size) waiter.resolve();
}

async function connect(request: Extract<WorkerRequest, { type: 'connect' }>): Promise<void> {
  const startedAt = now();
  let lastOkAt = startedAt;
  let next = 0;
  let ok = 0;
  const errors: string[] = [];
  const one = async () => {
    while (next < request.agents.length) {
      const credentials = request.agents[next++]!;
      const index = agents.length;
      const agent = new MqttAgent({
        ...credentials,
        host: '127.0.0.1',
        port: request.port,
        tls: false,
        firstConnectTimeoutMs: 60_000,
        // A lost connection is a failure of the run, not something to hide by reconnecting fast.
        backoff: { initialMs: 60_000, maxMs: 60_000 },
        onEvent: (event) => {
          if (event.type === 'command') onCommand(index, event.name);
        },
      });
      agents.push(agent);
      try {
        await agent.start();
        ok++;
        admitted.add(index);
        lastOkAt = now();
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: request.concurrency }, one));
  const held = agents.filter((agent) => agent.state.connected).length;
  send({ type: 'connected', ok, failed: errors.length, errors: errors.slice(0, 5), startedAt, doneAt: now(), lastOkAt, held });
}

async function awaitCommand(name: string, timeoutMs: number): Promise<void> {
  const entry = () => received.get(name);
  if ((entry()?.agents.size ?? 0) < admitted.size) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      waiter = {
        name,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
    });
    waiter = null;
  }
  send({ type: 'commands', name, received: entry()?.agents.size ?? 0, expected: admitted.size, lastAt: entry()?.lastAt ?? 0 });
}

process.on('message', (message: WorkerRequest) => {
  if (message.type === 'connect') void connect(message);
  else if (message.type === 'await-command') void awaitCommand(message.name, message.timeoutMs);
  else if (message.type === 'forget') {
    received.delete(message.name);
    send({ type: 'forgotten', name: message.name });
  }
  // Leaving at once: sockets close with the process, as when a fleet of phones drops off.
  else if (message.type === 'exit') process.exit(0);
});
process.on('disconnect', () => process.exit(0));
