// A minimal client of the agent REST API (spec §4), written from the wire contract only.
// Uses the global fetch (undici); one instance holds at most one session token.
import { SPEC_DIALECT, type Dialect, type Resource } from './dialect.ts';

/** Fields of getFullSession that the spec names; everything else is ignored (spec §2). */
export interface FullSessionFields {
  core_plugins?: Record<string, string>;
  coreactiveprofile?: { id?: number | string; name?: string };
  plugin_mdm_guest_profiles_id?: number | string;
}

/** getFullSession: the fields at the top level, or under `session` for GLPI-style servers. */
export type FullSession = FullSessionFields & { session?: FullSessionFields; [key: string]: unknown };

/** Body of POST PluginMdmAgent, inside `{input: …}` (spec §2 "Agent, input of creation"). */
export interface AgentCreationInput {
  _email: string;
  _invitation_token: string;
  _serial?: string;
  _uuid?: string;
  csr: string;
  firstname?: string;
  lastname?: string;
  version: string;
  type: string;
}

export interface AgentCreationResponse {
  id: string;
  message: string;
}

/** The agent record as the spec describes it; values come from the wire unchecked. */
export interface AgentRecord {
  id: number;
  name: string;
  version: string;
  computers_id: number;
  wipe: number;
  lock: number;
  enroll_status: string;
  entities_id: number;
  plugin_mdm_fleets_id: number;
  last_report: string | null;
  last_contact: string | null;
  certificate: string;
  topic: string;
  mqttpasswd: string;
  api_token: string;
  broker: string;
  port: number;
  tls: number;
  android_bugcollecctor_url: string;
  android_bugcollector_login: string;
  android_bugcollector_passwd: string;
  links: { rel: string; href: string }[];
  [key: string]: unknown;
}

export type ContentKind = 'file' | 'package';

const CONTENT_RESOURCE: Record<ContentKind, Resource> = {
  file: 'File',
  package: 'Package',
};

/** An HTTP failure of the agent API; `code`/`message` come from the server's `[code, message]`. */
export class AgentApiError extends Error {
  override name = 'AgentApiError';
  /** HTTP status, or 0 when no response arrived. */
  readonly status: number;
  /** The server's error code (e.g. ERROR_CORE_ADD), or HTTP_<status> / NETWORK_ERROR / BAD_RESPONSE. */
  readonly code: string;
  /** The server's message, meant to be shown to the user. */
  readonly serverMessage: string;
  /** e.g. "POST PluginMdmAgent". */
  readonly endpoint: string;

  constructor(endpoint: string, status: number, code: string, serverMessage: string) {
    super(`${code}: ${serverMessage} (${status === 0 ? 'no response' : `HTTP ${status}`} from ${endpoint})`);
    this.endpoint = endpoint;
    this.status = status;
    this.code = code;
    this.serverMessage = serverMessage;
  }

  /** Reads an error response body: a JSON array `[code, message]`, or whatever text came. */
  static async fromResponse(endpoint: string, response: Response): Promise<AgentApiError> {
    const text = await response.text().catch(() => '');
    let code = `HTTP_${response.status}`;
    let message = response.statusText || 'request failed';
    try {
      const body: unknown = JSON.parse(text);
      if (Array.isArray(body) && body.length > 0) {
        code = String(body[0]);
        message = body.length > 1 ? String(body[1]) : '';
      } else if (typeof body === 'string') {
        message = body;
      }
    } catch {
      if (text.trim() !== '') message = text.trim().slice(0, 300);
    }
    return new AgentApiError(endpoint, response.status, code, message);
  }
}

export interface AgentApiClientOptions {
  /** Time limit in ms of each JSON request, and of waiting for a download's headers. Default 30 s. */
  timeoutMs?: number;
  /** Resource names and token placement (dialect.ts); default the spec's. */
  dialect?: Dialect;
}

export interface ContentRequestOptions {
  /** Value of the Range header, e.g. "bytes=0-99". */
  range?: string;
  /** Defaults to application/octet-stream (the bytes); anything else asks for JSON metadata. */
  accept?: string;
  signal?: AbortSignal;
}

export class AgentApiClient {
  /** The base URL with a trailing '/', so endpoint names append to it (spec §1). */
  readonly baseUrl: string;
  sessionToken: string | undefined;
  private readonly timeoutMs: number;
  readonly dialect: Dialect;

