/**
 * The APK reader's worker thread: opens the uploaded file, reads only the entries a description
 * needs (AndroidManifest.xml, then resources.arsc and one icon when the manifest points there),
 * each bounded, and posts one message: `{ ok: true, info }` or `{ ok: false, reason }`.
 * It runs with the heap limit and under the time limit its parent (apk-manifest.ts) sets.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ApkFormatError, integerValue, readManifest, ResourceTable, TYPE_REFERENCE, TYPE_STRING } from './android-binary.ts';
import type { ResourceValue, TypedValue } from './android-binary.ts';
import { ZipError, ZipFile } from './zip-reader.ts';

export interface ApkWorkerInput {
  path: string;
  maxManifestBytes: number;
  maxResourcesBytes: number;
  maxIconBytes: number;
  maxCentralDirectoryBytes: number;
  maxEntries: number;
}

export interface ApkFacts {
  packageName: string;
  versionCode: number | null;
  versionName: string | null;
  label: string | null;
  icon: string | null;
}

export type ApkWorkerResult = { ok: true; info: ApkFacts } | { ok: false; reason: string };

const PACKAGE_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function clean(text: string | null, max: number): string | null {
  const value = text?.replace(/\p{Cc}/gu, '').trim();
  return value ? value.slice(0, max) : null;
}

function read(input: ApkWorkerInput): ApkFacts {
  const zip = new ZipFile(input.path, input);
  try {
    const manifestBytes = zip.readEntry('AndroidManifest.xml', input.maxManifestBytes);
    if (!manifestBytes) throw new ZipError('it has no AndroidManifest.xml');
    const manifest = readManifest(manifestBytes);
    const packageName = manifest.packageName?.trim() ?? '';
    if (!packageName) throw new ApkFormatError('the manifest names no package');
    if (packageName.length > 255 || !PACKAGE_NAME.test(packageName)) {
      throw new ApkFormatError(`the manifest's package name "${packageName.slice(0, 80)}" is not a valid Android package name`);
    }

    // The label, icon and (rarely) the version name may point into the resource table. Nothing
    // there is required: a table that cannot be read leaves them unknown.
    let table: ResourceTable | null | undefined;
    const resources = (): ResourceTable | null => {
      if (table !== undefined) return table;
      try {
        const bytes = zip.readEntry('resources.arsc', input.maxResourcesBytes);
        table = bytes ? new ResourceTable(bytes) : null;
      } catch (error) {
        if (!(error instanceof ZipError || error instanceof ApkFormatError)) throw error;
        table = null;
      }
      return table;
    };
    const resolved = (value: TypedValue | null): ResourceValue[] => {
      if (!value || value.type !== TYPE_REFERENCE || value.data === 0) return [];
      try {
        return resources()?.resolve(value.data) ?? [];
      } catch (error) {
        if (!(error instanceof ApkFormatError)) throw error;
        return [];
      }
    };
    const text = (value: TypedValue | null): string | null => {
      if (!value) return null;
      if (value.type === TYPE_STRING) return value.raw;
      const strings = resolved(value).filter((v) => v.type === TYPE_STRING && v.string !== null);
      // The default configuration's string, else the first one (another language).
      return (strings.find((v) => v.language === '') ?? strings[0])?.string ?? null;
    };

    let icon: string | null = null;
    const pngs = resolved(manifest.icon)
      .filter((v) => v.type === TYPE_STRING && v.string?.toLowerCase().endsWith('.png'))
      .sort((a, b) => b.density - a.density);
    for (const candidate of pngs) {
      try {
        const bytes = zip.readEntry(candidate.string!, input.maxIconBytes);
        if (bytes && bytes.subarray(0, 8).equals(PNG_SIGNATURE)) {
          icon = `data:image/png;base64,${bytes.toString('base64')}`;
          break;
        }
      } catch (error) {
        if (!(error instanceof ZipError)) throw error; // too big or damaged: try a smaller density
      }
    }

    return {
      packageName,
      versionCode: integerValue(manifest.versionCode),
      versionName: clean(text(manifest.versionName), 100),
      label: clean(text(manifest.label), 255),
      icon,
    };
  } finally {
    zip.close();
  }
}

function run(input: ApkWorkerInput): ApkWorkerResult {
  try {
    return { ok: true, info: read(input) };
  } catch (error) {
    if (error instanceof ZipError || error instanceof ApkFormatError) return { ok: false, reason: error.message };
    if (error instanceof RangeError) return { ok: false, reason: 'it is malformed (an offset or length is out of range)' };
    const code = (error as { code?: string }).code;
    return { ok: false, reason: code ? `the file could not be read (${code})` : 'it is malformed' };
  }
}

parentPort?.postMessage(run(workerData as ApkWorkerInput));
