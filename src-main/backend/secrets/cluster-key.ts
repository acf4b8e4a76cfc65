// The cluster key: what every node on one PostgreSQL database is given so that the secrets kept in
// the database (the SMTP password) are encrypted at rest and readable by every node. AES-256-GCM
// from node:crypto, with a key derived (HKDF-SHA-256) from the 32 random bytes the operator holds;
// the secret's name is the additional data, so a value moved to another name does not open. The key
// check stored beside the secrets is derived apart from the encryption key: it tells a wrong key at
// start without revealing anything of the key.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** DATA_DIR/secret-key: the key a node made itself (the first node on a database, or migrate-db). */
export const SECRET_KEY_FILE = 'secret-key';
export const SECRET_KEY_ENV = 'MDM_CONSOLE_SECRET_KEY';
const FORMAT = 'v1';

/** A key given in a form that is not one (the message says what is expected). */
export class ClusterKeyError extends Error {
  override name = 'ClusterKeyError';
}

/** A stored value this key does not open (another key, or changed). */
export class SealedValueError extends Error {
  override name = 'SealedValueError';
}

const derive = (raw: Buffer, purpose: string) => Buffer.from(hkdfSync('sha256', raw, Buffer.alloc(0), purpose, 32));

export class ClusterKey {
  /** Where the key came from, for messages ("MDM_CONSOLE_SECRET_KEY", "--secret-key-file F", the data dir's file). */
  readonly source: string;
  /** The key check: the same for the same key, and for no other. */
  readonly id: string;
  private readonly key: Buffer;

  constructor(raw: Buffer, source: string) {
    if (raw.length !== 32) throw new ClusterKeyError(`${source}: a cluster key is 32 bytes, not ${raw.length}`);
    this.source = source;
    this.key = derive(raw, 'mdm-console secrets v1');
    this.id = createHmac('sha256', derive(raw, 'mdm-console key check v1')).update('key check').digest('hex').slice(0, 32);
  }

  /** `v1.<key check>.<iv>.<tag>.<ciphertext>`, base64 each: a fresh 12-byte IV per value. */
  seal(name: string, plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(name, 'utf8'));
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [FORMAT, this.id, iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join('.');
  }

  open(name: string, sealed: string): string {
    const [format, keyId, iv, tag, data] = sealed.split('.');
    if (format !== FORMAT || keyId === undefined || iv === undefined || tag === undefined || data === undefined)
      throw new SealedValueError(`the stored ${name} is not in a form this version reads`);
    if (keyId !== this.id)
      throw new SealedValueError(`the stored ${name} was sealed with another cluster key than ${this.source}'s`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
      decipher.setAAD(Buffer.from(name, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedValueError(`the stored ${name} does not open with the cluster key of ${this.source}`);
    }
  }
}

/** The key check a sealed value names (the key it was sealed with), or undefined for what is not sealed. */
export function keyIdOf(sealed: string): string | undefined {
  const [format, keyId] = sealed.split('.');
  return format === FORMAT ? keyId : undefined;
}

/**
 * A key as an operator writes it: 32 bytes in base64 (`openssl rand -base64 32`) or in hex (64
 * digits), surrounding spaces and newlines ignored.
 */
export function parseClusterKey(text: string, source: string): ClusterKey {
  const trimmed = text.trim();
  let raw: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) raw = Buffer.from(trimmed, 'hex');
  else if (/^[A-Za-z0-9+/_-]{42,43}={0,2}$/.test(trimmed)) raw = Buffer.from(trimmed, 'base64');
  if (raw?.length !== 32)
    throw new ClusterKeyError(
      `${source} is not a cluster key: give 32 random bytes in base64, as \`openssl rand -base64 32\` prints them (${trimmed.length} characters given)`,
    );
  return new ClusterKey(raw, source);
}

/** A key from a file (its whole content), the file named in the message when it cannot be read. */
export function readClusterKeyFile(file: string, source = `--secret-key-file ${file}`): ClusterKey {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ClusterKeyError(`${source}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  return parseClusterKey(text, source);
}

/** The data dir's own key file, or null when there is none. */
export function dataDirClusterKey(dataDir: string): ClusterKey | null {
  const file = join(dataDir, SECRET_KEY_FILE);
  try {
    return parseClusterKey(readFileSync(file, 'utf8'), file);
  } catch (error) {
    if (error instanceof ClusterKeyError) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ClusterKeyError(`${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/** A new random key written to DATA_DIR/secret-key (0600); `remove` takes it back (a start that lost a race). */
export function writeNewClusterKey(dataDir: string): { key: ClusterKey; file: string; remove: () => void } {
  const file = join(dataDir, SECRET_KEY_FILE);
  const raw = randomBytes(32);
  writeFileSync(file, `${raw.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return { key: new ClusterKey(raw, file), file, remove: () => rmSync(file, { force: true }) };
}
