import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ServerFile {
  api_url: string;
  deeplink_url: string;
  admin_url: string;
  admin_token: string;
  console_url?: string;
  mqtt_port: number;
  mqtt_tls_port?: number;
  pid: number;
}

/** The running server of a data dir, as it described itself in DIR/server.json. */
export function readServerFile(dataDir: string): ServerFile {
  const file = join(dataDir, 'server.json');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new CliError(`No server is running for ${dataDir} (no ${file}). Start one with: npm run serve -- --data-dir ${dataDir}`);
  }
  let info: ServerFile;
  try {
    info = JSON.parse(text) as ServerFile;
  } catch {
    throw new CliError(`${file} is not readable JSON; if no server is running, delete it and start one with: npm run serve -- --data-dir ${dataDir}`);
  }
  try {
    process.kill(info.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') {
      throw new CliError(`The server recorded in ${file} (pid ${info.pid}) is not running. Start it with: npm run serve -- --data-dir ${dataDir}`);
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

/** A refusal of the admin API: its status and body, for commands that act on it. */
export class AdminApiError extends CliError {
  readonly status: number;
  readonly body: { error?: string; message?: string; errors?: string[]; [key: string]: unknown } | undefined;
  constructor(message: string, status: number, body: AdminApiError['body']) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

/** Calls the admin API of the running server; errors carry the server's message. */
export async function adminRequest<T>(server: ServerFile, method: string, path: string, body?: unknown, extra: RequestInit = {}): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${server.admin_token}` };
  if (body !== undefined && !(extra.body instanceof ReadableStream)) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(`${server.admin_url}/api${path}`, {
      body: body === undefined ? undefined : JSON.stringify(body),
      ...extra,
      method,
      headers: { ...headers, ...(extra.headers as Record<string, string> | undefined) },
    });
  } catch (error) {
    throw new CliError(`Cannot reach the server at ${server.admin_url}: ${(error as Error).message}`);
  }
  const text = await response.text();
  const data = text ? (JSON.parse(text) as unknown) : undefined;
  if (!response.ok) {
    const problem = data as AdminApiError['body'];
    const details = problem?.errors?.length ? `\n  ${problem.errors.join('\n  ')}` : '';
    throw new AdminApiError(`${problem?.message ?? `HTTP ${response.status}`}${details}`, response.status, problem);
  }
  return data as T;
}
