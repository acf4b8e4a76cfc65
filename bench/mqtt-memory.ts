// Memory per MQTT connection held by the embedded broker, and where it goes: `serve` holds N
// simulated agents (the broker scenario's load workers), its RSS is read before and after, and a
// heap snapshot taken at each point (--heapsnapshot-signal) is summarised as the growth per
// connection of each kind of object (constructor name), largest first.
//
//   node bench/mqtt-memory.ts [--agents 3000] [--baseline TREE] [--top 25]
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { inviteMany } from './lib/admin.ts';
import { rssBytes, sleep, startServe, workDir } from './lib/process.ts';
import { enrollLoad } from './load/enroll.ts';
import { connectSteps, startWorker } from './scenarios/broker.ts';

const { values } = parseArgs({
  options: { agents: { type: 'string' }, baseline: { type: 'string' }, top: { type: 'string' } },
});
const count = Number(values.agents ?? 3000);
const top = Number(values.top ?? 25);
const entry = values.baseline ? join(values.baseline, 'src-main', 'cli', 'main.ts') : undefined;
const dir = workDir('mqtt-memory');
const dataDir = join(dir, 'data');
mkdirSync(dataDir);
const snapshots = join(dir, 'snapshots');
mkdirSync(snapshots);

const enrolling = await startServe({ dataDir, logFile: join(dir, 'enroll.log'), ...(entry ? { entry } : {}) });
const invites = await inviteMany(enrolling.info, count, 'memory');
const load = await enrollLoad(invites, 64, { serialPrefix: 'MEM' });
if (load.errors.length > 0) throw new Error(`enrollment failed: ${load.errors.find(Boolean)}`);
await enrolling.stop();

// A fresh process on that data dir, as the broker scenario does: enrolling leaves garbage behind.
const serve = await startServe({
  dataDir,
  logFile: join(dir, 'serve.log'),
  nodeArgs: [`--heapsnapshot-signal=SIGUSR2`, `--diagnostic-dir=${snapshots}`],
  ...(entry ? { entry } : {}),
});
const workers = [startWorker(dir, 0), startWorker(dir, 1)];
try {
  await sleep(2000);
  // RSS first, without snapshots (a snapshot grows the process by tens of MiB it keeps).
  const rssIdle = rssBytes(serve.child.pid);
  const [step] = (await connectSteps('serve', serve.child.pid, serve.info.mqtt_port, load.enrolled, [count], workers, 64))
    .results;
  await sleep(2000);
  const rssHeld = rssBytes(serve.child.pid);
  const held = step!.held;
  console.log(
    `${entry ? 'baseline' : 'this tree'}: ${held} agents held; RSS ${(rssIdle / 2 ** 20).toFixed(1)} → ${(rssHeld / 2 ** 20).toFixed(1)} MiB: ${((rssHeld - rssIdle) / 1024 / held).toFixed(2)} KiB per connection`,
  );
  // Then the heap with every agent connected, and again once they have all gone: the difference is
  // what the connections hold (what stays per agent after it leaves is not counted).
  const heldSnapshot = await snapshot(serve.child.pid);
  for (const worker of workers) await worker.child.stop();
  await sleep(5000);
  const idleSnapshot = await snapshot(serve.child.pid);
  const before = summarise(idleSnapshot);
  const after = summarise(heldSnapshot);
  const heapGrowth = after.total - before.total;
  console.log(
    `V8 heap (live objects), agents gone → held: ${(before.total / 2 ** 20).toFixed(1)} → ${(after.total / 2 ** 20).toFixed(1)} MiB: ${(heapGrowth / 1024 / held).toFixed(2)} KiB per connection; the rest of the RSS growth (${((rssHeld - rssIdle - heapGrowth) / 1024 / held).toFixed(2)} KiB) is outside the heap (sockets, buffers' memory, allocator, the heap's own slack)`,
  );
  const rows = [...after.byName]
    .map(([name, { size, count: n }]) => {
      const was = before.byName.get(name) ?? { size: 0, count: 0 };
      return { name, bytes: (size - was.size) / held, objects: (n - was.count) / held };
    })
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, top);
  console.log('per connection: bytes  objects  kind');
  for (const row of rows) console.log(`${row.bytes.toFixed(0).padStart(8)} ${row.objects.toFixed(2).padStart(8)}  ${row.name}`);
} finally {
  for (const worker of workers) await worker.child.stop();
  await serve.stop();
  rmSync(dir, { recursive: true, force: true });
}

/** Asks the process for a heap snapshot (it collects garbage first) and waits until it is written. */
async function snapshot(pid: number): Promise<string> {
  const known = new Set(readdirSync(snapshots));
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 600; i++) {
    await sleep(500);
    const fresh = readdirSync(snapshots).filter((name) => !known.has(name) && name.endsWith('.heapsnapshot'));
    if (fresh.length > 0) {
      const path = join(snapshots, fresh[0]!);
      // Written when its JSON parses (the file grows while being written).
      try {
        const text = readFileSync(path, 'utf8');
        JSON.parse(text);
        return text;
      } catch {
        // not finished
      }
    }
  }
  throw new Error('no heap snapshot');
}

/** Self size and count of the snapshot's nodes, by type and constructor name. */
function summarise(text: string): { total: number; byName: Map<string, { size: number; count: number }> } {
  const data = JSON.parse(text) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = data.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const types = data.snapshot.meta.node_types[0];
  const byName = new Map<string, { size: number; count: number }>();
  let total = 0;
  for (let i = 0; i < data.nodes.length; i += width) {
    const type = types[data.nodes[i + typeAt]!]!;
    const name =
      type === 'object' || type === 'closure' || type === 'native' ? data.strings[data.nodes[i + nameAt]!]! : `(${type})`;
    const size = data.nodes[i + sizeAt]!;
    total += size;
    const key = type === 'closure' ? `${name}()` : name;
    const entry = byName.get(key) ?? { size: 0, count: 0 };
    entry.size += size;
    entry.count++;
    byName.set(key, entry);
  }
  return { total, byName };
}
