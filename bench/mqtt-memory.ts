// Memory per MQTT connection held by the embedded broker, and where it goes: `serve` holds N
// simulated agents (the broker scenario's load workers), its RSS and CPU are read before and
// after, and a heap snapshot taken at each point (--heapsnapshot-signal) is summarised as the
// growth per connection of each kind of object (constructor name), largest first.
//
// Several variants in one run, one after the other on the same enrolled agents (the machine's load
// weighs on all alike): a baseline tree (`--baseline TREE`, a checkout of an earlier commit with
// node_modules linked), this tree, this tree with more Node flags (`--node-args "--flag …"`, may be
// repeated), and mosquitto (`--mosquitto`) as the reference.
//
//   node bench/mqtt-memory.ts [--agents 3000] [--baseline TREE] [--node-args "…"]… [--mosquitto]
//        [--no-snapshots] [--top 25] [--data DIR (enrolled agents kept there for the next run)]
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { inviteMany } from './lib/admin.ts';
import {
  childFileLimit,
  cpuSeconds,
  freePort,
  rssBytes,
  sleep,
  startChild,
  startServe,
  waitForPort,
  withFileLimit,
  workDir,
} from './lib/process.ts';
import { enrollLoad, type EnrolledAgent } from './load/enroll.ts';
import { connectSteps, startWorker } from './scenarios/broker.ts';

const { values } = parseArgs({
  options: {
    agents: { type: 'string' },
    baseline: { type: 'string' },
    top: { type: 'string' },
    'node-args': { type: 'string', multiple: true },
    mosquitto: { type: 'boolean' },
    'no-snapshots': { type: 'boolean' },
    data: { type: 'string' },
  },
});
const count = Number(values.agents ?? 3000);
const top = Number(values.top ?? 25);
const snapshotsWanted = !values['no-snapshots'];
const dir = workDir('mqtt-memory');

interface Variant {
  name: string;
  entry?: string;
  nodeArgs: string[];
  /** Environment of serve (`NAME=value` words of --node-args, e.g. MALLOC_ARENA_MAX=2). */
  env?: Record<string, string>;
  mosquitto?: boolean;
}
const variants: Variant[] = [
  ...(values.baseline ? [{ name: 'baseline', entry: join(values.baseline, 'src-main', 'cli', 'main.ts'), nodeArgs: [] }] : []),
  { name: 'this tree', nodeArgs: [] },
  ...(values['node-args'] ?? []).map((args) => {
    const words = args.split(/\s+/).filter(Boolean);
    const env = Object.fromEntries(words.filter((w) => /^[A-Z_]+=/.test(w)).map((w) => w.split('=', 2) as [string, string]));
    return { name: `this tree ${args}`, nodeArgs: words.filter((w) => !/^[A-Z_]+=/.test(w)), env };
  }),
  ...(values.mosquitto ? [{ name: 'mosquitto', nodeArgs: [], mosquitto: true }] : []),
];

console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ${count} agents; open-files limit ${childFileLimit()}`,
);
const { dataDir, agents } = await enrolled();

interface Measured {
  name: string;
  held: number;
  rssIdleMiB: number;
  rssHeldMiB: number;
  kibPerConnection: number;
  /** (RSS at N − RSS at N/2) / (N/2): what one more connection costs, without the fixed part (code, young generation). */
  marginalKib: number;
  cpuUsPerConnection: number;
  connectionsPerS: number;
  heap?: { before: Summary; after: Summary };
}
const measured: Measured[] = [];
try {
  for (const variant of variants) measured.push(await measure(variant));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  '\nvariant: held, RSS idle → held, KiB RSS per connection (from N/2 to N), server CPU µs per connection, connections/s',
);
for (const m of measured)
  console.log(
    `${m.name}: ${m.held}, ${m.rssIdleMiB.toFixed(1)} → ${m.rssHeldMiB.toFixed(1)} MiB, ${m.kibPerConnection.toFixed(2)} (${m.marginalKib.toFixed(2)}) KiB, ${m.cpuUsPerConnection.toFixed(0)} µs, ${m.connectionsPerS.toFixed(0)}/s`,
  );
for (const m of measured) {
  if (!m.heap) continue;
  const { before, after } = m.heap;
  const heapGrowth = after.total - before.total;
  console.log(
    `\n${m.name}: V8 heap (live objects), agents gone → held: ${(before.total / 2 ** 20).toFixed(1)} → ${(after.total / 2 ** 20).toFixed(1)} MiB: ${(heapGrowth / 1024 / m.held).toFixed(2)} KiB per connection; outside the live heap: ${(m.kibPerConnection - heapGrowth / 1024 / m.held).toFixed(2)} KiB`,
  );
  const rows = [...after.byName]
    .map(([name, { size, count: n }]) => {
      const was = before.byName.get(name) ?? { size: 0, count: 0 };
      return { name, bytes: (size - was.size) / m.held, objects: (n - was.count) / m.held };
    })
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, top);
  console.log('per connection: bytes  objects  kind');
  for (const row of rows) console.log(`${row.bytes.toFixed(0).padStart(8)} ${row.objects.toFixed(2).padStart(8)}  ${row.name}`);
}
console.log(
  `\nload average at the end ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);

