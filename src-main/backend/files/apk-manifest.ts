/**
 * What an uploaded APK says about itself: package name, version code and name, label and icon.
 *
 * An uploaded file is hostile until read: it is read in a worker thread (apk-worker.ts) with a
 * heap limit and a time limit (the worker is terminated past it), a few at a time, so that a
 * crafted manifest, a zip bomb or a lying zip header can cost a bounded amount of memory and
 * time and never the server's own thread. Inside the worker only the entries needed are
 * inflated, their declared and real sizes both bounded (zip-reader.ts).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ApkFacts, ApkWorkerInput, ApkWorkerResult } from './apk-worker.ts';

export type { ApkFacts } from './apk-worker.ts';
export type ApkReadResult = { ok: true; info: ApkFacts } | { ok: false; reason: string };

export interface ApkReaderOptions {
  /** A read still running after this is stopped (default 15 s). */
  timeoutMs?: number;
  /** The worker's heap (V8 old generation) limit, in MiB (default 64). */
  maxHeapMb?: number;
  /** Reads at once; the others wait their turn (default 2). */
  concurrency?: number;
  /** Largest AndroidManifest.xml inflated, declared and real (default 8 MiB). */
  maxManifestBytes?: number;
  /** Largest resources.arsc inflated (default 64 MiB). */
  maxResourcesBytes?: number;
}

const DEFAULTS = {
  timeoutMs: 15_000,
  maxHeapMb: 64,
  concurrency: 2,
  maxManifestBytes: 8 * 1024 * 1024,
  maxResourcesBytes: 64 * 1024 * 1024,
};

/**
 * The worker's file: next to this module when run from source (apk-worker.ts), or the bundle's
 * apk-worker.js entry (electron.vite.config.ts) beside the bundled main process.
 */
function workerFile(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const source = join(here, 'apk-worker.ts');
  return existsSync(source) ? source : join(here, 'apk-worker.js');
}

export class ApkReader {
  private readonly options: typeof DEFAULTS;
  private readonly running = new Set<Worker>();
  private readonly queue: Array<() => void> = [];
  private active = 0;
  private closed = false;

  constructor(options: ApkReaderOptions = {}) {
    this.options = { ...DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  }

  /** Reads the APK at `path`; never throws: an unreadable file is `{ ok: false, reason }`. */
  async read(path: string): Promise<ApkReadResult> {
    if (this.active >= this.options.concurrency) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.active++;
    try {
      if (this.closed) return { ok: false, reason: 'the server is stopping' };
      return await this.readInWorker(path);
    } finally {
      this.active--;
      this.queue.shift()?.();
    }
  }

  /** Stops every read under way (they answer "the server is stopping"). */
  async close(): Promise<void> {
    this.closed = true;
    for (const resolve of this.queue.splice(0)) resolve();
    await Promise.all([...this.running].map((worker) => worker.terminate()));
  }

  private readInWorker(path: string): Promise<ApkReadResult> {
    const { timeoutMs, maxHeapMb, maxManifestBytes, maxResourcesBytes } = this.options;
    const input: ApkWorkerInput = {
      path,
      maxManifestBytes,
      maxResourcesBytes,
      maxIconBytes: 384 * 1024,
      maxCentralDirectoryBytes: 16 * 1024 * 1024,
      maxEntries: 65_535,
    };
    return new Promise((resolve) => {
      let settled = false;
      const worker = new Worker(workerFile(), {
        workerData: input,
        resourceLimits: { maxOldGenerationSizeMb: maxHeapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
      });
      // A read in progress never keeps the process alive: a stopping server does not wait for it.
      worker.unref();
      this.running.add(worker);
      const finish = (result: ApkReadResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.running.delete(worker);
        void worker.terminate();
        resolve(result);
      };
      const timer = setTimeout(
        () => finish({ ok: false, reason: `reading it took longer than ${timeoutMs / 1000} s` }),
        timeoutMs,
      );
      worker.once('message', (result: ApkWorkerResult) => finish(result));
      worker.once('error', (error: Error & { code?: string }) => {
        if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
          finish({ ok: false, reason: `reading it needed more than ${maxHeapMb} MiB of memory` });
          return;
        }
        // Not the file's fault (the worker could not start or load): the operator should hear of it.
        process.emitWarning(`the APK reader failed: ${error.message}`);
        finish({ ok: false, reason: 'reading it failed' });
      });
      worker.once('exit', () =>
        finish({ ok: false, reason: this.closed ? 'the server is stopping' : 'reading it stopped before the end' }),
      );
    });
  }
}
