// What "verified by the inventory" compares: the package name and the version deployed against the
// applications of an inventory as the Flyve agents write them (COMMENTS = package, VERSION = versionName).
import { describe, expect, it } from 'vitest';
import { parseInventory } from '../../../src-main/backend/inventory/fusion-inventory.ts';
import { checkInstalled, verificationOf } from '../../../src-main/backend/policies/verification.ts';

const expected = { packageName: 'org.example.fieldapp', versionCode: 42, versionName: '4.2.0' };

describe('checkInstalled', () => {
  it('finds the package at the version deployed, by its versionName or its version code', () => {
    expect(checkInstalled([{ name: 'Field', package: 'org.example.fieldapp', version: '4.2.0' }], expected)).toEqual({
      result: 'verified',
      detail: 'org.example.fieldapp 4.2.0 is installed (version code 42)',
    });
    expect(checkInstalled([{ name: 'Field', package: 'org.example.fieldapp', version: '42' }], expected).result).toBe('verified');
  });

  it('says what is there instead: another version, or nothing', () => {
    expect(checkInstalled([{ name: 'Field', package: 'org.example.fieldapp', version: '4.1.0' }], expected)).toEqual({
      result: 'not_found',
      detail: 'org.example.fieldapp is installed at 4.1.0, not 4.2.0 (version code 42)',
    });
    expect(checkInstalled([{ name: 'Chrome', package: 'com.android.chrome', version: '119' }], expected)).toEqual({
      result: 'not_found',
      detail: 'org.example.fieldapp is not in the inventory (1 application listed)',
    });
    // A name is not a package: an app labelled like the package does not count.
    expect(checkInstalled([{ name: 'org.example.fieldapp', package: null, version: '4.2.0' }], expected).result).toBe(
      'not_found',
    );
  });

  it('with no version known to the server, the package name alone decides', () => {
    const loose = { packageName: 'com.example.tool', versionCode: null, versionName: null };
    expect(checkInstalled([{ name: 'Tool', package: 'com.example.tool', version: '1' }], loose)).toEqual({
      result: 'verified',
      detail: 'com.example.tool is installed (the server knows no version to compare)',
    });
  });
});

describe('verificationOf', () => {
  const base = {
    task_id: 1,
    downloaded_at: null,
    done_at: '2026-01-01T10:00:00.000Z',
    result: null,
    detail: null,
    inventory_at: null,
  };
  it('waits for an inventory received after the task was done; an earlier check does not count', () => {
    expect(verificationOf({ ...base, status: 'done' })?.state).toBe('awaiting_inventory');
    const earlier = {
      ...base,
      status: 'done' as const,
      result: 'not_found' as const,
      detail: 'x',
      inventory_at: '2026-01-01T09:59:59.000Z',
    };
    expect(verificationOf(earlier)?.state).toBe('awaiting_inventory');
    expect(verificationOf({ ...earlier, inventory_at: '2026-01-01T10:00:01.000Z' })).toEqual({
      state: 'not_found',
      detail: 'x',
      inventory_at: '2026-01-01T10:00:01.000Z',
    });
  });

  it('checks an open task once its package was downloaded; never a failed, canceled or pending one', () => {
    expect(verificationOf({ ...base, status: 'in progress', downloaded_at: '2026-01-01T09:00:00.000Z' })?.state).toBe(
      'awaiting_inventory',
    );
    for (const status of ['pending', 'failed', 'canceled', 'incompatible'] as const)
      expect(verificationOf({ ...base, status })).toBeNull();
  });
});

describe('parseInventory, applications', () => {
  it('reads the package name from COMMENTS, as the Flyve agents write it (NAME is the label)', () => {
    const software = (fields: Record<string, string>) =>
      `<SOFTWARES>${Object.entries(fields)
        .map(([k, v]) => `<${k}>${v}</${k}>`)
        .join('')}</SOFTWARES>`;
    const xml = `<?xml version="1.0"?><REQUEST><CONTENT>
      ${software({ NAME: 'Field App', COMMENTS: 'org.example.fieldapp', VERSION: '4.2.0', FROM: 'Android', INSTALLDATE: '26/11/2026', FOLDER: '/data/app', NO_REMOVE: 'false', USERID: '0' })}
      ${software({ NAME: 'Unknown', COMMENTS: 'N/A', VERSION: 'N/A' })}
      ${software({ NAME: 'Other agent', FILENAME: 'com.example.other', VERSION: '2' })}
    </CONTENT><QUERY>INVENTORY</QUERY></REQUEST>`;
    expect(parseInventory(xml).applications).toEqual([
      { name: 'Field App', version: '4.2.0', package: 'org.example.fieldapp' },
      { name: 'Other agent', version: '2', package: 'com.example.other' },
      { name: 'Unknown', version: 'N/A', package: null },
    ]);
  });
});
