// Scenario 5: cold start, from spawning `serve` to server.json written; next to the same for the
// bare Fastify server of the enrollment scenario (Node + Fastify start-up, the floor).
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, sleep, startChild, startServe } from '../lib/process.ts';
import { percentile, round } from '../lib/stats.ts';

export interface ColdStartResult {
  fresh_data_dir_ms: number[];
  existing_data_dir_ms: number[];
  /** Agents in the existing data dir. */
  existing_agents: number;
  bare_fastify_ms: number[];
  median_fresh_ms: number;
  median_existing_ms: number;
  median_bare_ms: number;
  /** serve (worse of fresh and existing) / bare Fastify. */
  ratio: number;
  target_ms: number;
  met: boolean;
}

async function bareStart(workDir: string, i: number): Promise<number> {
  const portFile = join(workDir, `bare-${i}.port`);
  rmSync(portFile, { force: true });
  const started = performance.now();
  const child = startChild([process.execPath, join(ROOT, 'bench', 'servers', 'ceiling.ts'), portFile], {
    logFile: join(workDir, 'bare.log'),
  });
  while (!existsSync(portFile) || readFileSync(portFile, 'utf8') === '') await sleep(2);
  const ms = performance.now() - started;
  await child.stop();
  return ms;
}

export async function coldStartScenario(
  workDir: string,
  existingDataDir: string,
  existingAgents: number,
  runs: number,
): Promise<ColdStartResult> {
  const fresh: number[] = [];
  const existing: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < runs; i++) {
    const dataDir = join(workDir, `fresh-${i}`);
    mkdirSync(dataDir, { recursive: true });
    const a = await startServe({ dataDir, logFile: join(workDir, `fresh-${i}.log`) });
    fresh.push(a.startMs);
    await a.stop();
    const b = await startServe({ dataDir: existingDataDir, logFile: join(workDir, `existing-${i}.log`) });
    existing.push(b.startMs);
    await b.stop();
    bare.push(await bareStart(workDir, i));
  }
  const medianFresh = percentile(fresh, 50);
  const medianExisting = percentile(existing, 50);
  const medianBare = percentile(bare, 50);
  const worst = Math.max(medianFresh, medianExisting);
  return {
    fresh_data_dir_ms: fresh.map((ms) => round(ms)),
    existing_data_dir_ms: existing.map((ms) => round(ms)),
    existing_agents: existingAgents,
    bare_fastify_ms: bare.map((ms) => round(ms)),
    median_fresh_ms: round(medianFresh),
    median_existing_ms: round(medianExisting),
    median_bare_ms: round(medianBare),
    ratio: round(worst / medianBare),
    target_ms: 1500,
    met: worst < 1500,
  };
}
