import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * How secrets are protected at rest. The default keeps them as they are in a file only the owner
 * can read (0600). The desktop shell supplies one backed by Electron's safeStorage (OS keychain);
 * the backend itself never imports electron.
 */
export interface SecretProtector {
  /** Written next to the values, so a file protected another way is recognised, not misread. */
  readonly kind: string;
  protect(plain: string): string;
  unprotect(stored: string): string;
}

export const plainProtector: SecretProtector = {
  kind: 'file-0600',
  protect: (plain) => plain,
  unprotect: (stored) => stored,
};

/** The part of Electron's `safeStorage` we use; the shell passes `safeStorage` itself. */
export interface OsSecretStorage {
  isEncryptionAvailable(): boolean;
  encryptString(plain: string): Buffer;
  decryptString(encrypted: Buffer): string;
  /** Linux only: where the key lives; `basic_text` is a key built into Electron, not a keychain. */
  getSelectedStorageBackend?(): string;
}

/** Secrets encrypted by the OS keychain through Electron's safeStorage (the file stays 0600 too). */
export function osSecretProtector(storage: OsSecretStorage): SecretProtector {
  return {
    kind: 'os-safe-storage',
    protect: (plain) => storage.encryptString(plain).toString('base64'),
    unprotect: (stored) => storage.decryptString(Buffer.from(stored, 'base64')),
  };
}

/**
 * What the desktop shell protects secrets with (src-main/electron/main.ts, once the app is ready):
 * the OS keychain when there is one; otherwise undefined, i.e. the 0600 file, as headless. On Linux
 * without a secret service safeStorage would fall back to a fixed built-in key: no better than the file.
 */
export function keychainProtector(
  storage: OsSecretStorage,
  platform: NodeJS.Platform = process.platform,
): SecretProtector | undefined {
  if (!storage.isEncryptionAvailable()) return undefined;
  if (platform === 'linux' && storage.getSelectedStorageBackend?.() === 'basic_text') return undefined;
  return osSecretProtector(storage);
}

export type SecretName = 'smtp_password';

/**
 * Where the mail room keeps its secrets: the data dir's file (SecretStore, below: the desktop and
 * SQLite) or, on PostgreSQL, the database sealed by the cluster key (secrets/database-secrets.ts),
 * so that every node has the same.
 */
export interface SecretVault {
  /** How the values are protected at rest (the mail page's `secret_storage`). */
  readonly protection: string;
  get(name: SecretName): string | undefined;
  has(name: SecretName): boolean;
  /** Present but not readable here (another protector, another key): unusable until set again. */
  isUnreadable(name: SecretName): boolean;
  /** `null` removes it. Called inside the settings change's transaction. */
  set(name: SecretName, value: string | null): void | Promise<void>;
  /** Reads the values again (a change made by another node); absent when only this process writes them. */
  reload?(): Promise<void>;
}

interface SecretFile {
  version: 1;
  protection: string;
  values: Partial<Record<SecretName, string>>;
}

/** DATA_DIR/secrets.json, mode 0600, replaced atomically; never served by any API. */
export class SecretStore implements SecretVault {
  readonly file: string;
  private readonly protector: SecretProtector;
  private values: Partial<Record<SecretName, string>> = {};
  /** Names present in the file but protected by another protector (e.g. safeStorage when headless). */
  private unreadable = new Set<SecretName>();

  constructor(dataDir: string, protector: SecretProtector = plainProtector) {
    this.file = join(dataDir, 'secrets.json');
    this.protector = protector;
    this.load();
  }

  get protection(): string {
    return this.protector.kind;
  }

  get(name: SecretName): string | undefined {
    return this.values[name];
  }

  has(name: SecretName): boolean {
    return this.values[name] !== undefined;
  }

  /** Set by a protector this process does not have: present but unusable until set again. */
  isUnreadable(name: SecretName): boolean {
    return this.unreadable.has(name);
  }

  /** `null` removes the secret. */
  set(name: SecretName, value: string | null): void {
    const next = { ...this.values };
    if (value === null) delete next[name];
    else next[name] = value;
    this.write(next);
    this.values = next;
    this.unreadable.delete(name);
  }

  private load(): void {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    // Tighten a file someone loosened; its content is read either way.
    chmodSync(this.file, 0o600);
    const parsed = JSON.parse(text) as Partial<SecretFile>;
    // A file kept as plain text (headless, or before the keychain was used) is taken over: read as
    // it is, then written again under this protector.
    const takeOver = parsed.protection === plainProtector.kind && this.protector.kind !== plainProtector.kind;
    for (const [name, stored] of Object.entries(parsed.values ?? {}) as [SecretName, string][]) {
      if (takeOver) {
        this.values[name] = stored;
        continue;
      }
      if (parsed.protection !== this.protector.kind) {
        this.unreadable.add(name);
        continue;
      }
      try {
        this.values[name] = this.protector.unprotect(stored);
      } catch {
        this.unreadable.add(name);
      }
    }
    if (takeOver) this.write(this.values);
  }

  private write(values: Partial<Record<SecretName, string>>): void {
    const stored: SecretFile = { version: 1, protection: this.protector.kind, values: {} };
    for (const [name, value] of Object.entries(values) as [SecretName, string][])
      stored.values[name] = this.protector.protect(value);
    mkdirSync(dirname(this.file), { recursive: true });
    const temp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temp, 0o600);
    renameSync(temp, this.file);
  }
}
