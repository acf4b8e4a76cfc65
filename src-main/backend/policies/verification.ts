// Package installs verified by the device's own inventory. A task that says "done" only says what
// the agent believes; the inventory lists what Android has installed. Once a package task is done
// (or its package was downloaded), each inventory the device sends afterwards is searched for the
// package name and the version deployed, and the task shows "verified" or "not found in
// inventory" with that inventory's time.
//
// What the Flyve agents' inventory carries per application (org.flyve:inventory 1.4, used by the
// agent's releases): NAME (the label), COMMENTS (the package name), VERSION (the versionName),
// never the versionCode. The server read both the versionCode and the versionName from the same
// APK manifest when the package was uploaded, so the deployed version code is checked through its
// versionName; an inventory that reports the code itself (other agents) matches too.
import { nowIso } from '../db/database.ts';
import type { Sql } from '../db/sql.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { EventLog, RecordedEvent } from '../events/event-log.ts';
import type { FileStore } from '../files/store.ts';
import type { TaskVerification } from '../../../src-shared/contract/index.ts';
import { VerificationRepository, type CheckedTask, type PackageTask } from './verification-repository.ts';

/** The device's last inventory as the reports room keeps it (only what the check reads). */
export interface InventorySource {
  inventoryOf(
    agentId: number,
  ): Promise<{ applications: { name: string; version: string | null; package: string | null }[]; received_at: string } | null>;
}

export interface ExpectedPackage {
  packageName: string;
  versionCode: number | null;
  versionName: string | null;
}

/** Is the package in the inventory's applications, at the version deployed? */
export function checkInstalled(
  applications: { name: string; version: string | null; package: string | null }[],
  expected: ExpectedPackage,
): { result: 'verified' | 'not_found'; detail: string } {
  const { packageName, versionCode, versionName } = expected;
  const found = applications.filter((app) => app.package === packageName);
  const wanted = [versionName, versionCode === null ? null : String(versionCode)].filter(
    (v): v is string => v !== null && v !== '',
  );
  const code = versionCode === null ? '' : ` (version code ${versionCode})`;
  if (found.length === 0)
    return {
      result: 'not_found',
      detail: `${packageName} is not in the inventory (${applications.length} application${applications.length === 1 ? '' : 's'} listed)`,
    };
  if (wanted.length === 0)
    return { result: 'verified', detail: `${packageName} is installed (the server knows no version to compare)` };
  const match = found.find((app) => app.version !== null && wanted.includes(app.version));
  if (match)
    return {
      result: 'verified',
      detail: `${packageName} ${match.version} is installed${match.version === versionName ? code : ''}`,
    };
  const versions = [...new Set(found.map((app) => app.version ?? 'of unknown version'))].join(', ');
  return {
    result: 'not_found',
    detail: `${packageName} is installed at ${versions}, not ${versionName ?? versionCode}${versionName === null ? '' : code}`,
  };
}

/** Since when a task waits for an inventory: done (the agent says it installed), or downloaded and still open. */
function checkableSince(task: Pick<CheckedTask, 'status' | 'downloaded_at' | 'done_at'>): string | null {
  if (task.status === 'done') return task.done_at ?? task.downloaded_at;
  if (['pending', 'received', 'in progress', 'waiting'].includes(task.status)) return task.downloaded_at;
  return null;
}

/** What a task shows: null when it is not checked (not done, failed, canceled…); else its latest check since then. */
export function verificationOf(task: CheckedTask): TaskVerification | null {
  const since = checkableSince(task);
  if (since === null) return null;
  if (task.result !== null && task.inventory_at !== null && task.inventory_at >= since)
    return { state: task.result, detail: task.detail ?? '', inventory_at: task.inventory_at };
  return {
    state: 'awaiting_inventory',
    detail: "waiting for the device's next inventory (ask for one: Inventory command)",
    inventory_at: null,
  };
}

export class InstallVerification {
  private readonly repo: VerificationRepository;
  private readonly events: EventLog;
  private readonly work: UnitOfWork;
  private readonly files: Pick<FileStore, 'get'>;
  private readonly inventories: InventorySource;
  private readonly unsubscribe: () => void;

  constructor(deps: {
    db: Sql;
    events: EventLog;
    work: UnitOfWork;
    files: Pick<FileStore, 'get'>;
    inventories: InventorySource;
  }) {
    this.repo = new VerificationRepository(deps.db);
    this.events = deps.events;
    this.work = deps.work;
    this.files = deps.files;
    this.inventories = deps.inventories;
    this.unsubscribe = this.events.subscribe((event) => this.onEvent(event));
  }

  close(): void {
    this.unsubscribe();
  }

  /** Checks the device's package tasks against its last inventory; returns how many were checked. */
  async verifyAgent(agentId: number): Promise<number> {
    const inventory = await this.inventories.inventoryOf(agentId);
    if (!inventory) return 0;
    const tasks = (await this.repo.candidates(agentId)).filter((task) => {
      const since = checkableSince(task);
      return since !== null && inventory.received_at >= since;
    });
    if (tasks.length === 0) return 0;
    const at = nowIso();
    await this.work.run(async () => {
      for (const task of tasks) {
        const { result, detail } = checkInstalled(inventory.applications, await this.expected(task));
        await this.repo.save(task.task_id, result, detail, inventory.received_at, at);
        await this.events.record(
          'task.verified',
          `${task.agent_name}: deployApp "${task.item_name}" ${result === 'verified' ? 'verified by the inventory' : 'not found in the inventory'}: ${detail}`,
          { agentId, entityId: task.entity_id },
          {
            deployment_id: task.deployment_id,
            task_id: task.task_id,
            result,
            inventory_at: inventory.received_at,
            fleet_id: task.fleet_id,
          },
        );
      }
    });
    return tasks.length;
  }

  /** The tasks of a deployment (or a device) with their verification, by task id; only package tasks appear. */
  async ofDeployment(deploymentId: number): Promise<Map<number, TaskVerification | null>> {
    return new Map((await this.repo.ofDeployment(deploymentId)).map((task) => [task.task_id, verificationOf(task)]));
  }

  async ofAgent(agentId: number): Promise<Map<number, TaskVerification | null>> {
    return new Map((await this.repo.ofAgent(agentId)).map((task) => [task.task_id, verificationOf(task)]));
  }

  /** What was deployed: the package name and version code of the message, the versionName of the package kept. */
  private async expected(task: PackageTask): Promise<ExpectedPackage> {
    const message = JSON.parse(task.payload) as { deployApp?: unknown; versionCode?: unknown };
    const item = task.item_id === null ? undefined : await this.files.get('package', task.item_id);
    const code = Number(message.versionCode);
    const versionCode = Number.isSafeInteger(code) && code > 0 ? code : (item?.packageInfo.versionCode ?? null);
    return {
      packageName: String(message.deployApp ?? ''),
      versionCode,
      versionName: item?.packageInfo.versionName ?? null,
    };
  }

  private async onEvent(event: RecordedEvent): Promise<void> {
    if (event.type !== 'agent.inventory' || event.agent_id === null) return;
    try {
      await this.verifyAgent(event.agent_id);
    } catch (error) {
      await this.events.record(
        'deployment.error',
        `Installs could not be checked against the inventory: ${error instanceof Error ? error.message : String(error)}`,
        { agentId: event.agent_id },
      );
    }
  }
}
