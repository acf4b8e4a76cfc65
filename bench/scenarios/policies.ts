// Scenario 7: the recommended baseline (every value policy of the catalogue at its recommended
// value, what the console's "Apply the recommended baseline" sets: 38 policies) applied to a fleet
// of connected simulated devices (1,000 at full scale), one POST /api/policy-assignments per
// policy, as the console sends them. Each device gets the retained messages on its fleet topic,
// applies each value and reports received then done over MQTT. Measured: the time from the first
// POST until the server has every task done, the messages (published by the server, received and
// acted on by the devices, reported back), and the server's CPU and peak RSS over that time.
import { join } from 'node:path';
import { VALUE_POLICIES } from '../../src-shared/contract/index.ts';
import { adminOf } from '../lib/admin.ts';
import { cpuSeconds, peakRssBytes, rssBytes, startServe } from '../lib/process.ts';
import { MiB, round } from '../lib/stats.ts';
import { startWorker, type Worker } from './deployments.ts';

export interface PolicyBaselineResult {
  devices: number;
  policies: number;
  /** From the first POST to the server holding every task done (or failed, incompatible). */
  seconds_to_all_done: number;
  /** Tasks as the server counts them at the end. */
  tasks: number;
  done: number;
  failed: number;
  incompatible: number;
  /** Retained policy messages the server published (one per assignment, on the fleet topic). */
  published: number;
  /** Policy messages the devices received and acted on (the broker's fan-out). */
  delivered: number;
  /** Status reports the devices published back (received, done, …). */
  reports: number;
  server_cpu_s: number;
  server_rss_peak_mib: number;
  server_vmhwm_mib: number;
}

const now = () => performance.timeOrigin + performance.now();

export async function policyBaselineScenario(
  workDir: string,
  options: { devices: number; workers: number },
): Promise<PolicyBaselineResult> {
  const serve = await startServe({ dataDir: join(workDir, 'policies-data'), logFile: join(workDir, 'serve-policies.log') });
  const workers: Worker[] = [];
  try {
    const admin = adminOf(serve.info);
    const fleet = await admin.fleets.create({ body: { name: 'Bench baseline' } });
    const invites: { deeplink: string; email: string }[] = [];
    const invitations = Array.from({ length: options.devices }, (_, i) => ({
      email: `baseline-${i}@bench.example`,
      fleet: fleet.name,
    }));
    for (let start = 0; start < invitations.length; start += 5000) {
      const { items } = await admin.invitations.createMany({
        body: { invitations: invitations.slice(start, start + 5000), send_email: false },
      });
      invites.push(...items);
    }

    for (let i = 0; i < options.workers; i++) workers.push(startWorker(workDir, i));
    const share = Math.ceil(invites.length / options.workers);
    // Devices that can apply every policy: a recent Android and a system agent.
    const started = await Promise.all(
      workers.map((worker, i) =>
        worker.request(
          {
            type: 'start',
            invites: invites.slice(i * share, (i + 1) * share),
            concurrency: 16,
            chunkSize: MiB,
            retries: 3,
            androidVersion: '14',
            system: true,
          },
          'started',
        ),
      ),
    );
    const ready = started.reduce((sum, s) => sum + s.ok, 0);
    if (ready !== options.devices)
      throw new Error(`only ${ready} of ${options.devices} devices started: ${started.flatMap((s) => s.errors).join('; ')}`);

    const pid = serve.child.pid;
    let peak = rssBytes(pid);
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 250);
    const cpuBefore = cpuSeconds(pid);
    const t0 = now();
    // As the console applies the baseline: one request per policy, all at once.
    const created = await Promise.all(
      VALUE_POLICIES.map((policy) =>
        admin.policies.set({
          body: { policy: policy.symbol, value: policy.recommended as boolean | number | string, fleet_id: fleet.id },
        }),
      ),
    );
    const taskIds = created.map((assignment) => assignment.id);
    const finished = await Promise.all(
      workers.map((worker) => worker.request({ type: 'await-all', taskIds, timeoutMs: 30 * 60_000 }, 'all-done')),
    );
    // Done is when the server has every report (the devices' last MQTT messages may still be on their way).
    const expected = options.devices * taskIds.length;
    let counts = { total: 0, done: 0, failed: 0, incompatible: 0 };
    for (const until = Date.now() + 120_000; Date.now() < until;) {
      const { items } = await admin.policies.list({ query: { fleet_id: fleet.id, state: 'active' } });
      counts = items.reduce(
        (sum, item) => ({
          total: sum.total + item.total,
          done: sum.done + item.done,
          failed: sum.failed + item.failed,
          incompatible: sum.incompatible + item.incompatible,
        }),
        { total: 0, done: 0, failed: 0, incompatible: 0 },
      );
      if (counts.done + counts.failed + counts.incompatible >= expected) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const endAt = Math.max(now(), ...finished.map((f) => f.lastAt));
    const cpu = cpuSeconds(pid) - cpuBefore;
    clearInterval(sampler);
    const seconds = (endAt - t0) / 1000;
    if (counts.failed > 0) console.log(`  failed tasks: ${finished.flatMap((f) => f.reasons).join('; ')}`);
    const delivered = finished.reduce((sum, f) => sum + f.received, 0);
    const reports = finished.reduce((sum, f) => sum + f.reports, 0);
    console.log(
      `  ${counts.done} of ${expected} tasks done (${counts.failed} failed, ${counts.incompatible} incompatible) in ${round(seconds)} s; ` +
        `${taskIds.length} messages published, ${delivered} delivered, ${reports} reports; CPU ${round(cpu)} s, peak RSS ${round(peak / MiB)} MiB`,
    );
    return {
      devices: options.devices,
      policies: taskIds.length,
      seconds_to_all_done: round(seconds),
      tasks: counts.total,
      done: counts.done,
      failed: counts.failed,
      incompatible: counts.incompatible,
      published: taskIds.length,
      delivered,
      reports,
      server_cpu_s: round(cpu),
      server_rss_peak_mib: round(peak / MiB),
      server_vmhwm_mib: round(peakRssBytes(pid) / MiB),
    };
  } finally {
    for (const worker of workers) {
      if (worker.child.process.connected) worker.child.process.send({ type: 'exit' });
      await worker.child.stop(5_000);
    }
    await serve.stop();
  }
}
