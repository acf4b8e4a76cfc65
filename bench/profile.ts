// A CPU profile of `serve` answering only downloads (no upload in the measured part) or only
// enrollments (the simulator's five requests, 64 at a time): V8's (--cpu-prof, into OUTDIR), or
// with PERF=1 Linux perf's of the whole process, kernel included (OUTDIR/perf.data;
// `perf report -i OUTDIR/perf.data --no-children --sort sym`). `fanout`: `count` agents enrolled
// before the profiled start, connected after it (two load processes), then five bulk pings
// (POST /api/jobs, every device), each awaited until every answer is recorded.
//   node bench/profile.ts OUTDIR [count] [ranges|whole|enrollment|fanout]
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { enrollSilently, startAgentSession } from '../src-main/device/index.ts';
import { inviteMany } from './lib/admin.ts';
import { enrollLoad, type EnrolledAgent } from './load/enroll.ts';
import { adminOf } from './lib/admin.ts';
import { connectSteps, startWorker } from './scenarios/broker.ts';
import { freshPings } from './scenarios/bulk-ping.ts';
import { cpuSeconds } from './lib/process.ts';
import { startServe, workDir } from './lib/process.ts';
import { measure, PACKAGE_SIZE, upload, writeRandomFile } from './scenarios/downloads.ts';

const [out = '/tmp/profile-ranges', n = '3000', kind = 'ranges'] = process.argv.slice(2);
const dir = workDir('profile');
const file = join(dir, 'bench-256MiB.apk');
writeRandomFile(file, PACKAGE_SIZE);
mkdirSync(join(dir, 'data'));
const serve = await startServe({ dataDir: join(dir, 'data'), logFile: join(dir, 'serve.log') });
const item = await upload(serve, file, 'bench-256MiB.apk');
const [invite] = await inviteMany(serve.info, 1, 'download');
const device = await enrollSilently({ deeplink: invite!.deeplink, email: invite!.email });
const session = await startAgentSession(device.backendUrl, device.apiToken);
let fanoutAgents: EnrolledAgent[] = [];
if (kind === 'fanout') {
  const load = await enrollLoad(await inviteMany(serve.info, Number(n), 'fanout'), 32, { serialPrefix: 'PF' });
  fanoutAgents = load.enrolled;
}
await serve.stop();
// Again, profiled from its start: what is measured is mostly the downloads.
const withPerf = process.env.PERF === '1';
mkdirSync(out, { recursive: true });
const profiled = await startServe({
  dataDir: join(dir, 'data'),
  logFile: join(dir, 'serve2.log'),
  nodeArgs: withPerf ? ['--perf-basic-prof-only-functions'] : ['--cpu-prof', '--cpu-prof-dir', out],
});
const target = {
  url: `${profiled.info.api_url}/PluginMdmPackage/${item.id}?session_token=${session.sessionToken}`,
  headers: { accept: 'application/octet-stream' },
};
const recorder = withPerf
  ? spawn('perf', ['record', '-e', 'cpu-clock', '-g', '-p', String(profiled.child.pid), '-o', join(out, 'perf.data')], {
      stdio: 'ignore',
    })
  : null;
if (recorder) await new Promise((resolve) => setTimeout(resolve, 500));
let result: unknown;
if (kind === 'enrollment') {
  const invites = await inviteMany(profiled.info, Number(n) + 200, 'profile');
  await enrollLoad(invites.slice(0, 200), 64, { serialPrefix: 'PW' }); // warm
  const before = cpuSeconds(profiled.child.pid);
  const load = await enrollLoad(invites.slice(200), 64, { serialPrefix: 'PM' });
  result = {
    enrollments: load.enrolled.length,
    errors: load.errors.length,
    cpu_ms_per_enrollment: ((cpuSeconds(profiled.child.pid) - before) * 1000) / load.enrolled.length,
  };
} else if (kind === 'fanout') {
  const workers = [0, 1].map((i) => startWorker(dir, i));
  await connectSteps('serve', profiled.child.pid, profiled.info.mqtt_port, fanoutAgents, [fanoutAgents.length], workers, 64);
  const admin = adminOf(profiled.info);
  const before = cpuSeconds(profiled.child.pid);
  for (let round = 0; round < 5; round++) {
    const awaitAll = await freshPings(workers, 120_000);
    const job = await admin.jobs.create({ body: { action: 'ping', selection: { filter: {} } } });
    await awaitAll();
    for (;;) {
      const { results: _none, ...current } = await admin.jobs.get({ params: { id: job.id }, query: { status: 'failed' } });
      if (current.state !== 'running' && current.counts.sent === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  result = {
    agents: fanoutAgents.length,
    cpu_us_per_command: ((cpuSeconds(profiled.child.pid) - before) * 1e6) / 5 / fanoutAgents.length,
  };
  for (const worker of workers) worker.child.process.send({ type: 'exit' });
  await Promise.all(workers.map((worker) => worker.child.stop()));
} else result = await measure(profiled.child.pid, target, kind as 'ranges' | 'whole', Number(n), kind === 'whole' ? 2 : 8);
if (recorder) {
  recorder.kill('SIGINT');
  await new Promise((resolve) => recorder.once('exit', resolve));
}
console.log(JSON.stringify(result));
await profiled.stop();
rmSync(dir, { recursive: true, force: true }); // the 256 MiB file and the data dir; the profile is in OUTDIR
