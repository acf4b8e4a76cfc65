// `package add` and `file add` of the CLI against a running backend: an APK whose manifest cannot
// be read is refused with the reason and what to do, or kept as the package the admin describes;
// an APK given to `file add` is pointed to `package add` unless --as-file.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { zeroSizeChunkApk } from '../../helpers/hostile-apk.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../src-main/cli/main.ts', import.meta.url));
const APK = fileURLToPath(new URL('../../fixtures/field-app.apk', import.meta.url));

let t: TestBackend;
let dir: string;
let crafted: string;

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--data-dir', t.dataDir], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  t = await startTestBackend();
  dir = mkdtempSync(join(tmpdir(), 'mdm-cli-apk-'));
  crafted = join(dir, 'crafted.apk');
  writeFileSync(crafted, zeroSizeChunkApk());
});
afterAll(async () => {
  await t.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('mdm-console package add / file add with APKs', () => {
  it('an unreadable APK is refused with the reason and the way to keep it; nothing is stored', async () => {
    const refused = await cli('package', 'add', crafted);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("this APK's manifest could not be read: AndroidManifest.xml: a chunk at byte 8");
    expect(refused.stderr).toContain('--if-unreadable keep --package-name NAME --version-code N');
    expect((await t.admin('GET', '/packages')).body).toEqual([]);
  });

  it('--if-unreadable keep stores it as the package described, and needs the name and version code', async () => {
    const incomplete = await cli('package', 'add', crafted, '--if-unreadable', 'keep', '--package-name', 'org.example.kept');
    expect(incomplete.code).toBe(2);
    expect(incomplete.stderr).toContain('--if-unreadable keep needs --package-name and --version-code');
    const wrong = await cli('package', 'add', crafted, '--if-unreadable', 'maybe');
    expect(wrong.stderr).toContain('--if-unreadable is keep or refuse');

    const kept = await cli(
      'package',
      'add',
      crafted,
      '--if-unreadable',
      'keep',
      '--package-name',
      'org.example.kept',
      '--version-code',
      '3',
    );
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toMatch(/Package #\d+ "crafted.apk" added \(152 bytes, org.example.kept \(code 3\), sha256/);
  });

  it('a readable APK says what its manifest says', async () => {
    const added = await cli('package', 'add', APK);
    expect(added.stdout).toMatch(/Package #\d+ "field-app.apk" added \(\d+ bytes, org.example.fieldapp 4.2.0 \(code 42\)/);
  });

  it('file add with an APK points to package add, unless --as-file', async () => {
    const pointed = await cli('file', 'add', APK);
    expect(pointed.code).toBe(2);
    expect(pointed.stderr).toContain('field-app.apk is an Android app (APK): add it as a package');
    expect(pointed.stderr).toContain(`mdm-console package add ${APK}`);
    expect((await t.admin('GET', '/files')).body).toEqual([]);
    const asFile = await cli('file', 'add', APK, '--as-file');
    expect(asFile.stdout).toMatch(/File #\d+ "field-app.apk" added/);
  });
});
