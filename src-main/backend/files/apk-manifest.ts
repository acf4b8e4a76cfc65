/**
 * What an uploaded APK says about itself: package name, version code and name, label and icon,
 * read with app-info-parser (a maintained parser of Android's binary XML and resource table).
 */
import { createRequire } from 'node:module';
import type { PackageInfo } from './store.ts';

interface ParsedApk {
  package?: unknown;
  versionCode?: unknown;
  versionName?: unknown;
  application?: { label?: unknown };
  icon?: unknown;
}
type ApkParserClass = new (path: string) => { parse(): Promise<ParsedApk> };

const require = createRequire(import.meta.url);
let parserClass: ApkParserClass | null = null;
const loadParser = (): ApkParserClass => (parserClass ??= require('app-info-parser/src/apk.js') as ApkParserClass);

/** The label of a resource table may come back as a list of per-configuration values. */
function firstText(value: unknown): string | null {
  const text = Array.isArray(value) ? value.find((entry) => typeof entry === 'string') : value;
  if (typeof text !== 'string') return null;
  // The parser reads UTF-16 resource strings byte by byte, leaving NULs between the characters.
  // eslint-disable-next-line no-control-regex -- NUL is what is taken out
  const clean = text.replace(/\u0000/g, '').trim();
  return clean === '' || clean.startsWith('resourceId:') ? null : clean.slice(0, 255);
}

/** The manifest's facts, or null when the file is not a readable APK (then the admin gives them). */
export async function readApkManifest(path: string): Promise<PackageInfo | null> {
  let parsed: ParsedApk;
  try {
    parsed = await new (loadParser())(path).parse();
  } catch {
    return null;
  }
  const packageName = typeof parsed.package === 'string' && parsed.package !== '' ? parsed.package : null;
  if (!packageName) return null;
  const versionCode = Number(parsed.versionCode);
  const icon =
    typeof parsed.icon === 'string' && parsed.icon.startsWith('data:image/') && parsed.icon.length <= 512 * 1024
      ? parsed.icon
      : null;
  return {
    packageName,
    versionCode: Number.isSafeInteger(versionCode) && versionCode >= 0 ? versionCode : null,
    versionName: typeof parsed.versionName === 'string' ? parsed.versionName.slice(0, 100) : null,
    label: firstText(parsed.application?.label),
    icon,
  };
}
