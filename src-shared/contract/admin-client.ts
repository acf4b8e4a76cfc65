// The one admin HTTP client: the console, the CLI, the tests and the bench call the admin API
// through it. fetch only, and type-only imports of the contract, so the browser bundle carries
// no schema code and Node 22 needs nothing besides its own fetch.
import type { AgentDetail, AgentMoved, AgentSummary, ApproveManyResult, CommandSent } from './agents.ts';
import type { AgentPatch } from './commands.ts';
import type { CodeCreate, CodeDetail, EnrollmentCode } from './codes.ts';
import type { ApiErrorBody } from './errors.ts';
import type { EventList } from './events.ts';
import type {
  AssignmentFilter,
  DeployBody,
  Deployment,
  DeploymentDetail,
  DeploymentFilter,
  DeviceTask,
  Undeployed,
} from './deployments.ts';
import type { PackagePatch, StoredItem, StoredKind, UploadQuery } from './files.ts';
import type { AssignBody, Assignment, DeviceCompliance, EffectivePolicy, PolicyCatalogueEntry, Unassigned } from './policies.ts';
import type { Fleet, FleetRecord } from './fleets.ts';
import type {
  Invitation,
  InvitationBulk,
  InvitationBulkCreated,
  InvitationCreate,
  InvitationDetail,
  InvitationFilter,
  InvitationPage,
  InvitationValidation,
} from './invitations.ts';
import type {
  MailBatch,
  MailPreview,
  MailPreviewBody,
  MailRetryBody,
  MailRetryResult,
  MailSettingsPut,
  MailSettingsView,
  MailStatus,
  MailTestResult,
} from './mail.ts';
import type { AgentCommand } from './rules.ts';
import type { Settings, SettingsPatch } from './settings.ts';
import type { CodeSimulateResult, SimulateResult } from './simulate.ts';
import type {
  ApiToken,
  ApiTokenCreate,
  ApiTokenCreated,
  ApiTokenList,
  AuditList,
  AuditQuery,
  Me,
  OwnerSetupBody,
  PasswordSignInResult,
} from './accounts.ts';
import type { ConsoleTicket, PublicHostResult, ServerStatus, SignInResult, SignOutResult } from './status.ts';

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

export type SimulatedPhone = 'android' | 'apple';
const collection = (kind: StoredKind) => (kind === 'file' ? '/files' : '/packages');

