// The simulated agent's policies: deployApp, deployFile, removeApp, removeFile (the reference's
// fleet and device policies, received retained on `…/Policy/<name>/Task/<taskId>`). Each task is
// reported received, in progress, then done or failed with a reason, through whichever
// TaskReporter the dialect chose. Downloads go by byte ranges and are checked against the size and
// SHA-256 the server announces; what was "installed" is kept so that removals are checked too.
import { createHash } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AgentApiError, type AgentApiClient, type ContentKind } from './api-client.ts';
import type { StepLog } from './enroll.ts';
import type { TaskReporter, TaskReportStatus } from './task-reports.ts';
import { olderThan, readValue, VALUE_POLICIES } from './value-policies.ts';

export const POLICY_NAMES = ['deployApp', 'deployFile', 'removeApp', 'removeFile'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

export interface InstalledApp {
  packageId: number;
  versionCode: number | null;
  /** As the server's package metadata says (`version_name`); what the inventory reports as VERSION. */
  versionName: string | null;
  size: number;
  sha256: string;
  at: string;
}

export interface InstalledFile {
  fileId: number;
  version: number | null;
  size: number;
  sha256: string;
  at: string;
}

export interface PolicyState {
  /** By Android package name. */
  apps: Record<string, InstalledApp>;
  /** By path on the device. */
  files: Record<string, InstalledFile>;
  /** Last status of each task, by task id. */
  tasks: Record<number, { policy: string; status: TaskReportStatus; reason?: string }>;
  /**
   * The value policies in force, by symbol: what the device applied, from which task and topic. A
   * value from the device's own topic has priority over its fleet's (as in the Flyve agent).
   */
  settings: Record<string, { value: boolean | number | string; taskId: number; fromFleet: boolean }>;
}

/** An installed package as the device's inventory lists it. */
export interface InstalledPackage {
  packageName: string;
  versionCode: number | null;
  versionName: string | null;
}

export type PolicyEvent = { type: 'task'; taskId: number; policy: string; status: TaskReportStatus; reason?: string };

export interface PolicyRunnerOptions {
  /** A client with an open session (opened with the agent's api_token); called again after a 401. */
  session: (renew: boolean) => Promise<AgentApiClient>;
  reporter: TaskReporter;
  log?: StepLog;
  onEvent?: (event: PolicyEvent) => void;
  /** Bytes per Range request (default 8 MiB). */
  chunkSize?: number;
  /** Where "installed" content is written; default: nowhere (only hashed, as a load generator wants). */
  storageDir?: string;
  /**
   * Times a request that met a network error or a 503 is tried again, a download resuming at the
   * byte it had reached (default 0: the first such error fails the task). For a load generator on a
   * saturated machine, where a late connect or a busy server is not what is being tested.
   */
  retries?: number;
  /** The Android version the device runs (value policies below their minimum are reported incompatible). */
  androidVersion?: string;
  /** Whether the agent is installed as a system app (system-only policies need it). */
  system?: boolean;
  /**
   * False: deployApp downloads and checks the package and reports done, but nothing is installed
   * (its inventory does not list it), as a device where the install silently did not happen. Default true.
   */
  install?: boolean;
}

const DEFAULT_CHUNK = 8 * 1024 * 1024;
/** `…/Policy/<name>/Task/<id>`, under the agent's topic or a fleet's. */
const POLICY_TOPIC = /\/Policy\/([^/]+)\/Task\/([1-9]\d*)$/;

export function parsePolicyTopic(topic: string): { policy: string; taskId: number } | null {
  const match = POLICY_TOPIC.exec(topic);
  return match ? { policy: match[1]!, taskId: Number(match[2]) } : null;
}

class TaskFailure extends Error {}

export class PolicyRunner {
  readonly state: PolicyState = { apps: {}, files: {}, tasks: {}, settings: {} };
  private readonly options: PolicyRunnerOptions;
  private readonly log: StepLog;
  /** Policy messages already taken up, by task id: a retained message seen again is not run twice. */
  private readonly seen = new Map<number, string>();
  /** The policy of each task seen, by task id. */
  private readonly seenPolicy = new Map<number, string>();
  private queue: Promise<void> = Promise.resolve();

  constructor(options: PolicyRunnerOptions) {
    this.options = options;
    this.log = options.log ?? (() => {});
  }

  /** True when the topic is a policy's; the message is then queued (tasks run one at a time, as on a phone). */
  handle(topic: string, text: string): boolean {
    const parsed = parsePolicyTopic(topic);
    if (!parsed) return false;
    if (text === '') {
      this.log(`policy: task ${parsed.taskId} (${parsed.policy}) withdrawn by the server`);
      const setting = this.state.settings[parsed.policy];
      if (setting?.taskId === parsed.taskId) delete this.state.settings[parsed.policy];
      this.seen.delete(parsed.taskId);
      // Its own value gone, its fleet's value of that policy applies again: the server sends that
      // message anew, and it is run again (not skipped as one already seen).
      if (!/\/fleet\/\d+\/Policy\//.test(topic))
        for (const [taskId, policy] of this.seenPolicy)
          if (policy === parsed.policy && taskId !== parsed.taskId) this.seen.delete(taskId);
      return true;
    }
    if (this.seen.get(parsed.taskId) === text) return true;
    this.seen.set(parsed.taskId, text);
    this.seenPolicy.set(parsed.taskId, parsed.policy);
    this.queue = this.queue.then(() => this.run(topic, parsed.policy, parsed.taskId, text));
    return true;
  }

  /** What it installed, as its inventory lists it. */
  installedApps(): InstalledPackage[] {
    return Object.entries(this.state.apps).map(([packageName, app]) => ({
      packageName,
      versionCode: app.versionCode,
      versionName: app.versionName,
    }));
  }

  /** Resolves once every queued task has been run. */
  idle(): Promise<void> {
    return this.queue;
  }

  private async run(topic: string, policyText: string, taskId: number, text: string): Promise<void> {
    // Withdrawn (an empty retained message) while it waited its turn: nothing to apply any more. A
    // device that reconnects gets every retained policy at once, and the server may clear one of
    // them right after (it left a view): applying it late would keep a value no longer in force.
    if (this.seen.get(taskId) !== text) {
      this.log(`policy: task ${taskId} (${policyText}) was withdrawn before it ran; skipped`);
      return;
    }
    let message: Record<string, unknown>;
    try {
      const value = JSON.parse(text) as unknown;
      if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('not an object');
      message = value as Record<string, unknown>;
    } catch {
      this.log(`policy: task ${taskId}: message is not JSON, ignored`);
      return;
    }
    const valuePolicy = VALUE_POLICIES[policyText];
    if (!(POLICY_NAMES as readonly string[]).includes(policyText) && !valuePolicy) {
      this.log(`policy: ${policyText} (task ${taskId}) is not a policy the simulator knows; ignored`);
      return;
    }
    const policy = policyText;
    const report = async (status: TaskReportStatus, reason?: string) => {
      this.state.tasks[taskId] = reason === undefined ? { policy, status } : { policy, status, reason };
      this.emit({ type: 'task', taskId, policy, status, ...(reason === undefined ? {} : { reason }) });
      this.log(`policy: task ${taskId} ${policy} → ${status}${reason ? ` (${reason})` : ''}`);
      try {
        await this.options.reporter.report({ taskId, policyTopic: topic, status, ...(reason === undefined ? {} : { reason }) });
      } catch (error) {
        this.log(
          `policy: task ${taskId}: the ${status} report did not reach the server: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    };
    await report('received');
    // Withdrawn while its report travelled: it is not applied.
    if (this.seen.get(taskId) !== text) {
      this.log(`policy: task ${taskId} (${policy}) was withdrawn while it ran; not applied`);
      return;
    }
    if (valuePolicy) {
      const read = readValue(valuePolicy, message[policy]);
      const version = this.options.androidVersion;
      if ('error' in read) await report('failed', `${policy}: ${read.error}`);
      else if (version !== undefined && olderThan(version, valuePolicy.android))
        await report('incompatible', `Android ${version} cannot apply ${policy} (needs ${valuePolicy.android})`);
      else if (valuePolicy.system && !this.options.system)
        await report('incompatible', `${policy} needs the agent installed as a system app`);
      else {
        // The device's own topic has priority over its fleet's (the agent's policy priority).
        const fromFleet = /\/fleet\/\d+\/Policy\//.test(topic);
        const current = this.state.settings[policy];
        if (!(current && !current.fromFleet && fromFleet)) this.state.settings[policy] = { value: read.value, taskId, fromFleet };
        await report('done');
      }
      return;
    }
    try {
      switch (policy as PolicyName) {
        case 'deployApp':
          await this.deployApp(message, report);
          break;
        case 'deployFile':
          await this.deployFile(message, report);
          break;
        case 'removeApp':
          this.removeApp(message);
          break;
        case 'removeFile':
          await this.removeFile(message);
          break;
      }
      await report('done');
    } catch (error) {
      await report('failed', error instanceof TaskFailure ? error.message : describe(error));
    }
  }

  private async deployApp(message: Record<string, unknown>, report: (status: TaskReportStatus) => Promise<void>): Promise<void> {
    const packageName = text(message.deployApp, 'deployApp');
    const id = positiveId(message.id, 'id');
    await report('in progress');
    const metadata = await this.metadata('package', id);
    if (metadata.package_name !== undefined && metadata.package_name !== packageName) {
      throw new TaskFailure(`package ${id} is ${String(metadata.package_name)}, not ${packageName}`);
    }
    const fetched = await this.download('package', id, metadata, this.storagePath('apps', `${packageName}.apk`));
    if (this.options.install === false) {
      this.log(`policy: ${packageName} downloaded and checked, NOT installed (the device is told not to install)`);
      return;
    }
    const versionCode = message.versionCode === undefined ? null : Number(message.versionCode);
    this.state.apps[packageName] = {
      packageId: id,
      versionCode: Number.isFinite(versionCode) ? versionCode : null,
      versionName: typeof metadata.version_name === 'string' && metadata.version_name !== '' ? metadata.version_name : null,
      ...fetched,
      at: new Date().toISOString(),
    };
  }

  private async deployFile(message: Record<string, unknown>, report: (status: TaskReportStatus) => Promise<void>): Promise<void> {
    const destination = text(message.deployFile, 'deployFile');
    const id = positiveId(message.id, 'id');
    await report('in progress');
    const metadata = await this.metadata('file', id);
    const fileName =
      typeof metadata.dl_filename === 'string'
        ? metadata.dl_filename
        : typeof metadata.name === 'string'
          ? metadata.name
          : `file-${id}`;
    const path = destination.endsWith('/') ? `${destination}${fileName}` : `${destination}/${fileName}`;
    const fetched = await this.download('file', id, metadata, this.storagePath('files', path));
    const version = message.version === undefined ? null : Number(message.version);
    this.state.files[path] = {
      fileId: id,
      version: Number.isFinite(version) ? version : null,
      ...fetched,
      at: new Date().toISOString(),
    };
  }

  private removeApp(message: Record<string, unknown>): void {
    const packageName = text(message.removeApp, 'removeApp');
    if (!this.state.apps[packageName]) throw new TaskFailure(`${packageName} is not installed`);
    delete this.state.apps[packageName];
  }

  private async removeFile(message: Record<string, unknown>): Promise<void> {
    const path = text(message.removeFile, 'removeFile');
    if (!this.state.files[path]) throw new TaskFailure(`${path} does not exist on this device`);
    delete this.state.files[path];
    const stored = this.storagePath('files', path);
    if (stored) await rm(stored, { force: true });
  }

  private async metadata(kind: ContentKind, id: number): Promise<Record<string, unknown>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.withSession((client) => client.getContentMetadata(kind, id));
      } catch (error) {
        const delay = this.retryDelay(error, attempt);
        if (delay === null) throw error;
        await sleep(delay);
      }
    }
  }

  /** How long to wait before trying again after `error`, or null when it is not worth it. */
  private retryDelay(error: unknown, attempt: number, retryAfter?: string | null): number | null {
    if (attempt >= (this.options.retries ?? 0)) return null;
    const transient =
      error instanceof AgentApiError ? error.status === 0 || error.status === 503 : !(error instanceof TaskFailure);
    if (!transient) return null;
    const asked = Number(retryAfter);
    return Number.isFinite(asked) && asked > 0 ? asked * 1000 : Math.min(1000 * 2 ** attempt, 10_000);
  }

  /** Byte ranges of chunkSize, each checked (206, Content-Range, length), then the size and SHA-256 of the whole. */
  private async download(
    kind: ContentKind,
    id: number,
    metadata: Record<string, unknown>,
    saveTo: string | null,
  ): Promise<{ size: number; sha256: string }> {
    const size = Number(metadata.filesize);
    const expected = typeof metadata.sha256 === 'string' ? metadata.sha256.toLowerCase() : '';
    if (!Number.isSafeInteger(size) || size < 0) throw new TaskFailure(`the server gave no usable size for ${kind} ${id}`);
    if (!/^[0-9a-f]{64}$/.test(expected)) throw new TaskFailure(`the server gave no SHA-256 for ${kind} ${id}`);
    const chunk = this.options.chunkSize ?? DEFAULT_CHUNK;
    const hash = createHash('sha256');
    let out: WriteStream | null = null;
    if (saveTo) {
      await mkdir(dirname(saveTo), { recursive: true });
      out = createWriteStream(saveTo);
    }
    try {
      let offset = 0;
      let attempt = 0;
      for (;;) {
        const last = Math.min(offset + chunk, size) - 1;
        const range = size === 0 ? undefined : `bytes=${offset}-${last}`;
        let received = 0;
        let whole = false;
        let retryAfter: string | null = null;
        try {
          const response = await this.withSession((client) =>
            client.requestContent(kind, id, range === undefined ? {} : { range }),
          );
          retryAfter = response.headers.get('retry-after');
          if (!response.ok)
            throw await AgentApiError.fromResponse(
              `${(await this.options.session(false)).contentEndpoint(kind, id)}${range ? ` (Range ${range})` : ''}`,
              response,
            );
          whole = response.status === 200;
          if (!whole) {
            const contentRange = response.headers.get('content-range') ?? '';
            if (contentRange !== `bytes ${offset}-${last}/${size}`) {
              await response.body?.cancel();
              throw new TaskFailure(
                `${range} answered with Content-Range "${contentRange}", expected "bytes ${offset}-${last}/${size}"`,
              );
            }
          }
          for await (const piece of response.body ?? []) {
            const bytes = piece as Uint8Array;
            received += bytes.length;
            hash.update(bytes);
            if (out && !out.write(bytes)) await new Promise<void>((resolve) => out!.once('drain', () => resolve()));
          }
        } catch (error) {
          // What was hashed is kept: the next request resumes at the byte reached (not after a 200).
          const delay = whole && received > 0 ? null : this.retryDelay(error, attempt, retryAfter);
          if (delay === null) throw error;
          this.log(`policy: ${kind} ${id}: ${describe(error)}; resuming at byte ${offset + received} in ${delay} ms`);
          offset += received;
          attempt++;
          await sleep(delay);
          continue;
        }
        const wanted = whole ? size - offset : last - offset + 1;
        if (received !== wanted) throw new TaskFailure(`${range ?? 'the download'} gave ${received} bytes, expected ${wanted}`);
        offset += received;
        if (whole || offset >= size) break;
      }
      if (offset !== size) throw new TaskFailure(`downloaded ${offset} bytes, the server announced ${size}`);
      const sha256 = hash.digest('hex');
      if (sha256 !== expected) throw new TaskFailure(`SHA-256 mismatch: got ${sha256}, the server announced ${expected}`);
      return { size, sha256 };
    } catch (error) {
      if (out) {
        out.destroy();
        if (saveTo) await rm(saveTo, { force: true });
      }
      throw error;
    } finally {
      if (out && !out.destroyed) await new Promise<void>((resolve) => out!.end(() => resolve()));
    }
  }

  private async withSession<T>(work: (client: AgentApiClient) => Promise<T>): Promise<T> {
    try {
      return await work(await this.options.session(false));
    } catch (error) {
      if (!(error instanceof AgentApiError) || error.status !== 401) throw error;
      return work(await this.options.session(true));
    }
  }

  private storagePath(area: 'apps' | 'files', path: string): string | null {
    if (!this.options.storageDir) return null;
    const safe = path
      .replace(/%[A-Z_]+%/g, (token) => token.slice(1, -1).toLowerCase())
      .replace(/\.\.+/g, '_')
      .replace(/^\/+/, '');
    return join(this.options.storageDir, area, safe);
  }

  private emit(event: PolicyEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // a listener's problem is not the agent's
    }
  }
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') throw new TaskFailure(`the policy message has no ${field}`);
  return value;
}

function positiveId(value: unknown, field: string): number {
  const id = Number(value);
  if (!Number.isSafeInteger(id) || id < 1) throw new TaskFailure(`the policy message has no valid ${field}`);
  return id;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function describe(error: unknown): string {
  if (error instanceof AgentApiError) {
    return `download failed: ${error.status === 0 ? 'no response' : `HTTP ${error.status}`} ${error.code} ${error.serverMessage} (${error.endpoint})`;
  }
  return error instanceof Error ? error.message : String(error);
}
