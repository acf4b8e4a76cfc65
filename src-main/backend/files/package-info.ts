import { extname } from 'node:path';
import { ApiError, badRequest } from '../errors.ts';
import type { ApkReader } from './apk-manifest.ts';
import type { PackageInfo } from './store.ts';

export const APK_MIME_TYPE = 'application/vnd.android.package-archive';

/** What to do with an APK whose manifest cannot be read: refuse the upload (the default) or keep it as described by the admin. */
export type IfUnreadable = 'refuse' | 'keep';

export interface GivenPackageInfo {
  packageName?: string | undefined;
  versionCode?: number | undefined;
  versionName?: string | undefined;
  ifUnreadable?: IfUnreadable | undefined;
}

/** An upload is read as an APK when its name ends in .apk or its declared type is an APK's. */
export function isApk(name: string, mimeType: string | undefined): boolean {
  return extname(name).toLowerCase() === '.apk' || mimeType?.trim().toLowerCase() === APK_MIME_TYPE;
}

/** Checked before a byte is read: keeping an unreadable APK needs the admin's description of it. */
export function checkGiven(given: GivenPackageInfo): void {
  if (given.ifUnreadable === 'keep' && (given.packageName === undefined || given.versionCode === undefined)) {
    throw badRequest(
      'if_unreadable=keep needs package_name and version_code: they describe the package when its manifest cannot be read',
    );
  }
}

/**
 * The description of a package being stored (its content at `path`, not yet listed). An APK's
 * manifest gives its package name, versions, label and icon, and what the admin gave fills what
 * the manifest lacks; other package types take what the admin gave. An APK whose manifest
 * cannot be read is refused (422 ERROR_APK_UNREADABLE, nothing stored) unless the admin chose
 * to keep it (`ifUnreadable: 'keep'`), described by what they gave.
 */
export async function describePackage(
  reader: ApkReader,
  path: string,
  upload: { name: string; mimeType: string | undefined },
  given: GivenPackageInfo,
): Promise<Partial<PackageInfo>> {
  const fromAdmin: Partial<PackageInfo> = {
    packageName: given.packageName,
    versionCode: given.versionCode,
    versionName: given.versionName,
  };
  if (!isApk(upload.name, upload.mimeType)) return fromAdmin;
  const read = await reader.read(path);
  if (!read.ok) {
    if (given.ifUnreadable === 'keep') return fromAdmin;
    throw new ApiError(422, 'ERROR_APK_UNREADABLE', `this APK's manifest could not be read: ${read.reason}`);
  }
  const manifest = read.info;
  return {
    packageName: manifest.packageName,
    versionCode: manifest.versionCode ?? given.versionCode,
    versionName: manifest.versionName ?? given.versionName,
    label: manifest.label,
    icon: manifest.icon,
  };
}