  constructor(baseUrl: string, options: AgentApiClientOptions = {}) {
    this.baseUrl = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.dialect = options.dialect ?? SPEC_DIALECT;
  }

  /** GET initSession?user_token=… — accepts a user token or an agent's api_token. */
  async initSession(userToken: string): Promise<string> {
    this.sessionToken = undefined;
    const body = await this.requestJson('GET', 'initSession', { user_token: userToken }, undefined, false);
    const token = isRecord(body) ? body['session_token'] : undefined;
    if (typeof token !== 'string' || token === '') {
      throw new AgentApiError('GET initSession', 200, 'BAD_RESPONSE', 'response has no session_token');
    }
    this.sessionToken = token;
    return token;
  }

  async getFullSession(): Promise<FullSession> {
    const body = await this.requestJson('GET', 'getFullSession');
    if (!isRecord(body)) throw new AgentApiError('GET getFullSession', 200, 'BAD_RESPONSE', 'response is not an object');
    return body as FullSession;
  }

  /** POST changeActiveProfile?profiles_id=…; the response body is unspecified and ignored. */
  async changeActiveProfile(profilesId: number): Promise<void> {
    await this.requestJson('POST', 'changeActiveProfile', { profiles_id: String(profilesId) }, undefined, true, false);
  }

  async createAgent(input: AgentCreationInput): Promise<AgentCreationResponse> {
    const resource = this.dialect.resource('Agent');
    const body = await this.requestJson('POST', resource, {}, { input });
    const id = isRecord(body) ? body['id'] : undefined;
    if ((typeof id !== 'string' && typeof id !== 'number') || String(id) === '') {
      throw new AgentApiError(`POST ${resource}`, 201, 'BAD_RESPONSE', 'response has no agent id');
    }
    const message = isRecord(body) && typeof body['message'] === 'string' ? body['message'] : '';
    return { id: String(id), message };
  }

  async getAgent(agentId: string | number): Promise<AgentRecord> {
    const path = `${this.dialect.resource('Agent')}/${encodeURIComponent(String(agentId))}`;
    const body = await this.requestJson('GET', path);
    if (!isRecord(body)) throw new AgentApiError(`GET ${path}`, 200, 'BAD_RESPONSE', 'response is not an object');
    return body as AgentRecord;
  }

  /** PUT <Agent>/<id> `{"input": …}`: the Flyve agents' HTTP reports (`_pong`, `is_online`, `_inventory`). */
  async updateAgent(agentId: string | number, input: Record<string, unknown>): Promise<unknown> {
    return this.requestJson('PUT', `${this.dialect.resource('Agent')}/${encodeURIComponent(String(agentId))}`, {}, { input });
  }

  /** POST <Geolocation> `{"input": {_agents_id, _datetime, latitude, longitude | _gps: "off"}}`. */
  async postGeolocation(input: Record<string, unknown>): Promise<unknown> {
    return this.requestJson('POST', this.dialect.resource('Geolocation'), {}, { input });
  }

  /**
   * GET PluginMdmFile/<id> or PluginMdmPackage/<id>. Returns the raw response whatever its
   * status, so callers can stream the body and judge statuses such as 206 or 416 themselves.
   */
  async requestContent(kind: ContentKind, id: number, options: ContentRequestOptions = {}): Promise<Response> {
    const path = `${this.dialect.resource(CONTENT_RESOURCE[kind])}/${id}`;
    const headers: Record<string, string> = {
      Accept: options.accept ?? 'application/octet-stream',
      // Byte-exact checks need the bytes as stored, not a transfer-compressed form.
      'Accept-Encoding': 'identity',
    };
    if (options.range !== undefined) headers['Range'] = options.range;
    // The time limit covers waiting for the response headers only: a big body may take long.
    const waiting = new AbortController();
    const timer = setTimeout(() => waiting.abort(new Error(`no response within ${this.timeoutMs} ms`)), this.timeoutMs);
    const signal = options.signal === undefined ? waiting.signal : AbortSignal.any([options.signal, waiting.signal]);
    try {
      return await this.send('GET', path, {}, undefined, headers, signal);
    } finally {
      clearTimeout(timer);
    }
  }

