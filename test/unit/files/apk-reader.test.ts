// The APK reader on real files in real worker threads: what it reads from a real APK, its time
// limit, its stop, and the binary parsers against thousands of damaged manifests and tables.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ApkFormatError, readManifest, ResourceTable } from '../../../src-main/backend/files/android-binary.ts';
import { ApkReader } from '../../../src-main/backend/files/apk-manifest.ts';
import { ZipFile } from '../../../src-main/backend/files/zip-reader.ts';
import { stored, underDeclaredApk, zip, zipBombApk } from '../../helpers/hostile-apk.ts';

const FIELD_APP = fileURLToPath(new URL('../../fixtures/field-app.apk', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mdm-apk-reader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('ApkReader', () => {
  it("reads a real APK's package, versions, label and icon", async () => {
    const result = await new ApkReader().read(FIELD_APP);
    expect(result).toMatchObject({
      ok: true,
      info: { packageName: 'org.example.fieldapp', versionCode: 42, versionName: '4.2.0', label: 'Field App' },
    });
    expect(result.ok && result.info.icon).toMatch(/^data:image\/png;base64,/);
  });

  it('stops a read that outlives its time limit', async () => {
    // A worker cannot even start within a millisecond: the limit always strikes first.
    const result = await new ApkReader({ timeoutMs: 1 }).read(FIELD_APP);
    expect(result).toEqual({ ok: false, reason: 'reading it took longer than 0.001 s' });
  });

  it('close() ends the reads under way and those waiting their turn', async () => {
    const reader = new ApkReader({ concurrency: 1 });
    const reads = [reader.read(FIELD_APP), reader.read(FIELD_APP), reader.read(FIELD_APP)];
    await reader.close();
    for (const result of await Promise.all(reads)) expect(result).toEqual({ ok: false, reason: 'the server is stopping' });
  });

  it('refuses the bomb and the liar without inflating them', async () => {
    const reader = new ApkReader();
    expect(await reader.read(file('bomb.apk', zipBombApk()))).toEqual({
      ok: false,
      reason: 'AndroidManifest.xml declares 1073741824 bytes, more than the 8388608 bytes accepted',
    });
    expect(await reader.read(file('liar.apk', underDeclaredApk()))).toEqual({
      ok: false,
      reason: 'AndroidManifest.xml inflates to more than the 16 bytes it declares',
    });
  });
});

/** mulberry32 */
function prng(seed: number) {
  let a = seed >>> 0;
  return (n: number) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

describe('the binary parsers against damaged input', () => {
  const apk = new ZipFile(FIELD_APP, { maxCentralDirectoryBytes: 1 << 20, maxEntries: 100 });
  const manifest = apk.readEntry('AndroidManifest.xml', 1 << 20)!;
  const table = apk.readEntry('resources.arsc', 1 << 20)!;
  apk.close();

  it('every damaged manifest or table is read or refused, never looped on (5,000 seeded mutations)', () => {
    const random = prng(0x19_0001);
    for (let round = 0; round < 5000; round++) {
      const source = round % 2 === 0 ? manifest : table;
      const damaged = Buffer.from(source);
      for (let flips = 1 + random(8); flips > 0; flips--) {
        const at = random(damaged.length);
        // sizes and offsets are where it hurts: write 0, a byte, or a large number
        const kind = random(3);
        if (kind === 0) damaged[at] = 0;
        else if (kind === 1) damaged[at] = random(256);
        else if (at + 4 <= damaged.length) damaged.writeUInt32LE(random(2) ? 0xffffffff : random(1 << 16), at);
      }
      const cut = random(4) === 0 ? damaged.subarray(0, random(damaged.length)) : damaged;
      try {
        if (source === manifest) readManifest(cut);
        else {
          const resources = new ResourceTable(cut);
          resources.resolve(0x7f020000);
          resources.resolve(0x7f030000);
        }
      } catch (error) {
        // refused: a clear error, or a bounds check of Buffer (the worker reports it as malformed)
        if (!(error instanceof ApkFormatError || error instanceof RangeError)) throw error;
      }
    }
  });

  it('a zip whose central directory, local header or data lies is refused with a reason', async () => {
    const reader = new ApkReader();
    const good = zip([stored('AndroidManifest.xml', manifest)]);
    expect(await reader.read(file('good.apk', good))).toMatchObject({ ok: true, info: { packageName: 'org.example.fieldapp' } });
    const cases: Array<[string, (b: Buffer) => void, RegExp]> = [
      ['cd offset', (b) => b.writeUInt32LE(0xfffffff0, b.length - 6), /ZIP64|outside the file/],
      ['local offset', (b) => b.writeUInt32LE(1 << 20, b.length - 22 - 46 - 19 + 42), /zip structure|local header/],
      ['central crc', (b) => b.writeUInt32LE(0x12345678, b.length - 22 - 46 - 19 + 16), /fails its CRC-32 check/],
    ];
    for (const [label, damage, reason] of cases) {
      const copy = Buffer.from(good);
      damage(copy);
      const result = await reader.read(file(`${label}.apk`, copy));
      expect(result.ok, label).toBe(false);
      expect(!result.ok && result.reason, label).toMatch(reason);
    }
    const twice = zip([stored('AndroidManifest.xml', manifest), stored('AndroidManifest.xml', manifest)]);
    expect(await reader.read(file('twice.apk', twice))).toEqual({
      ok: false,
      reason: 'AndroidManifest.xml is listed more than once',
    });
    expect(await reader.read(file('none.apk', zip([stored('classes.dex', Buffer.from('dex'))])))).toEqual({
      ok: false,
      reason: 'it has no AndroidManifest.xml',
    });
  });
});
