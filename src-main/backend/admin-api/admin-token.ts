import { chmodSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomHex } from '../util/tokens.ts';

const TOKEN_PATTERN = /^[0-9a-f]{64}$/;

/** The data dir's admin token file's token, when it holds a well-formed one. */
function readTokenFile(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  const token = readFileSync(file, 'utf8').trim();
  chmodSync(file, 0o600);
  return TOKEN_PATTERN.test(token) ? token : undefined;
}

function writeTokenFile(file: string, token: string): void {
  // Whole or not at all: a reader never sees half a token.
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${token}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** The admin token lives in the data dir, readable by its owner only (0600). */
export function loadOrCreateAdminToken(dataDir: string): string {
  const file = join(dataDir, 'admin-token');
  const existing = readTokenFile(file);
  if (existing) return existing;
  const token = randomHex(32);
  writeTokenFile(file, token);
  return token;
}

/** Where the nodes of one database keep what they share (cluster/repository.ts SharedSecretRepository). */
export interface SharedSecrets {
  get(name: string): Promise<{ value: string; updated_at: string } | undefined>;
  put(name: string, value: string, at: string): Promise<void>;
  claim(name: string, value: string, at: string): Promise<string>;
}

const SHARED_NAME = 'admin_token';

/**
 * The admin token every node of one database shares, kept in the database; each node's data dir
 * holds a copy (DATA_DIR/admin-token, 0600), so the CLI pointed at any node's data dir signs in.
 * The first node to start on a database gives it its data dir's token (an office moved from
 * SQLite keeps its token), or a new one; a node whose copy differs takes the database's and
 * rewrites its copy, unless its copy was replaced after the database's was set: that is the
 * owner changing the token (replace the file, restart), which then becomes every node's.
 */
export async function sharedAdminToken(dataDir: string, secrets: SharedSecrets): Promise<string> {
  const file = join(dataDir, 'admin-token');
  const local = readTokenFile(file);
  const stored = await secrets.get(SHARED_NAME);
  let token: string;
  if (stored === undefined) {
    token = await secrets.claim(SHARED_NAME, local ?? randomHex(32), new Date().toISOString());
  } else if (local !== undefined && local !== stored.value && statSync(file).mtimeMs > Date.parse(stored.updated_at)) {
    token = local;
    await secrets.put(SHARED_NAME, local, new Date(statSync(file).mtimeMs).toISOString());
  } else token = stored.value;
  if (local !== token) writeTokenFile(file, token);
  return token;
}
