// The secrets of a cluster (several nodes on one PostgreSQL database): kept in the database, sealed
// by the cluster key every node is given, so that a password set in the console of one node is the
// password of every node. The desktop and SQLite keep theirs in the data dir (mail/secrets.ts).
import { join } from 'node:path';
import { StartupError } from '../startup-error.ts';
import {
  ClusterKeyError,
  dataDirClusterKey,
  readClusterKeyFile,
  parseClusterKey,
  SECRET_KEY_ENV,
  SECRET_KEY_FILE,
  SealedValueError,
  writeNewClusterKey,
  keyIdOf,
  type ClusterKey,
} from './cluster-key.ts';
import { KEY_CHECK_ROW, SEALED_PREFIX, type SecretRepository } from './repository.ts';

/** How the console names this protection (the mail page's `secret_storage`). */
export const DATABASE_PROTECTION = 'database-aes-256-gcm';

/** What opens the secrets: the store, and what the operator should be told once (a new key). */
export interface ClusterSecrets {
  store: DatabaseSecretStore;
  key: ClusterKey;
  /** Said at start when this node made the cluster key: where it is and what to do with it. */
  notice: string | null;
}

/** Where a node's key may come from, strongest first. */
export interface ClusterKeySources {
  /** The key itself (MDM_CONSOLE_SECRET_KEY). */
  secretKey?: string | undefined;
  /** A file holding it (serve --secret-key-file). */
  secretKeyFile?: string | undefined;
  /** The node's data dir: its `secret-key` file, and where a first node writes a new one. */
  dataDir: string;
}

const HOW_TO_GIVE =
  `give every node the same key: copy DATA_DIR/${SECRET_KEY_FILE} of a node that runs into this node's data dir, ` +
  `or set ${SECRET_KEY_ENV} (or serve --secret-key-file FILE) on every node`;

/** The key this node was given, or null: the flag's file, then the environment's, then the data dir's file. */
export function givenClusterKey(sources: ClusterKeySources): ClusterKey | null {
  if (sources.secretKeyFile !== undefined) return readClusterKeyFile(sources.secretKeyFile);
  if (sources.secretKey !== undefined && sources.secretKey !== '') return parseClusterKey(sources.secretKey, SECRET_KEY_ENV);
  return dataDirClusterKey(sources.dataDir);
}

/**
 * Opens the database's secrets at a node's start on PostgreSQL. The key check recorded in the
 * database (by the first node, or migrate-db) must be this node's key's: a node with another key,
 * or none while the database has one, is refused with a one-line StartupError saying what to do
 * (it would read no secret and write some the others cannot read). The first node without a key
 * makes one in its data dir and says so.
 */
export async function openClusterSecrets(
  store: DatabaseSecretStore,
  sources: ClusterKeySources,
  now: () => string = () => new Date().toISOString(),
): Promise<ClusterSecrets> {
  const repository = store.repository;
  let key: ClusterKey | null;
  try {
    key = givenClusterKey(sources);
  } catch (error) {
    if (error instanceof ClusterKeyError) throw new StartupError(error.message, { code: 'ESECRETKEY', option: 'secretKeyFile' });
    throw error;
  }
  let notice: string | null = null;
  const sealedCheck = await repository.keyCheck();
  const recorded = sealedCheck === undefined ? undefined : keyIdOf(sealedCheck);
  const record = async (with_: ClusterKey) =>
    keyIdOf(await repository.recordKeyCheck(with_.seal(KEY_CHECK_ROW, 'key check'), now()));
  if (key === null) {
    if (sealedCheck !== undefined) {
      throw new StartupError(
        `This node has no cluster key, and this database's secrets (the SMTP password) are encrypted with one: ${HOW_TO_GIVE}.`,
        { code: 'ESECRETKEYMISSING', option: 'secretKeyFile' },
      );
    }
    const made = writeNewClusterKey(sources.dataDir);
    if ((await record(made.key)) !== made.key.id) {
      // Another node, started at the same moment, recorded its own first: this one is not the key.
      made.remove();
      throw new StartupError(`Another node made this database's cluster key while this one started: ${HOW_TO_GIVE}.`, {
        code: 'ESECRETKEYMISSING',
        option: 'secretKeyFile',
      });
    }
    key = made.key;
    notice =
      `A new cluster key was written to ${made.file}: it encrypts the secrets kept in the database (the SMTP password). ` +
      `Give every other node the same key (copy the file into its data dir, or set ${SECRET_KEY_ENV}), and keep a copy apart from the backups.`;
  } else {
    const stored = sealedCheck === undefined ? await record(key) : recorded;
    if (stored !== key.id) {
      throw new StartupError(
        `The cluster key of ${key.source} is not the one this database's secrets were written with: ${HOW_TO_GIVE}.`,
        { code: 'ESECRETKEYWRONG', option: 'secretKeyFile' },
      );
    }
  }
  await store.unlock(key);
  return { store, key, notice };
}

