// Scenario 1: enrollment throughput and the server's CPU per enrollment, next to the Node HTTP
// ceiling (bare Fastify answering the same five requests with constant JSON). Both servers run
// side by side; the measured enrollments alternate between them in rounds, so that the machine's
// other work weighs on both alike.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { encodeDeeplinkData } from '../../src-main/device/index.ts';
import { enrollLoad, STEP_NAMES, type EnrolledAgent, type EnrollLoadResult, type Invite } from '../load/enroll.ts';
import { inviteMany } from '../lib/admin.ts';
import { cpuSeconds, ROOT, sleep, startChild, withFileLimit, type Child, type Serve } from '../lib/process.ts';
import { percentile, round } from '../lib/stats.ts';

export interface EnrollmentFigures {
  enrollments: number;
  concurrency: number;
  enrollments_per_s: number;
  cpu_ms_per_enrollment: number;
  /** Server CPU busy share of one core while its enrollments ran. */
  cpu_share: number;
  steps: { name: string; p50_ms: number; p99_ms: number }[];
  errors: number;
}

/** Enrollments of several batches against one server, with its CPU time over those batches. */
class Tally {
  readonly steps: number[][] = STEP_NAMES.map(() => []);
  readonly enrolled: EnrolledAgent[] = [];
  errors = 0;
  elapsedMs = 0;
  cpuSeconds = 0;

  add(load: EnrollLoadResult, cpu: number): void {
    load.steps.forEach((samples, i) => this.steps[i]!.push(...samples));
    this.enrolled.push(...load.enrolled);
    this.errors += load.errors.length;
    this.elapsedMs += load.elapsedMs;
    this.cpuSeconds += cpu;
    if (load.errors.length > 0) console.warn(`  ${load.errors.length} enrollment(s) failed, e.g. ${load.errors.find(Boolean)}`);
  }

  figures(concurrency: number): EnrollmentFigures {
    const n = this.enrolled.length;
    return {
      enrollments: n,
      concurrency,
      enrollments_per_s: round(n / (this.elapsedMs / 1000)),
      cpu_ms_per_enrollment: round((this.cpuSeconds * 1000) / n),
      cpu_share: round(this.cpuSeconds / (this.elapsedMs / 1000)),
      steps: STEP_NAMES.map((name, i) => ({
        name,
        p50_ms: round(percentile(this.steps[i]!, 50)),
        p99_ms: round(percentile(this.steps[i]!, 99)),
      })),
      errors: this.errors,
    };
  }
}

async function measured(
  pid: number,
  tally: Tally,
  invites: readonly Invite[],
  concurrency: number,
  serialPrefix?: string,
): Promise<void> {
  const cpuBefore = cpuSeconds(pid);
  const load = await enrollLoad(invites, concurrency, serialPrefix ? { serialPrefix } : {});
  tally.add(load, cpuSeconds(pid) - cpuBefore);
}

/** The ceiling server (bench/servers/ceiling.ts) on a loopback port; its invites are all alike. */
async function startCeiling(workDir: string): Promise<{ child: Child; invite: Invite }> {
  const portFile = join(workDir, 'ceiling.port');
  rmSync(portFile, { force: true });
  const child = startChild(withFileLimit([process.execPath, join(ROOT, 'bench', 'servers', 'ceiling.ts'), portFile]), {
    logFile: join(workDir, 'ceiling.log'),
  });
  let port = '';
  for (let i = 0; i < 500 && !port; i++) {
    await sleep(20);
    try {
      port = readFileSync(portFile, 'utf8');
    } catch {
      // not yet
    }
  }
  if (!port) {
    await child.stop();
    throw new Error('the ceiling server did not start');
  }
  const backendUrl = `http://127.0.0.1:${port}/api`;
  return {
    child,
    invite: {
      deeplink: encodeDeeplinkData({ backendUrl, userToken: 'u'.repeat(40), invitationToken: 'i'.repeat(64) }),
      email: 'someone-1@bench.example',
    },
  };
}

/** Issue 24: server CPU per enrollment at most twice bare Fastify's. */
export const ENROLLMENT_GOAL = 2.0;

export interface EnrollmentResult {
  serve: EnrollmentFigures;
  ceiling: EnrollmentFigures;
  /** serve CPU per enrollment / ceiling CPU per enrollment; goal ≤ 2.0 (issue 24). */
  ratio: number;
  rounds: number;
  target: number;
  met: boolean;
}

/**
 * Enrolls `warm` + `count` devices against `serve` (invitations made in bulk, no email) and
 * `ceilingCount` against the ceiling, in `rounds` alternating batches after a warm-up of both.
 * Returns the MQTT credentials of every device enrolled on `serve`.
 */
export async function enrollmentScenario(
  serve: Serve,
  workDir: string,
  options: { count: number; warm: number; concurrency: number; ceilingCount: number; rounds: number },
): Promise<{ result: EnrollmentResult; enrolled: EnrolledAgent[] }> {
  const invites = await inviteMany(serve.info, options.count + options.warm, 'enroll');
  const ceiling = await startCeiling(workDir);
  try {
    const warm = await enrollLoad(invites.slice(0, options.warm), options.concurrency, { serialPrefix: 'R58W' });
    await enrollLoad(
      Array.from({ length: options.warm }, () => ceiling.invite),
      options.concurrency,
    );
    const serveTally = new Tally();
    const ceilingTally = new Tally();
    const rest = invites.slice(options.warm);
    for (let round = 0; round < options.rounds; round++) {
      const slice = (n: number) =>
        [Math.floor((n * round) / options.rounds), Math.floor((n * (round + 1)) / options.rounds)] as const;
      const [from, to] = slice(rest.length);
      await sleep(100);
      await measured(serve.child.pid, serveTally, rest.slice(from, to), options.concurrency, `R58E${round}X`);
      const [cFrom, cTo] = slice(options.ceilingCount);
      await sleep(100);
      await measured(
        ceiling.child.pid,
        ceilingTally,
        Array.from({ length: cTo - cFrom }, () => ceiling.invite),
        options.concurrency,
      );
    }
    const serveFigures = serveTally.figures(options.concurrency);
    const ceilingFigures = ceilingTally.figures(options.concurrency);
    const ratio = round(serveFigures.cpu_ms_per_enrollment / ceilingFigures.cpu_ms_per_enrollment);
    return {
      result: {
        serve: serveFigures,
        ceiling: ceilingFigures,
        ratio,
        rounds: options.rounds,
        target: ENROLLMENT_GOAL,
        met: ratio <= ENROLLMENT_GOAL,
      },
      enrolled: [...warm.enrolled, ...serveTally.enrolled],
    };
  } finally {
    await ceiling.child.stop();
  }
}
