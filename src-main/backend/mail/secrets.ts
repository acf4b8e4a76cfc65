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
}

/**
 * A protector backed by the OS keychain through Electron's safeStorage (the file stays 0600 too).
 * In the desktop shell, once the app is ready:
 * `startBackend({ secretProtector: safeStorage.isEncryptionAvailable() ? osSecretProtector(safeStorage) : undefined })`.
 */
export function osSecretProtector(storage: OsSecretStorage): SecretProtector {
  return {
    kind: 'os-safe-storage',
    protect: (plain) => storage.encryptString(plain).toString('base64'),
    unprotect: (stored) => storage.decryptString(Buffer.from(stored, 'base64')),
  };
}

export type SecretName = 'smtp_password';

interface SecretFile {
  version: 1;
  protection: string;
  values: Partial<Record<SecretName, string>>;
}

/** DATA_DIR/secrets.json, mode 0600, replaced atomically; never served by any API. */
export class SecretStore {
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
    for (const [name, stored] of Object.entries(parsed.values ?? {}) as [SecretName, string][]) {
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
  }

  private write(values: Partial<Record<SecretName, string>>): void {
    const stored: SecretFile = { version: 1, protection: this.protector.kind, values: {} };
    for (const [name, value] of Object.entries(values) as [SecretName, string][]) stored.values[name] = this.protector.protect(value);
    mkdirSync(dirname(this.file), { recursive: true });
    const temp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temp, 0o600);
    renameSync(temp, this.file);
  }
}
