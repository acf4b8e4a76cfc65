// The one admin HTTP client: the console, the CLI, the tests and the bench call the admin API
// through it. One typed function per entry of the route table (admin-routes.ts), derived from it:
// `admin.agents.get({ params: { id } })`, `admin.invitations.list({ query: { status: 'pending' } })`.
// fetch only, and type-only imports of the schemas, so the browser bundle carries no schema code
// and Node 22 needs nothing besides its own fetch.
import type { Static, TSchema } from 'typebox';
import {
  adminRoutes,
  type AdminEndpoint,
  type AdminRouteName,
  type AdminRoutes,
  type ContractSchemas,
  type SchemaName,
} from './admin-routes.ts';
import type { ApiErrorBody } from './errors.ts';

/** An error body as the server sent it: `{ error, message }`, and what some errors carry besides (`errors`, `invitation` …). */
export type AdminErrorBody = ApiErrorBody & Record<string, unknown>;

/** A refusal of the admin API (status ≥ 400), or no answer at all (status 0, code NETWORK_ERROR). */
export class AdminApiError extends Error {
  override name = 'AdminApiError';
  readonly status: number;
  /** The server's `error` code, e.g. ERROR_NOT_FOUND; HTTP_<status> when the body had none. */
  readonly code: string;
  readonly body: AdminErrorBody;

  constructor(status: number, body: AdminErrorBody) {
    super(body.message);
    this.status = status;
    this.code = body.error;
    this.body = body;
  }

  /** The per-row problems of bulk endpoints ("row N: …"). */
  get errors(): string[] {
    const { errors } = this.body;
    return Array.isArray(errors) ? errors.filter((e): e is string => typeof e === 'string') : [];
  }
}

export interface AdminClientOptions {
  /** The admin listener, as in server.json's `admin_url`; '' (the default) for the page's own origin. */
  baseUrl?: string;
  /** The admin token (CLI, scripts, tests). Without it, the console's HttpOnly session cookie signs the calls. */
  token?: string;
  /** Says what a 401 means to this caller (the console: "sign in again"). */
  unauthorizedMessage?: string;
  /** Says what "no answer" means to this caller; default: the address and the cause. */
  unreachableMessage?: (cause: Error) => string;
}

/** Every list answer. */
export interface Items<T> {
  items: T[];
}

/** What fetch sends as a body, in the browser and in Node. */
export type RequestBody = NonNullable<RequestInit['body']>;

type QueryValue = string | number | boolean | null | undefined;
export type Query = Record<string, QueryValue>;

export interface CallOptions {
  /** JSON-encoded, with its Content-Type. */
  body?: unknown;
  /** A raw body (an upload): sent as it is, streamed where it is a stream. */
  content?: RequestBody;
  query?: Query;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
}

/** `?a=1&b=x`, leaving out absent and empty values; '' when nothing is left. */
export function queryString(params: Query = {}): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

async function errorOf(response: Response): Promise<AdminErrorBody> {
  const fallback: AdminErrorBody = {
    error: `HTTP_${response.status}`,
    message: response.statusText || `HTTP ${response.status}`,
  };
  try {
    const body = (await response.json()) as unknown;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return fallback;
    const fields = body as Record<string, unknown>;
    return {
      ...fields,
      error: typeof fields.error === 'string' ? fields.error : fallback.error,
      message: typeof fields.message === 'string' ? fields.message : fallback.message,
    };
  } catch {
    return fallback; // not JSON: the status text says it
  }
}

/** The admin API's collection of a kind of stored item: `admin[collectionOf(kind)].list()`. */
export const collectionOf = (kind: 'file' | 'package') => (kind === 'file' ? 'files' : 'packages') as 'files' | 'packages';

type StaticOf<N> = N extends SchemaName ? (ContractSchemas[N] extends TSchema ? Static<ContractSchemas[N]> : never) : never;
/** `{ key: T }`, or `{ key?: T }` when T has no required field. */
type Field<Key extends string, T> = object extends T ? { [P in Key]?: T } : { [P in Key]: T };
type ParamsIn<E> = E extends { params: infer N } ? { params: StaticOf<N> } : unknown;
type QueryIn<E> = E extends { querystring: infer N } ? Field<'query', StaticOf<N>> : unknown;
type BodyIn<E> = E extends { body: infer B }
  ? B extends SchemaName
    ? Field<'body', StaticOf<B>>
    : { body: RequestBody }
  : unknown;

/** What one call carries besides its entry's params, query and body. */
export interface CallExtras {
  signal?: AbortSignal | undefined;
  headers?: Record<string, string>;
}

/** The argument of an endpoint's function: `params`, `query`, `body` as its entry's schemas say. */
export type EndpointInput<K extends AdminRouteName> = ParamsIn<AdminRoutes[K]> &
  QueryIn<AdminRoutes[K]> &
  BodyIn<AdminRoutes[K]> &
  CallExtras;