/** Enrolled agents in a data dir: kept in `--data DIR` when given, so that the next run skips this. */
async function enrolled(): Promise<{ dataDir: string; agents: EnrolledAgent[] }> {
  const kept = values.data;
  const agentsFile = kept ? join(kept, 'agents.json') : '';
  if (kept && existsSync(agentsFile)) {
    const agents = JSON.parse(readFileSync(agentsFile, 'utf8')) as EnrolledAgent[];
    if (agents.length >= count) return { dataDir: join(kept, 'data'), agents: agents.slice(0, count) };
    rmSync(kept, { recursive: true, force: true });
  }
  const dataDir = kept ? join(kept, 'data') : join(dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  const enrolling = await startServe({ dataDir, logFile: join(dir, 'enroll.log') });
  const invites = await inviteMany(enrolling.info, count, 'memory');
  const load = await enrollLoad(invites, 64, { serialPrefix: 'MEM' });
  if (load.errors.length > 0) throw new Error(`enrollment failed: ${load.errors.find(Boolean)}`);
  await enrolling.stop();
  if (kept) writeFileSync(agentsFile, JSON.stringify(load.enrolled));
  return { dataDir, agents: load.enrolled };
}

async function measure(variant: Variant): Promise<Measured> {
  const snapshots = join(dir, `snapshots-${measured.length}`);
  mkdirSync(snapshots);
  let pid: number;
  let port: number;
  let stop: () => Promise<void>;
  if (variant.mosquitto) {
    port = await freePort();
    const conf = join(dir, 'mosquitto.conf');
    const lines = [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      'persistence false',
      'max_connections -1',
      'log_dest none',
    ];
    writeFileSync(conf, `${lines.join('\n')}\n`);
    const broker = startChild(withFileLimit(['mosquitto', '-c', conf], childFileLimit()), {
      logFile: join(dir, 'mosquitto.log'),
    });
    await waitForPort(port);
    ({ pid } = broker);
    stop = () => broker.stop();
  } else {
    // A fresh process on that data dir, as the broker scenario does: enrolling leaves garbage behind.
    const serveDir = join(dir, `serve-${measured.length}`);
    cpSync(dataDir, serveDir, { recursive: true });
    const serve = await startServe({
      dataDir: serveDir,
      logFile: join(dir, `serve-${measured.length}.log`),
      nodeArgs: [...variant.nodeArgs, `--heapsnapshot-signal=SIGUSR2`, `--diagnostic-dir=${snapshots}`],
      ...(variant.entry ? { entry: variant.entry } : {}),
      ...(variant.env ? { env: { ...process.env, ...variant.env } } : {}),
    });
    pid = serve.child.pid;
    port = serve.info.mqtt_port;
    stop = () => serve.stop();
  }
  const workers = [startWorker(dir, 0), startWorker(dir, 1)];
  try {
    await sleep(2000);
    // RSS first, without snapshots (a snapshot grows the process by tens of MiB it keeps).
    const rssIdle = rssBytes(pid);
    const cpuBefore = cpuSeconds(pid);
    const half = Math.floor(count / 2);
    const { results, errors } = await connectSteps(variant.name, pid, port, agents, [half, count], workers, 64);
    const step = results[1]!;
    const connected = results[0]!.connected_in_step + step.connected_in_step;
    if (errors.length > 0) console.log(`  ${variant.name}: ${results[0]!.failed + step.failed} failed, e.g. ${errors[0]}`);
    await sleep(2000);
    const cpu = cpuSeconds(pid) - cpuBefore;
    const rssHeld = rssBytes(pid);
    const held = step.held;
    const result: Measured = {
      name: variant.name,
      held,
      rssIdleMiB: rssIdle / 2 ** 20,
      rssHeldMiB: rssHeld / 2 ** 20,
      kibPerConnection: (rssHeld - rssIdle) / 1024 / held,
      marginalKib: step.marginal_kib_per_connection,
      // The whole step's CPU (presence writes after the CONNACKs included), per connection.
      cpuUsPerConnection: (cpu * 1e6) / connected,
      connectionsPerS: connected / (results[0]!.seconds + step.seconds),
    };
    console.log(
      `  ${variant.name}: ${held} held; RSS ${result.rssIdleMiB.toFixed(1)} → ${result.rssHeldMiB.toFixed(1)} MiB: ${result.kibPerConnection.toFixed(2)} KiB per connection (${result.marginalKib.toFixed(2)} from N/2 to N); ${result.cpuUsPerConnection.toFixed(0)} µs CPU per connection`,
    );
    if (snapshotsWanted && !variant.mosquitto) {
      // Then the heap with every agent connected, and again once they have all gone: the difference is
      // what the connections hold (what stays per agent after it leaves is not counted).
      const heldSnapshot = summarise(await snapshot(pid, snapshots));
      for (const worker of workers) await worker.child.stop();
      await sleep(5000);
      const idleSnapshot = summarise(await snapshot(pid, snapshots));
      result.heap = { before: idleSnapshot, after: heldSnapshot };
    }
    return result;
  } finally {
    for (const worker of workers) await worker.child.stop();
    await stop();
  }
}

/** Asks the process for a heap snapshot (it collects garbage first) and waits until it is written. */
async function snapshot(pid: number, snapshots: string): Promise<string> {
  const known = new Set(readdirSync(snapshots));
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 1200; i++) {
    await sleep(500);
    const fresh = readdirSync(snapshots).filter((name) => !known.has(name) && name.endsWith('.heapsnapshot'));
    if (fresh.length > 0) {
      const path = join(snapshots, fresh[0]!);
      // Written when its JSON parses (the file grows while being written).
      try {
        const text = readFileSync(path, 'utf8');
        JSON.parse(text);
        rmSync(path);
        return text;
      } catch {
        // not finished
      }
    }
  }
  throw new Error('no heap snapshot');
}