  /** JSON metadata of a file or package (no octet-stream Accept): size, sha256, dl_filename, package_name … */
  async getContentMetadata(kind: ContentKind, id: number): Promise<Record<string, unknown>> {
    const path = `${this.dialect.resource(CONTENT_RESOURCE[kind])}/${id}`;
    const body = await this.requestJson('GET', path);
    if (!isRecord(body)) throw new AgentApiError(`GET ${path}`, 200, 'BAD_RESPONSE', 'response is not an object');
    return body;
  }

  /**
   * The reference agent's search for its task status row: criteria 5 (agent) and 6 (task),
   * forcedisplay 2 (the row id). Returns the row id, or null when the server has none.
   */
  async findTaskStatus(agentId: string | number, taskId: number): Promise<number | null> {
    const query = {
      'criteria[0][field]': '5',
      'criteria[0][searchtype]': 'contains',
      'criteria[0][value]': String(agentId),
      'criteria[1][field]': '6',
      'criteria[1][searchtype]': 'contains',
      'criteria[1][value]': String(taskId),
      forcedisplay: '2',
    };
    // The reference agent asks `search/PluginFlyvemdmTaskstatus/?criteria…`, trailing slash included.
    const body = await this.requestJson('GET', `search/${this.dialect.resource('Taskstatus')}/`, query);
    const data = isRecord(body) && Array.isArray(body['data']) ? body['data'] : [];
    const first = data[0] as Record<string, unknown> | undefined;
    const id = Number(first?.['2']);
    return Number.isSafeInteger(id) && id > 0 ? id : null;
  }

  /** PUT PluginMdmTaskstatus/<id> {"input": {"status": …, "reason"?: …}}. */
  async putTaskStatus(statusId: number, input: { status: string; reason?: string }): Promise<void> {
    await this.requestJson('PUT', `${this.dialect.resource('Taskstatus')}/${statusId}`, {}, { input });
  }

  /** "GET PluginMdmFile/7", for messages. */
  contentEndpoint(kind: ContentKind, id: number): string {
    return `GET ${this.dialect.resource(CONTENT_RESOURCE[kind])}/${id}`;
  }

  private async requestJson(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    query: Record<string, string> = {},
    body?: unknown,
    withSession = true,
    parseBody = true,
  ): Promise<unknown> {
    const endpoint = `${method} ${path}`;
    const signal = AbortSignal.timeout(this.timeoutMs);
    const response = await this.send(method, path, query, body, { Accept: 'application/json' }, signal, withSession);
    if (!response.ok) throw await AgentApiError.fromResponse(endpoint, response);
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw new AgentApiError(endpoint, response.status, 'NETWORK_ERROR', describeError(error));
    }
    if (!parseBody) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new AgentApiError(endpoint, response.status, 'BAD_RESPONSE', `response is not JSON: ${text.slice(0, 120)}`);
    }
  }

  private async send(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    query: Record<string, string>,
    body: unknown,
    extraHeaders: Record<string, string>,
    signal: AbortSignal | undefined,
    withSession = true,
  ): Promise<Response> {
    const endpoint = `${method} ${path}`;
    const url = new URL(path, this.baseUrl);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    if (withSession) {
      if (this.sessionToken === undefined) {
        throw new AgentApiError(endpoint, 0, 'NO_SESSION', 'no session: call initSession first');
      }
      if (this.dialect.sessionTokenIn === 'query') url.searchParams.set('session_token', this.sessionToken);
    }
    // Real agents send Content-Type: application/json on every request, bodiless ones included.
    const headers: Record<string, string> = { 'Content-Type': 'application/json', ...extraHeaders };
    if (withSession && this.dialect.sessionTokenIn === 'header') headers['Session-Token'] = this.sessionToken!;
    const init: RequestInit = { method, headers };
    if (body !== undefined) init.body = JSON.stringify(body);
    if (signal !== undefined) init.signal = signal;
    try {
      return await fetch(url, init);
    } catch (error) {
      throw new AgentApiError(endpoint, 0, 'NETWORK_ERROR', describeError(error));
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** fetch wraps the useful reason (ECONNREFUSED, timeout…) in `cause`. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error && cause.message) return `${error.message}: ${cause.message}`;
  return error.message;
}
