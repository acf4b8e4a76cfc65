import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { keychainProtector, SecretStore, type OsSecretStorage } from '../../../src-main/backend/mail/secrets.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';

/**
 * Electron's safeStorage cannot run here (no Electron, no keychain): this object stands in for
 * exactly that part, a reversible encryption that leaves no plain text, as the OS keychain does.
 */
function fakeSafeStorage(options: { available?: boolean; backend?: string } = {}): OsSecretStorage {
  return {
    isEncryptionAvailable: () => options.available ?? true,
    encryptString: (plain) =>
      Buffer.concat([Buffer.from('v10'), Buffer.from([...Buffer.from(plain)].map((byte) => byte ^ 0xa5))]),
    decryptString: (data) => {
      if (data.subarray(0, 3).toString() !== 'v10') throw new Error('not encrypted by this keychain');
      return Buffer.from([...data.subarray(3)].map((byte) => byte ^ 0xa5)).toString();
    },
    getSelectedStorageBackend: () => options.backend ?? 'gnome_libsecret',
  };
}

const PASSWORD = 'keychain-only-p4ss';

describe('the desktop shell keeps the SMTP password in the OS keychain', () => {
  let dir: string;
  let t: TestBackend | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores it encrypted (no plain text on disk, still 0600) and reads it back', () => {
    dir = mkdtempSync(join(tmpdir(), 'mdm-keychain-'));
    const protector = keychainProtector(fakeSafeStorage(), 'linux')!;
    expect(protector.kind).toBe('os-safe-storage');
    const store = new SecretStore(dir, protector);
    store.set('smtp_password', PASSWORD);
    const onDisk = readFileSync(store.file, 'utf8');
    expect(onDisk).not.toContain(PASSWORD);
    expect(JSON.parse(onDisk).protection).toBe('os-safe-storage');
    expect(statSync(store.file).mode & 0o777).toBe(0o600);
    expect(new SecretStore(dir, keychainProtector(fakeSafeStorage(), 'linux')).get('smtp_password')).toBe(PASSWORD);
    // Headless (the CLI on the same data dir) cannot decrypt it, and says so.
    expect(new SecretStore(dir).isUnreadable('smtp_password')).toBe(true);
  });

  it('takes over a password kept as plain text before, encrypting it', () => {
    dir = mkdtempSync(join(tmpdir(), 'mdm-keychain-'));
    new SecretStore(dir).set('smtp_password', PASSWORD);
    expect(readFileSync(join(dir, 'secrets.json'), 'utf8')).toContain(PASSWORD);
    expect(new SecretStore(dir, keychainProtector(fakeSafeStorage(), 'linux')).get('smtp_password')).toBe(PASSWORD);
    expect(readFileSync(join(dir, 'secrets.json'), 'utf8')).not.toContain(PASSWORD);
    expect(new SecretStore(dir, keychainProtector(fakeSafeStorage(), 'linux')).get('smtp_password')).toBe(PASSWORD);
  });

  it('falls back to the 0600 file without a keychain, or with only a built-in key on Linux', () => {
    dir = mkdtempSync(join(tmpdir(), 'mdm-keychain-'));
    expect(keychainProtector(fakeSafeStorage({ available: false }), 'darwin')).toBeUndefined();
    expect(keychainProtector(fakeSafeStorage({ backend: 'basic_text' }), 'linux')).toBeUndefined();
    expect(keychainProtector(fakeSafeStorage({ backend: 'kwallet6' }), 'linux')?.kind).toBe('os-safe-storage');
    expect(keychainProtector(fakeSafeStorage(), 'darwin')?.kind).toBe('os-safe-storage');
  });

  it('a backend started with the protector keeps a password set through the admin API encrypted', async () => {
    dir = mkdtempSync(join(tmpdir(), 'mdm-keychain-'));
    t = await startTestBackend({ dataDir: dir, secretProtector: keychainProtector(fakeSafeStorage(), 'linux') });
    const put = await t.admin('PUT', '/mail/settings', {
      smtp_url: `smtp://mailer%40corp.example:${PASSWORD}@smtp.example.com:2525`,
    });
    expect(put.status).toBe(200);
    expect(put.body.secret_storage).toBe('os-safe-storage');
    expect(put.body.smtp_password_set).toBe(true);
    expect(readFileSync(join(dir, 'secrets.json'), 'utf8')).not.toContain(PASSWORD);
    expect(new SecretStore(dir, keychainProtector(fakeSafeStorage(), 'linux')).get('smtp_password')).toBe(PASSWORD);
  });

  it('a file of another protector is not misread as plain text', () => {
    dir = mkdtempSync(join(tmpdir(), 'mdm-keychain-'));
    writeFileSync(
      join(dir, 'secrets.json'),
      JSON.stringify({ version: 1, protection: 'os-safe-storage', values: { smtp_password: 'bm90LWVuY3J5cHRlZA==' } }),
      { mode: 0o600 },
    );
    const store = new SecretStore(dir, keychainProtector(fakeSafeStorage(), 'linux'));
    expect(store.has('smtp_password')).toBe(false);
    expect(store.isUnreadable('smtp_password')).toBe(true);
  });
});
