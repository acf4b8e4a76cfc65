// `npm test`: the whole suite, as CI runs it. The typecheck, the linter (ESLint), the formatter's
// check (Prettier) and the console build go first, side by side; then the Vitest suite (unit + API),
// the agent and admin API suites again on PostgreSQL, the cluster suite (three `serve` nodes behind
// haproxy, scripts/cluster.ts) and the Playwright suite (Chromium) run side by side,
// since each starts its own servers on OS-chosen ports and shares nothing with the other. Each
// suite's output is printed whole when it ends (not interleaved), then one closing line counts
// every test of both.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
/** The suites that run a second time on PostgreSQL. */
const POSTGRES_SUITES = ['test/api/agent-api', 'test/api/admin-api'];
const bin = (name: string) => join(root, 'node_modules/.bin', name);
const reports = mkdtempSync(join(tmpdir(), 'mdm-test-report-'));

interface Step {
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
}

interface Outcome {
  name: string;
  code: number;
  output: string;
  seconds: number;
}

function run(step: Step): Promise<Outcome> {
  const started = Date.now();
  return new Promise((done) => {
    // A log, not a terminal: no colour codes (FORCE_COLOR would override NO_COLOR, so it goes).
    // MDM_CHECK_RESPONSES: every admin answer is checked against its contract schema (e2e included).
    const { FORCE_COLOR: _, ...env } = process.env;
    const child = spawn(step.command, step.args, {
      cwd: root,
      env: { ...env, ...step.env, NO_COLOR: '1', MDM_CHECK_RESPONSES: '1' },
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code, signal) =>
      done({ name: step.name, code: code ?? (signal ? 1 : 0), output, seconds: Math.round((Date.now() - started) / 1000) }),
    );
  });
}

async function stage(steps: Step[]): Promise<boolean> {
  const outcomes = await Promise.all(steps.map(run));
  for (const { name, code, output, seconds } of outcomes) {
    console.log(`\n──── ${name} (${seconds} s, ${code === 0 ? 'ok' : `exit ${code}`}) ────\n${output.trimEnd()}`);
  }
  return outcomes.every((outcome) => outcome.code === 0);
}

/** The counts of Vitest's JSON report (Jest's format) that the closing line adds up. */
interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
}
/** The counts of Playwright's JSON report. */
interface PlaywrightReport {
  stats: { expected: number; unexpected: number; flaky: number; skipped: number };
}

/** A report, or null when its suite did not run or died before writing it. */
function readJson<T>(file: string): Partial<T> | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Partial<T>;
  } catch {
    return null;
  }
}

const vitestJson = join(reports, 'vitest.json');
const postgresJson = join(reports, 'vitest-postgres.json');
const clusterJson = join(reports, 'vitest-cluster.json');
const playwrightJson = join(reports, 'playwright.json');

let ok = await stage([
  { name: 'typecheck', command: 'npm', args: ['run', '--silent', 'typecheck'] },
  { name: 'lint (ESLint)', command: 'npm', args: ['run', '--silent', 'lint'] },
  { name: 'format check (Prettier)', command: 'npm', args: ['run', '--silent', 'format', '--', '--check'] },
  { name: 'console build', command: bin('electron-vite'), args: ['build', '--logLevel', 'warn'] },
]);
if (ok) {
  ok = await stage([
    {
      name: 'unit and API tests (Vitest)',
      command: bin('vitest'),
      args: ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${vitestJson}`],
    },
    {
      // The same agent API and admin API suites again, every test backend on PostgreSQL (a cluster of
      // the run's own, scripts/postgres.ts): the backend keeps its word on both engines.
      name: 'agent and admin API tests on PostgreSQL (Vitest, MDM_TEST_ENGINE=postgres)',
      command: bin('vitest'),
      args: ['run', ...POSTGRES_SUITES, '--reporter=default', '--reporter=json', `--outputFile.json=${postgresJson}`],
      env: { MDM_TEST_ENGINE: 'postgres' },
    },
    {
      // Real clusters (PostgreSQL, Mosquitto, three serve nodes, haproxy), one per file, one file at a time.
      name: 'cluster tests (Vitest, test/cluster: three nodes behind haproxy)',
      command: bin('vitest'),
      args: [
        'run',
        '-c',
        'vitest.cluster.config.ts',
        '--reporter=default',
        '--reporter=json',
        `--outputFile.json=${clusterJson}`,
      ],
    },
    {
      name: 'end-to-end tests (Playwright, Chromium)',
      command: bin('playwright'),
      args: ['test', '--reporter=list,json'],
      env: { PLAYWRIGHT_JSON_OUTPUT_NAME: playwrightJson },
    },
  ]);
}

const vitests = [vitestJson, postgresJson, clusterJson].map((file) => readJson<VitestReport>(file));
const playwright = readJson<PlaywrightReport>(playwrightJson)?.stats;
const sum = (count: (report: Partial<VitestReport>) => number | undefined) =>
  vitests.reduce((total, report) => total + (report ? (count(report) ?? 0) : 0), 0);
const passed = sum((r) => r.numPassedTests) + (playwright?.expected ?? 0);
const failed = sum((r) => r.numFailedTests) + (playwright?.unexpected ?? 0) + (playwright?.flaky ?? 0);
const skipped = sum((r) => r.numPendingTests) + sum((r) => r.numTodoTests) + (playwright?.skipped ?? 0);
rmSync(reports, { recursive: true, force: true });
console.log(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(ok && failed === 0 && passed > 0 ? 0 : 1);
