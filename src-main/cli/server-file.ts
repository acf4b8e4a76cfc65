import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminClient, type AdminApiError, type AdminClient } from '../../src-shared/contract/admin-client.ts';
import type { ServerInfo } from '../../src-shared/contract/server-info.ts';

/** The running server of a data dir, as it described itself in DIR/server.json. */
export function readServerFile(dataDir: string): ServerInfo {
  const file = join(dataDir, 'server.json');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new CliError(
      `No server is running for ${dataDir} (no ${file}). Start one with: npm run serve -- --data-dir ${dataDir}`,
    );
  }
  let info: ServerInfo;
  try {
    info = JSON.parse(text) as ServerInfo;
  } catch {
    throw new CliError(
      `${file} is not readable JSON; if no server is running, delete it and start one with: npm run serve -- --data-dir ${dataDir}`,
    );
  }
  try {
    process.kill(info.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') {
      throw new CliError(
        `The server recorded in ${file} (pid ${info.pid}) is not running. Start it with: npm run serve -- --data-dir ${dataDir}`,
      );
    }
  }
  return info;
}

export class CliError extends Error {
  /** The process exit code (default 2: usage or request refused). */
  readonly exitCode?: number;
  constructor(message: string, exitCode?: number) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

/**
 * The admin API of the running server, signed with its admin token, or with the personal API token
 * in $MDM_CONSOLE_TOKEN when set (then the CLI acts as that token's account, with its role).
 */
export function adminOf(server: Pick<ServerInfo, 'admin_url' | 'admin_token'>): AdminClient {
  const personal = process.env.MDM_CONSOLE_TOKEN?.trim();
  return adminClient({ baseUrl: server.admin_url, token: personal || server.admin_token });
}

/** What the CLI says of a refusal: the server's message, and each problem of a bulk request on its own line. */
export function refusalText(error: AdminApiError): string {
  return error.errors.length ? `${error.message}\n  ${error.errors.join('\n  ')}` : error.message;
}