interface Summary {
  total: number;
  byName: Map<string, { size: number; count: number }>;
}

/**
 * Self size and count of the snapshot's nodes, by type and constructor name. Nodes without a name
 * of their own (arrays, closure contexts, hidden and system objects) are named after what holds them
 * (their first strong retainer and its edge), e.g. `(array) ← Set.table`, so that the backing
 * store of one structure can be told from another's.
 */
function summarise(text: string): Summary {
  const data = JSON.parse(text) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
    nodes: number[];
    edges: number[];
    strings: string[];
  };
  const { meta } = data.snapshot;
  const fields = meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const edgeCountAt = fields.indexOf('edge_count');
  const edgeWidth = meta.edge_fields.length;
  const edgeTypeAt = meta.edge_fields.indexOf('type');
  const edgeNameAt = meta.edge_fields.indexOf('name_or_index');
  const edgeToAt = meta.edge_fields.indexOf('to_node');
  const edgeTypes = meta.edge_types[0];
  const types = data.snapshot.meta.node_types[0];
  const nodeCount = data.nodes.length / width;
  // First strong retainer of each node: its index (node ordinal + 1, 0 = none) and the edge's name.
  const owner = new Int32Array(nodeCount);
  const ownerEdge: string[] = new Array<string>(nodeCount);
  let edge = 0;
  for (let n = 0; n < nodeCount; n++) {
    const edges = data.nodes[n * width + edgeCountAt]!;
    for (let e = 0; e < edges; e++, edge += edgeWidth) {
      const kind = edgeTypes[data.edges[edge + edgeTypeAt]!]!;
      if (kind === 'weak' || kind === 'shortcut') continue;
      const to = data.edges[edge + edgeToAt]! / width;
      if (owner[to] !== 0) continue;
      owner[to] = n + 1;
      const nameOrIndex = data.edges[edge + edgeNameAt]!;
      ownerEdge[to] = kind === 'element' || kind === 'hidden' ? `[${kind}]` : data.strings[nameOrIndex]!;
    }
  }
  const nameOf = (n: number): string => {
    const type = types[data.nodes[n * width + typeAt]!]!;
    const name = data.strings[data.nodes[n * width + nameAt]!]!;
    if (type === 'object' || type === 'native') return name;
    if (type === 'closure') return `${name}()`;
    return `(${type}${type === 'hidden' || type === 'object shape' ? ` ${name.slice(0, 30)}` : ''})`;
  };
  const byName = new Map<string, { size: number; count: number }>();
  let total = 0;
  for (let n = 0; n < nodeCount; n++) {
    const type = types[data.nodes[n * width + typeAt]!]!;
    const size = data.nodes[n * width + sizeAt]!;
    total += size;
    let key = nameOf(n);
    if (type !== 'object' && type !== 'closure' && type !== 'native') {
      const by = owner[n]! - 1;
      if (by >= 0) key += ` ← ${nameOf(by)}.${ownerEdge[n]}`;
    }
    const entry = byName.get(key) ?? { size: 0, count: 0 };
    entry.size += size;
    entry.count++;
    byName.set(key, entry);
  }
  return { total, byName };
}
