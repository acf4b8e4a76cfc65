import { readApkManifest } from './apk-manifest.ts';
import type { FileStore, PackageInfo, StoredRecord } from './store.ts';

/**
 * A package just stored: an APK's manifest gives its package name, versions, label and icon;
 * what the admin gave fills what the manifest lacks (other package types have no manifest we read).
 */
export async function describePackage(
  store: FileStore,
  item: StoredRecord,
  given: { packageName?: string | undefined; versionCode?: number | undefined; versionName?: string | undefined },
): Promise<StoredRecord> {
  const fromManifest: Partial<PackageInfo> = (await readApkManifest(store.pathOf(item))) ?? {};
  const info: Partial<PackageInfo> = {
    ...fromManifest,
    packageName: fromManifest.packageName ?? given.packageName,
    versionCode: fromManifest.versionCode ?? given.versionCode,
    versionName: fromManifest.versionName ?? given.versionName,
  };
  if (Object.values(info).every((value) => value === undefined || value === null)) return item;
  return store.setPackageInfo(item.id, info) ?? item;
}