export function adminClient(options: AdminClientOptions = {}) {
  const baseUrl = options.baseUrl ?? '';

  /** Any admin call: `path` is below the origin (`/api/…`, `/auth/…`). 204 gives undefined. */
  async function call<T>(method: string, path: string, { body, content, query, headers, signal }: CallOptions = {}): Promise<T> {
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
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }
  const api = <T>(method: string, path: string, callOptions?: CallOptions) => call<T>(method, `/api${path}`, callOptions);
  const get = <T>(path: string, signal?: AbortSignal, query?: Query) => api<T>('GET', path, { signal, query });
  const post = <T>(path: string, body?: unknown, query?: Query) => api<T>('POST', path, { body, query });

  return {
    call,
    /** The console's sign-in page: the admin token or a sign-in link, exchanged for the session cookie. */
    signIn: (credential: string) => call<SignInResult>('POST', '/auth/sign-in', { body: { credential } }),
    /** Ends the console's session on the server. */
    signOut: () => call<SignOutResult>('POST', '/auth/sign-out'),
    status: (signal?: AbortSignal) => get<ServerStatus>('/status', signal),
    /** A fresh one-time link that opens the console signed in. */
    consoleTicket: () => post<ConsoleTicket>('/console-tickets'),
    choosePublicHost: (host: string) => post<PublicHostResult>('/public-host', { host }),
    events: (limit?: number, signal?: AbortSignal) => get<EventList>('/events', signal, { limit }),
    /** The console's sign-in by email and password (a session cookie for that account). */
    signInWithPassword: (email: string, password: string) =>
      call<PasswordSignInResult>('POST', '/auth/password', { body: { email, password } }),
    /** The one-time set-up link's form: the owner's email, name and password. */
    setUpOwner: (input: OwnerSetupBody) => call<PasswordSignInResult>('POST', '/auth/setup', { body: input }),
    /** Who is calling: the account, its role, and the API token used if any. */
    me: (signal?: AbortSignal) => get<Me>('/me', signal),
    tokens: {
      list: (signal?: AbortSignal) => get<ApiTokenList>('/tokens', signal),
      /** The token is in this answer only. */
      create: (input: ApiTokenCreate) => post<ApiTokenCreated>('/tokens', input),
      revoke: (id: number) => post<ApiToken>(`/tokens/${id}/revoke`),
    },
    /** The audit trail, newest first. */
    audit: (filter: AuditQuery = {}, signal?: AbortSignal) => get<AuditList>('/audit', signal, { ...filter }),

    invitations: {
      list: (filter: InvitationFilter = {}, signal?: AbortSignal) => get<InvitationPage>('/invitations', signal, { ...filter }),
      get: (id: number, signal?: AbortSignal) => get<InvitationDetail>(`/invitations/${id}`, signal),
      create: (input: InvitationCreate) => post<Invitation>('/invitations', input),
      validate: (bulk: InvitationBulk) => post<InvitationValidation>('/invitations/validate', bulk),
      createMany: (bulk: InvitationBulk) => post<InvitationBulkCreated>('/invitations/bulk', bulk),
      revoke: (id: number) => post<Invitation>(`/invitations/${id}/revoke`),
      /** Emails it again: same link, same expiry. */
      resend: (id: number) => post<Invitation>(`/invitations/${id}/resend`),
      remove: (id: number) => api<void>('DELETE', `/invitations/${id}`),
      simulate: (id: number, type?: SimulatedPhone) => post<SimulateResult>(`/invitations/${id}/simulate`, undefined, { type }),
    },

    codes: {
      list: (signal?: AbortSignal) => get<Items<EnrollmentCode>>('/codes', signal),
      get: (id: number, signal?: AbortSignal) => get<CodeDetail>(`/codes/${id}`, signal),
      create: (input: CodeCreate) => post<EnrollmentCode>('/codes', input),
      revoke: (id: number) => post<EnrollmentCode>(`/codes/${id}/revoke`),
      rotate: (id: number) => post<EnrollmentCode>(`/codes/${id}/rotate`),
      simulate: (id: number, type?: SimulatedPhone, email?: string) =>
        post<CodeSimulateResult>(`/codes/${id}/simulate`, email ? { email } : {}, { type }),
    },

    agents: {
      list: (signal?: AbortSignal) => get<Items<AgentSummary>>('/agents', signal),
      get: (id: number, signal?: AbortSignal) => get<AgentDetail>(`/agents/${id}`, signal),
      remove: (id: number) => api<void>('DELETE', `/agents/${id}`),
      approve: (id: number) => post<AgentSummary>(`/agents/${id}/approve`),
      reject: (id: number) => post<AgentSummary>(`/agents/${id}/reject`),
      approveMany: (ids: number[]) => post<ApproveManyResult>('/agents/approve', { ids }),
      command: (id: number, command: AgentCommand) => post<CommandSent>(`/agents/${id}/commands`, { command }),
      /** Moves it to another fleet (by id or name); the agent is told with Command/Subscribe. */
      move: (id: number, to: AgentPatch) => api<AgentMoved>('PATCH', `/agents/${id}`, { body: to }),
      tasks: (id: number, signal?: AbortSignal) => get<Items<DeviceTask>>(`/agents/${id}/tasks`, signal),
    },

    fleets: {
      list: (signal?: AbortSignal) => get<Items<Fleet>>('/fleets', signal),
      create: (name: string) => post<FleetRecord>('/fleets', { name }),
      rename: (id: number, name: string) => api<FleetRecord>('PATCH', `/fleets/${id}`, { body: { name } }),
      remove: (id: number) => api<void>('DELETE', `/fleets/${id}`),
    },

    settings: {
      get: (signal?: AbortSignal) => get<Settings>('/settings', signal),
      update: (changes: SettingsPatch) => api<Settings>('PATCH', '/settings', { body: changes }),
    },

    mail: {
      status: (signal?: AbortSignal) => get<MailStatus>('/mail/status', signal),
      retry: (which: MailRetryBody = {}) => post<MailRetryResult>('/mail/retry', which),
      batch: (batchId: string, signal?: AbortSignal) => get<MailBatch>(`/mail/batches/${encodeURIComponent(batchId)}`, signal),
      settings: (signal?: AbortSignal) => get<MailSettingsView>('/mail/settings', signal),
      saveSettings: (changes: MailSettingsPut) => api<MailSettingsView>('PUT', '/mail/settings', { body: changes }),
      preview: (templates: MailPreviewBody = {}) => post<MailPreview>('/mail/preview', templates),
      test: (to: string) => post<MailTestResult>('/mail/test', { to }),
    },

    /** Files and packages: `stored('file')`, `stored('package')`. */
    stored: (kind: StoredKind) => ({
      list: (signal?: AbortSignal) => get<StoredItem[]>(collection(kind), signal),
      /** The content is the raw body; Node streams it (give content-length in `headers`). */
      upload: (content: RequestBody, query: UploadQuery, headers: Record<string, string> = {}) =>
        api<StoredItem>('POST', collection(kind), {
          content,
          query: { ...query },
          headers: { 'content-type': 'application/octet-stream', ...headers },
        }),
      remove: (id: number) => api<void>('DELETE', `${collection(kind)}/${id}`),
    }),
    /** What the APK's manifest did not say, or says wrong. */
    updatePackage: (id: number, changes: PackagePatch) => api<StoredItem>('PATCH', `/packages/${id}`, { body: changes }),

    deployments: {
      list: (filter: DeploymentFilter = {}, signal?: AbortSignal) =>
        get<Items<Deployment>>('/deployments', signal, { ...filter }),
      get: (id: number, signal?: AbortSignal) => get<DeploymentDetail>(`/deployments/${id}`, signal),
      create: (deploy: DeployBody) => post<DeploymentDetail>('/deployments', deploy),
      /** Ends it; with remove_on_delete, the removal it published. */
      remove: (id: number) => api<Undeployed>('DELETE', `/deployments/${id}`),
    },

    policies: {
      catalogue: (signal?: AbortSignal) => get<Items<PolicyCatalogueEntry>>('/policies', signal),
      list: (filter: AssignmentFilter = {}, signal?: AbortSignal) =>
        get<Items<Assignment>>('/policy-assignments', signal, { ...filter }),
      get: (id: number, signal?: AbortSignal) => get<DeploymentDetail>(`/policy-assignments/${id}`, signal),
      set: (assignment: AssignBody) => post<DeploymentDetail>('/policy-assignments', assignment),
      /** Unsets a value policy (or undeploys a deployment). */
      unset: (id: number) => api<Unassigned>('DELETE', `/policy-assignments/${id}`),
      /** A device's tasks of active assignments and which value applies. */
      ofAgent: (agentId: number, signal?: AbortSignal) => get<Items<EffectivePolicy>>(`/agents/${agentId}/policies`, signal),
      compliance: (fleetId?: number, signal?: AbortSignal) =>
        get<Items<DeviceCompliance>>('/compliance', signal, fleetId === undefined ? {} : { fleet_id: fleetId }),
    },
  };
}

export type AdminClient = ReturnType<typeof adminClient>;
