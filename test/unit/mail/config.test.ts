import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_MAIL_SETTINGS } from '../../../src-main/backend/settings/mail-settings.ts';
import { osSecretProtector, SecretStore, type SecretProtector } from '../../../src-main/backend/mail/secrets.ts';
import {
  parseSmtpUrl,
  redactSmtpUrl,
  resolveMailTarget,
  SmtpUrlError,
  transportOptions,
} from '../../../src-main/backend/mail/smtp-config.ts';

describe('SMTP URLs', () => {
  it('reads user, password (percent-decoded), host, port and the security mode', () => {
    expect(parseSmtpUrl('smtp://me%40corp.example:p%3Ass%40w@mail.example.com:2525')).toEqual({
      host: 'mail.example.com',
      port: 2525,
      security: 'auto',
      user: 'me@corp.example',
      password: 'p:ss@w',
      rejectUnauthorized: true,
    });
    expect(parseSmtpUrl('smtps://mail.example.com')).toMatchObject({ security: 'tls', port: 0, user: '' });
    expect(parseSmtpUrl('smtp://h?security=starttls&reject_unauthorized=false')).toMatchObject({
      security: 'starttls',
      rejectUnauthorized: false,
    });
    expect(parseSmtpUrl('smtp://[::1]:25').host).toBe('::1');
  });

  it('refuses what is not an SMTP URL, without echoing the password', () => {
    expect(() => parseSmtpUrl('http://x')).toThrow(SmtpUrlError);
    expect(() => parseSmtpUrl('smtp://h?security=maybe')).toThrow(/security must be one of/);
    for (const bad of ['not a url :secret@', 'smtp://user:secret@host:99999']) {
      expect(() => parseSmtpUrl(bad)).toThrow(SmtpUrlError);
      expect(() => parseSmtpUrl(bad)).not.toThrow(/secret/);
    }
    expect(redactSmtpUrl('smtp://u:hunter2@h:25')).toBe('smtp://u:****@h:25');
  });

  it('lets the command line win over the settings, and falls back to the outbox', () => {
    const settings = {
      ...DEFAULT_MAIL_SETTINGS,
      smtp_host: 'from-settings',
      smtp_user: 'u',
      mail_from_address: 'it@example.com',
      mail_from_name: 'IT, Inc.',
    };
    const fromSettings = resolveMailTarget(settings, 'pw', {});
    expect(fromSettings).toMatchObject({
      kind: 'smtp',
      source: 'settings',
      smtp: { host: 'from-settings', password: 'pw' },
      from: '"IT, Inc." <it@example.com>',
    });
    expect(resolveMailTarget(settings, 'pw', { smtpUrl: 'smtp://cli:25', mailFrom: 'X <x@example.com>' })).toMatchObject({
      kind: 'smtp',
      source: 'command line',
      smtp: { host: 'cli', port: 25 },
      from: 'X <x@example.com>',
    });
    expect(resolveMailTarget(DEFAULT_MAIL_SETTINGS, undefined, {}).kind).toBe('outbox');
  });

  it('maps security modes onto nodemailer options, pooled or not', () => {
    const base = parseSmtpUrl('smtp://h');
    expect(transportOptions({ ...base, security: 'tls' }, null)).toMatchObject({ secure: true, port: 465, requireTLS: false });
    expect(transportOptions({ ...base, security: 'starttls' }, null)).toMatchObject({
      secure: false,
      port: 587,
      requireTLS: true,
    });
    expect(transportOptions({ ...base, security: 'none' }, null)).toMatchObject({ ignoreTLS: true });
    expect(transportOptions(base, { maxConnections: 4 })).toMatchObject({ pool: true, maxConnections: 4 });
    expect(transportOptions(base, null).auth).toBeUndefined();
  });
});

describe('the secret store', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps secrets in a 0600 file, replaced whole, and reads them back', () => {
    dir = mkdtempSync(join(tmpdir(), 'mdm-secrets-'));
    const store = new SecretStore(dir);
    expect(store.has('smtp_password')).toBe(false);
    store.set('smtp_password', 's3cret');
    expect(statSync(store.file).mode & 0o777).toBe(0o600);
    expect(new SecretStore(dir).get('smtp_password')).toBe('s3cret');
    store.set('smtp_password', null);
    expect(new SecretStore(dir).has('smtp_password')).toBe(false);
  });

  it('tightens a loosened file and uses the protector the shell supplies', () => {
    dir = mkdtempSync(join(tmpdir(), 'mdm-secrets-'));
    const rot13: SecretProtector = {
      kind: 'test-rot13',
      protect: (s) => s.replace(/[a-z]/g, (c) => String.fromCharCode(((c.charCodeAt(0) - 97 + 13) % 26) + 97)),
      unprotect: (s) => s.replace(/[a-z]/g, (c) => String.fromCharCode(((c.charCodeAt(0) - 97 + 13) % 26) + 97)),
    };
    new SecretStore(dir, rot13).set('smtp_password', 'hello');
    expect(readFileSync(join(dir, 'secrets.json'), 'utf8')).not.toContain('hello');
    expect(new SecretStore(dir, rot13).get('smtp_password')).toBe('hello');
    // Protected by something this process does not have (safeStorage, when headless): unusable, said so.
    const headless = new SecretStore(dir);
    expect(headless.has('smtp_password')).toBe(false);
    expect(headless.isUnreadable('smtp_password')).toBe(true);

    // The safeStorage adapter, with a stand-in for Electron's safeStorage.
    const fakeSafeStorage = {
      isEncryptionAvailable: () => true,
      encryptString: (plain: string) => Buffer.from([...Buffer.from(plain)].map((b) => b ^ 0x5a)),
      decryptString: (data: Buffer) => Buffer.from([...data].map((b) => b ^ 0x5a)).toString(),
    };
    new SecretStore(dir, osSecretProtector(fakeSafeStorage)).set('smtp_password', 'via-keychain');
    expect(readFileSync(join(dir, 'secrets.json'), 'utf8')).not.toContain('via-keychain');
    expect(new SecretStore(dir, osSecretProtector(fakeSafeStorage)).get('smtp_password')).toBe('via-keychain');

    writeFileSync(
      join(dir, 'secrets.json'),
      JSON.stringify({ version: 1, protection: 'file-0600', values: { smtp_password: 'x' } }),
      { mode: 0o644 },
    );
    expect(new SecretStore(dir).get('smtp_password')).toBe('x');
    expect(statSync(join(dir, 'secrets.json')).mode & 0o777).toBe(0o600);
  });
});
