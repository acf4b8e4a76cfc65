// A load-generator process holding simulated devices that obey policies, deployments and value
// policies alike (the device simulator's enrollment, MQTT agent and policy runner), driven over
// IPC by the bench. It also downloads the same bytes the same way (ranged, SHA-256 checked) from a
// reference server.
import { createHash } from 'node:crypto';
import net from 'node:net';
import { connectEnrolledDevice, enrollDevice, type SimulatedDevice } from '../../src-main/device/index.ts';

// Source addresses: each worker's devices connect from loopback addresses of their own
// (127.0.<worker+1>.1-64), as phones come from many addresses. From one address, 1,000 devices'
// HTTP and MQTT connections would crowd its ephemeral ports and make it the one address the
// agent listener's per-address cap and fair-share eviction look at. fetch (undici) calls
// net.connect, mqtt.js net.createConnection; neither has an option for it.
const worker = Number(process.argv[2] ?? 0);
let nextSource = 0;
type Connect = typeof net.connect; // net.createConnection is the same function
const fromOwnAddress = (original: Connect): Connect => {
  const connect = original as (...args: unknown[]) => net.Socket; // its overloads, called with what was given
  return ((options: unknown, ...rest: unknown[]) => {
    if (typeof options !== 'object' || options === null || ('path' in options && options.path)) return connect(options, ...rest);
    return connect({ ...options, localAddress: `127.0.${worker + 1}.${(nextSource++ % 64) + 1}` }, ...rest);
  }) as Connect;
};
(net as { connect: typeof net.connect }).connect = fromOwnAddress(net.connect);
(net as { createConnection: typeof net.createConnection }).createConnection = fromOwnAddress(net.createConnection);

export type DeployWorkerRequest =
  | {
      type: 'start';
      invites: { deeplink: string; email: string }[];
      concurrency: number;
      chunkSize: number;
      retries: number;
      /** What the devices say at enrollment (their inventory's Android version, a system agent). */
      androidVersion?: string;
      system?: boolean;
    }
  | { type: 'await-done'; taskId: number; timeoutMs: number }
  /** Every device has finished every one of these tasks (done, failed or incompatible). */
  | { type: 'await-all'; taskIds: number[]; timeoutMs: number }
  | { type: 'reference'; url: string; size: number; sha256: string; chunkSize: number; timeoutMs: number; retries: number }
  | { type: 'exit' };

export type DeployWorkerReply =
  | { type: 'started'; ok: number; errors: string[] }
  | { type: 'done'; done: number; failed: number; reasons: string[]; lastAt: number; resumed: number }
  | {
      type: 'all-done';
      done: number;
      failed: number;
      incompatible: number;
      reasons: string[];
      lastAt: number;
      /** Policy messages the devices received and acted on (one per device and task). */
      received: number;
      /** Status reports the devices published (received, in progress, done, …). */
      reports: number;
    }
  | { type: 'reference-done'; ok: number; errors: string[]; lastAt: number; resumed: number };

const now = () => performance.timeOrigin + performance.now();
const devices: SimulatedDevice[] = [];
const finished = new Map<number, { done: number; failed: number; reasons: string[]; lastAt: number }>();
let waiter: { taskId: number; resolve: () => void } | null = null;
/** Tasks finished on a device, by task (await-all), and what the devices received and reported. */
const closed = new Map<number, { done: number; failed: number; incompatible: number; lastAt: number }>();
let allWaiter: { taskIds: number[]; resolve: () => void } | null = null;
let receivedCount = 0;
let reportCount = 0;
const allFinished = (taskIds: number[]) =>
  taskIds.every((id) => {
    const entry = closed.get(id);
    return entry !== undefined && entry.done + entry.failed + entry.incompatible >= devices.length;
  });
/** Requests tried again after a network error or a 503 (each resumes at the byte reached). */
let resumed = 0;
const send = (message: DeployWorkerReply) => process.send!(message);

function onTask(taskId: number, status: string, reason: string | undefined): void {
  reportCount++;
  if (status === 'received') receivedCount++;
  if (status === 'done' || status === 'failed' || status === 'incompatible') {
    let entry = closed.get(taskId);
    if (!entry) closed.set(taskId, (entry = { done: 0, failed: 0, incompatible: 0, lastAt: 0 }));
    entry[status]++;
    entry.lastAt = now();
    if (allWaiter && allFinished(allWaiter.taskIds)) allWaiter.resolve();
  }
  if (status !== 'done' && status !== 'failed') return;
  let entry = finished.get(taskId);
  if (!entry) finished.set(taskId, (entry = { done: 0, failed: 0, reasons: [], lastAt: 0 }));
  if (status === 'done') entry.done++;
  else {
    entry.failed++;
    if (entry.reasons.length < 5) entry.reasons.push(reason ?? '');
  }
  entry.lastAt = now();
  if (waiter?.taskId === taskId && entry.done + entry.failed >= devices.length) waiter.resolve();
}

