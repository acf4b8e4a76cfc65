import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomHex } from '../util/tokens.ts';

/** The admin token lives in the data dir, readable by its owner only (0600). */
export function loadOrCreateAdminToken(dataDir: string): string {
  const file = join(dataDir, 'admin-token');
  if (existsSync(file)) {
    const token = readFileSync(file, 'utf8').trim();
    chmodSync(file, 0o600);
    if (/^[0-9a-f]{64}$/.test(token)) return token;
  }
  const token = randomHex(32);
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return token;
}
