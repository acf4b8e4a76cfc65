// Scenario 1: enrollment throughput and the server's CPU per enrollment, next to the Node HTTP
// ceiling (bare Fastify answering the same five requests with constant JSON).
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { encodeDeeplinkData } from '../../src-main/device/index.ts';
import { enrollLoad, STEP_NAMES, type EnrolledAgent, type EnrollLoadResult, type Invite } from '../load/enroll.ts';
import { inviteMany } from '../lib/admin.ts';
import { cpuSeconds, ROOT, sleep, startChild, withFileLimit, type Serve } from '../lib/process.ts';
import { percentile, round } from '../lib/stats.ts';

export interface EnrollmentFigures {
  enrollments: number;
  concurrency: number;
  enrollments_per_s: number;
  cpu_ms_per_enrollment: number;
  /** Server CPU busy share of one core during the run. */
  cpu_share: number;
  steps: { name: string; p50_ms: number; p99_ms: number }[];
  errors: number;
}

export function summarize(load: EnrollLoadResult, cpuSecondsUsed: number, concurrency: number): EnrollmentFigures {
  const n = load.enrolled.length;
  return {
    enrollments: n,
    concurrency,
    enrollments_per_s: round(n / (load.elapsedMs / 1000)),
    cpu_ms_per_enrollment: round((cpuSecondsUsed * 1000) / n),
    cpu_share: round(cpuSecondsUsed / (load.elapsedMs / 1000)),
    steps: STEP_NAMES.map((name, i) => ({ name, p50_ms: round(percentile(load.steps[i]!, 50)), p99_ms: round(percentile(load.steps[i]!, 99)) })),
    errors: load.errors.length,
  };
}

/** Measures `invites` against a running server process, after a warm-up of `warm` of them. */
export async function measureEnrollment(pid: number, invites: readonly Invite[], warm: number, concurrency: number, serialPrefix?: string) {
  const warmLoad = await enrollLoad(invites.slice(0, warm), concurrency, serialPrefix ? { serialPrefix: `${serialPrefix}W` } : {});
  await sleep(200);
  const cpuBefore = cpuSeconds(pid);
  const load = await enrollLoad(invites.slice(warm), concurrency, serialPrefix ? { serialPrefix } : {});
  const cpu = cpuSeconds(pid) - cpuBefore;
  if (load.errors.length > 0) console.warn(`  ${load.errors.length} enrollment(s) failed, e.g. ${load.errors.find(Boolean)}`);
  return { figures: summarize(load, cpu, concurrency), enrolled: [...warmLoad.enrolled, ...load.enrolled], load };
}

/** The ceiling: same load generator, same five requests, constant answers. */
export async function measureCeiling(workDir: string, count: number, warm: number, concurrency: number): Promise<EnrollmentFigures> {
  const portFile = join(workDir, 'ceiling.port');
  rmSync(portFile, { force: true });
  const child = startChild(withFileLimit([process.execPath, join(ROOT, 'bench', 'servers', 'ceiling.ts'), portFile]), {
    logFile: join(workDir, 'ceiling.log'),
  });
  try {
    let port = '';
    for (let i = 0; i < 500 && !port; i++) {
      await sleep(20);
      try {
        port = readFileSync(portFile, 'utf8');
      } catch {
        // not yet
      }
    }
    if (!port) throw new Error('the ceiling server did not start');
    const backendUrl = `http://127.0.0.1:${port}/api`;
    const invites: Invite[] = Array.from({ length: count + warm }, () => ({
      deeplink: encodeDeeplinkData({ backendUrl, userToken: 'u'.repeat(40), invitationToken: 'i'.repeat(64) }),
      email: 'someone-1@bench.example',
    }));
    const { figures } = await measureEnrollment(child.pid, invites, warm, concurrency);
    return figures;
  } finally {
    await child.stop();
  }
}

export interface EnrollmentResult {
  serve: EnrollmentFigures;
  ceiling: EnrollmentFigures;
  /** serve CPU per enrollment / ceiling CPU per enrollment; target ≤ 2.5. */
  ratio: number;
  target: number;
  met: boolean;
}

/** Enrolls `count` (+ `warm`) devices against `serve`, then the ceiling; returns the MQTT credentials too. */
export async function enrollmentScenario(
  serve: Serve,
  workDir: string,
  options: { count: number; warm: number; concurrency: number; ceilingCount: number },
): Promise<{ result: EnrollmentResult; enrolled: EnrolledAgent[] }> {
  const invites = await inviteMany(serve.info, options.count + options.warm, 'enroll');
  const measured = await measureEnrollment(serve.child.pid, invites, options.warm, options.concurrency, 'R58E');
  const ceiling = await measureCeiling(workDir, options.ceilingCount, options.warm, options.concurrency);
  const ratio = round(measured.figures.cpu_ms_per_enrollment / ceiling.cpu_ms_per_enrollment);
  return {
    result: { serve: measured.figures, ceiling, ratio, target: 2.5, met: ratio <= 2.5 },
    enrolled: measured.enrolled,
  };
}