async function start(request: Extract<DeployWorkerRequest, { type: 'start' }>): Promise<void> {
  let next = 0;
  const errors: string[] = [];
  const one = async () => {
    while (next < request.invites.length) {
      const invite = request.invites[next++]!;
      try {
        const enrollment = await enrollDevice({
          deeplink: invite.deeplink,
          email: invite.email,
          timeoutMs: 120_000,
          ...(request.androidVersion === undefined ? {} : { androidVersion: request.androidVersion }),
          ...(request.system === undefined ? {} : { system: request.system }),
        });
        devices.push(
          await connectEnrolledDevice(enrollment, {
            reports: 'mqtt',
            chunkSize: request.chunkSize,
            downloadRetries: request.retries,
            log: (line) => {
              if (line.includes('resuming at byte')) resumed++;
            },
            timeoutMs: 120_000,
            mqtt: { firstConnectTimeoutMs: 60_000, backoff: { initialMs: 60_000, maxMs: 60_000 } },
            onPolicyEvent: (event) => onTask(event.taskId, event.status, event.reason),
          }),
        );
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: request.concurrency }, one));
  send({ type: 'started', ok: devices.length, errors: errors.slice(0, 5) });
}

async function awaitDone(taskId: number, timeoutMs: number): Promise<void> {
  const entry = () => finished.get(taskId);
  const count = () => (entry()?.done ?? 0) + (entry()?.failed ?? 0);
  if (count() < devices.length) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      waiter = { taskId, resolve: () => (clearTimeout(timer), resolve()) };
    });
    waiter = null;
  }
  const e = entry();
  send({ type: 'done', done: e?.done ?? 0, failed: e?.failed ?? 0, reasons: e?.reasons ?? [], lastAt: e?.lastAt ?? 0, resumed });
}

async function awaitAll(taskIds: number[], timeoutMs: number): Promise<void> {
  if (!allFinished(taskIds)) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      allWaiter = { taskIds, resolve: () => (clearTimeout(timer), resolve()) };
    });
    allWaiter = null;
  }
  const entries = taskIds.map((id) => closed.get(id) ?? { done: 0, failed: 0, incompatible: 0, lastAt: 0 });
  send({
    type: 'all-done',
    done: entries.reduce((sum, e) => sum + e.done, 0),
    failed: entries.reduce((sum, e) => sum + e.failed, 0),
    incompatible: entries.reduce((sum, e) => sum + e.incompatible, 0),
    reasons: [...new Set(taskIds.flatMap((id) => finished.get(id)?.reasons ?? []))].slice(0, 5),
    lastAt: Math.max(0, ...entries.map((e) => e.lastAt)),
    received: receivedCount,
    reports: reportCount,
  });
}

/**
 * Each device downloads the reference URL as the policy runner does: ranges of chunkSize, hashed,
 * and after a network error resumed at the byte reached (as many times as the devices may).
 */
async function reference(request: Extract<DeployWorkerRequest, { type: 'reference' }>): Promise<void> {
  const errors: string[] = [];
  let ok = 0;
  let lastAt = 0;
  let referenceResumed = 0;
  const one = async () => {
    const hash = createHash('sha256');
    let offset = 0;
    let attempt = 0;
    while (offset < request.size) {
      const last = Math.min(offset + request.chunkSize, request.size) - 1;
      let received = 0;
      try {
        const response = await fetch(request.url, {
          headers: { range: `bytes=${offset}-${last}` },
          signal: AbortSignal.timeout(request.timeoutMs),
        });
        if (response.status !== 206) throw new Error(`HTTP ${response.status}`);
        for await (const piece of response.body ?? []) {
          received += (piece as Uint8Array).length;
          hash.update(piece as Uint8Array);
        }
      } catch (error) {
        if (attempt >= request.retries) throw error;
        offset += received;
        referenceResumed++;
        await new Promise((resolve) => setTimeout(resolve, Math.min(1000 * 2 ** attempt++, 10_000)));
        continue;
      }
      if (received !== last - offset + 1) throw new Error(`${received} bytes for ${offset}-${last}`);
      offset += received;
    }
    if (hash.digest('hex') !== request.sha256) throw new Error('SHA-256 mismatch');
    ok++;
    lastAt = now();
  };
  const results = await Promise.allSettled(devices.map(() => one()));
  for (const result of results) if (result.status === 'rejected' && errors.length < 5) errors.push(String(result.reason));
  send({ type: 'reference-done', ok, errors, lastAt, resumed: referenceResumed });
}

process.on('message', (message: DeployWorkerRequest) => {
  if (message.type === 'start') void start(message);
  else if (message.type === 'await-done') void awaitDone(message.taskId, message.timeoutMs);
  else if (message.type === 'await-all') void awaitAll(message.taskIds, message.timeoutMs);
  else if (message.type === 'reference') void reference(message);
  else if (message.type === 'exit') process.exit(0);
});
process.on('disconnect', () => process.exit(0));
