import { POLICIES, TASK_STATUSES, type PolicyName, type TaskStatus } from '../../../src-shared/contract/index.ts';

// The reference's policy messages (glpi-plugin policydeploy*/policyremove*): what each deployment
// publishes, retained, on `<fleet or agent topic>/Policy/<policy>/Task/<taskId>`.

/** The policies, and every status a task can have (agents report all but pending): the contract's. */
export { POLICIES, TASK_STATUSES, type PolicyName, type TaskStatus };

/** A task in one of these still expects the device to act. */
export const OPEN_STATUSES: readonly TaskStatus[] = ['pending', 'received', 'in progress', 'waiting'];

export const isTaskStatus = (value: unknown): value is TaskStatus =>
  typeof value === 'string' && (TASK_STATUSES as readonly string[]).includes(value);

export const policyTopic = (notifiableTopic: string, policy: string, taskId: number): string =>
  `${notifiableTopic}/Policy/${policy}/Task/${taskId}`;

export interface PolicyValue {
  policy: PolicyName;
  /** deployApp/removeApp: the Android package name; deployFile: the destination; removeFile: the path. */
  value: string;
  /** The package or file id (deploy policies). */
  itemId?: number;
  /** deployApp: the package's version code; deployFile: the file's version. */
  version?: number | null;
}

/** The JSON the device receives, taskId included. */
export function policyMessage(value: PolicyValue, taskId: number): Record<string, unknown> {
  switch (value.policy) {
    case 'deployApp':
      return { deployApp: value.value, id: value.itemId, versionCode: value.version ?? 0, taskId };
    case 'deployFile':
      return { deployFile: value.value, id: value.itemId, version: value.version ?? 1, taskId };
    case 'removeApp':
      return { removeApp: value.value, taskId };
    case 'removeFile':
      return { removeFile: value.value, taskId };
  }
}

/** Where a deployed file lands on the device: the destination folder and the file's name. */
export function deployedFilePath(destination: string, fileName: string): string {
  return destination.endsWith('/') ? `${destination}${fileName}` : `${destination}/${fileName}`;
}
