/**
 * The admin API over HTTP, same origin: the console is served by the admin listener, and the
 * HttpOnly session cookie set at sign-in authenticates every call (no token in script reach).
 */
export class ApiRequestError extends Error {
  override name = 'ApiRequestError';
  readonly status: number;
  readonly code: string;
  /** Per-row errors of bulk endpoints ("row N: …"). */
  readonly errors: string[];
  /** The whole error body, for errors that carry more (e.g. the pending invitation of a 409). */
  readonly body: Record<string, unknown>;

  constructor(status: number, code: string, message: string, errors: string[] = [], body: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.errors = errors;
    this.body = body;
  }
}

/** Turns a failed response into an ApiRequestError with the server's message when it sent one. */
export async function errorOf(response: Response, { keepMessage = false }: { keepMessage?: boolean } = {}): Promise<ApiRequestError> {
  let code = `HTTP_${response.status}`;
  let message = response.statusText || `HTTP ${response.status}`;
  let errors: string[] = [];
  let whole: Record<string, unknown> = {};
  try {
    const body = (await response.json()) as { error?: unknown; message?: unknown; errors?: unknown };
    if (body && typeof body === 'object') whole = body as Record<string, unknown>;
    if (typeof body.error === 'string') code = body.error;
    if (typeof body.message === 'string') message = body.message;
    if (Array.isArray(body.errors)) errors = body.errors.filter((e): e is string => typeof e === 'string');
  } catch {
    // Not JSON: keep the status text.
  }
  // The console switches to its sign-in page, which says where to get a token or a link.
  if (response.status === 401 && !keepMessage) message = 'You are signed out. Sign in again on the sign-in page.';
  return new ApiRequestError(response.status, code, message, errors, whole);
}

export interface RequestOptions {
  body?: unknown;
  signal?: AbortSignal;
}

export async function api<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (options.signal) init.signal = options.signal;
  if (options.body !== undefined) {
    init.body = JSON.stringify(options.body);
    init.headers = { ...init.headers, 'content-type': 'application/json' };
  }
  let response: Response;
  try {
    response = await fetch(`/api${path}`, init);
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ApiRequestError(0, 'NETWORK_ERROR', 'The console cannot reach its server. Is it still running?');
  }
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

export const get = <T>(path: string, signal?: AbortSignal) => api<T>('GET', path, signal ? { signal } : {});
export const post = <T>(path: string, body?: unknown) => api<T>('POST', path, body === undefined ? {} : { body });
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, { body });
export const del = (path: string) => api<void>('DELETE', path);

export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