/**
 * The secret store of a node on PostgreSQL: the same interface as the data dir's (mail/secrets.ts),
 * values sealed in the `secrets` table and cached in memory, read again when any node changes one
 * (the `settings.updated` event its change records reaches every node through the feed).
 */
export class DatabaseSecretStore {
  readonly protection = DATABASE_PROTECTION;
  readonly repository: SecretRepository;
  private values = new Map<string, string>();
  private unreadable = new Set<string>();
  /** Set at start once the key is checked (openClusterSecrets); nothing is read or written before. */
  private key: ClusterKey | null = null;
  private readonly now: () => string;

  constructor(repository: SecretRepository, now: () => string = () => new Date().toISOString()) {
    this.repository = repository;
    this.now = now;
  }

  /** The checked key: the secrets are read with it from now on. */
  async unlock(key: ClusterKey): Promise<void> {
    this.key = key;
    await this.reload();
  }

  get(name: string): string | undefined {
    return this.values.get(name);
  }

  has(name: string): boolean {
    return this.values.has(name);
  }

  isUnreadable(name: string): boolean {
    return this.unreadable.has(name);
  }

  /** Written in the caller's transaction (the settings change it belongs to); `null` removes it. */
  async set(name: string, value: string | null): Promise<void> {
    if (!this.key) throw new Error('the secrets are written once the cluster key is checked, at start');
    if (value === null) await this.repository.remove(name);
    else await this.repository.put(name, this.key.seal(name, value), this.now());
  }

  /** Reads every secret again (after a change here or on another node). */
  async reload(): Promise<void> {
    const key = this.key;
    if (!key) return;
    const values = new Map<string, string>();
    const unreadable = new Set<string>();
    for (const row of await this.repository.all()) {
      try {
        values.set(row.name, key.open(row.name, row.value));
      } catch (error) {
        if (!(error instanceof SealedValueError)) throw error;
        unreadable.add(row.name);
      }
    }
    this.values = values;
    this.unreadable = unreadable;
  }
}

/** For messages: where a node looks for its own key file. */
export const dataDirKeyFile = (dataDir: string) => join(dataDir, SECRET_KEY_FILE);

/**
 * The `cluster_secrets` rows that carry `values` into a new database (migrate-db): the key check
 * first, then each value sealed by `key`. Nothing is kept in clear.
 */
export function sealedRows(
  key: ClusterKey,
  values: Record<string, string>,
  at = new Date().toISOString(),
): { name: string; value: string; updated_at: string }[] {
  return [
    { name: KEY_CHECK_ROW, value: key.seal(KEY_CHECK_ROW, 'key check'), updated_at: at },
    ...Object.entries(values).map(([name, value]) => ({
      name: `${SEALED_PREFIX}${name}`,
      value: key.seal(name, value),
      updated_at: at,
    })),
  ];
}