type Success<R> = {
  [S in keyof R]: `${S & number}` extends `2${string}`
    ? R[S] extends SchemaName
      ? StaticOf<R[S]>
      : R[S] extends null
        ? void
        : Response // bytes (a QR image, the event stream): the response itself, to read as the caller needs
    : never;
}[keyof R];
/** What an endpoint's function resolves to: its success answer (an error status throws AdminApiError). */
export type EndpointOutput<K extends AdminRouteName> = Success<AdminRoutes[K]['response']>;

export type EndpointCall<K extends AdminRouteName> =
  object extends EndpointInput<K>
    ? (input?: EndpointInput<K>) => Promise<EndpointOutput<K>>
    : (input: EndpointInput<K>) => Promise<EndpointOutput<K>>;

type GroupOf<K> = K extends `${infer G}.${string}` ? G : never;
/** `admin.name(…)` for a top-level entry, `admin.group.name(…)` for `group.name`. */
export type AdminEndpoints = { [K in Exclude<AdminRouteName, `${string}.${string}`>]: EndpointCall<K> } & {
  [G in GroupOf<AdminRouteName>]: { [K in AdminRouteName as K extends `${G}.${infer M}` ? M : never]: EndpointCall<K> };
};

interface LooseInput extends CallExtras {
  params?: Record<string, string | number>;
  query?: Query;
  body?: unknown;
}

export function adminClient(options: AdminClientOptions = {}) {
  const baseUrl = options.baseUrl ?? '';

  /** Any admin call, answered with status < 400: `path` is below the origin (`/api/…`, `/auth/…`). */
  async function send(
    method: string,
    path: string,
    { body, content, query, headers, signal }: CallOptions = {},
  ): Promise<Response> {
    const sent: Record<string, string> = { accept: 'application/json', ...headers };
    if (options.token) sent.authorization = `Bearer ${options.token}`;
    const init: RequestInit & { duplex?: 'half' } = { method, headers: sent, credentials: 'same-origin' };
    if (signal) init.signal = signal;
    if (content !== undefined) {
      init.body = content;
      // A streamed request body needs this in Node's fetch (and in browsers that stream uploads).
      if (typeof ReadableStream !== 'undefined' && content instanceof ReadableStream) init.duplex = 'half';
    } else if (body !== undefined) {
      init.body = JSON.stringify(body);
      sent['content-type'] = 'application/json';
    }
    let response: Response;
    try {
      response = await fetch(`${baseUrl}${path}${queryString(query)}`, init);
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error;
      const message =
        options.unreachableMessage?.(error as Error) ??
        `Cannot reach the server at ${baseUrl || 'this page'}: ${(error as Error).message}`;
      throw new AdminApiError(0, { error: 'NETWORK_ERROR', message });
    }
    if (!response.ok) {
      const problem = await errorOf(response);
      if (response.status === 401 && options.unauthorizedMessage && path.startsWith('/api/'))
        problem.message = options.unauthorizedMessage;
      throw new AdminApiError(response.status, problem);
    }
    return response;
  }

  /** Any admin call with a JSON answer (204 gives undefined). */
  async function call<T>(method: string, path: string, callOptions: CallOptions = {}): Promise<T> {
    const response = await send(method, path, callOptions);
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** The path of an entry with its parameters filled in. */
  function pathOf(entry: AdminEndpoint, params: Record<string, string | number> = {}): string {
    return entry.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_whole, key: string) => encodeURIComponent(String(params[key])));
  }

  /** Calls table entry `name`: JSON in and out, raw bytes where the entry says so. */
  async function request(name: AdminRouteName, input: LooseInput = {}): Promise<unknown> {
    const entry: AdminEndpoint = adminRoutes[name];
    const { params, query, body, signal, headers } = input;
    const path = pathOf(entry, params);
    const raw = typeof entry.body === 'object' ? entry.body : undefined;
    const response = await send(entry.method, path, {
      query,
      signal,
      ...(raw
        ? { content: body as RequestBody, headers: { 'content-type': raw.contentType, ...headers } }
        : { body, ...(headers && { headers }) }),
    });
    const answer = entry.response[response.status];
    if (answer !== undefined && answer !== null && typeof answer === 'object') return response;
    if (response.status === 204) return undefined;
    const text = await response.text();
    return text ? (JSON.parse(text) as unknown) : undefined;
  }

  const endpoints: Record<string, unknown> = {};
  for (const name of Object.keys(adminRoutes) as AdminRouteName[]) {
    const fn = (input?: LooseInput) => request(name, input);
    const dot = name.indexOf('.');
    if (dot < 0) endpoints[name] = fn;
    else ((endpoints[name.slice(0, dot)] ??= {}) as Record<string, unknown>)[name.slice(dot + 1)] = fn;
  }

  return {
    call,
    /** The URL of an entry (for an <img>, a download link, an EventSource). */
    urlOf: (name: AdminRouteName, params?: Record<string, string | number>, query?: Query) =>
      `${baseUrl}${pathOf(adminRoutes[name], params)}${queryString(query)}`,
    ...(endpoints as AdminEndpoints),
  };
}

export type AdminClient = ReturnType<typeof adminClient>;
