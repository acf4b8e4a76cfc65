// Every endpoint of the admin listener, defined once: method, path, and its schemas named by their
// export in the contract. The backend registers its handlers from this table
// (backend/http/route-table.ts: `adminRoute(app, 'agents.get', handler)`, the handler typed by the
// entry), the admin client derives one typed function per entry (admin-client.ts:
// `admin.agents.get({ params: { id } })`), and `npm run openapi` writes docs/admin-api.json from it.
// Adding an endpoint is one entry here plus its handler; test/api/admin-api/route-table.test.ts
// fails on a route registered and not listed here, or listed and not registered.
//
// Schemas are named, not imported: this file holds plain data only, so the console's bundle, which
// carries the client and this table, carries no TypeBox code. A name that is not a schema of the
// contract does not compile. (Once accounts exist, each entry also names its permission.)
import type { TSchema } from 'typebox';
import type * as Contract from './index.ts';

/** The contract's exports, as types. */
export type ContractSchemas = typeof Contract;
/** The name of a schema exported by the contract (`AgentList`, `IdParams` …). */
export type SchemaName = { [K in keyof ContractSchemas]: ContractSchemas[K] extends TSchema ? K : never }[keyof ContractSchemas];

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A body that is not JSON: bytes of this media type (an upload, a QR image, the event stream). */
export interface Bytes {
  contentType: string;
}

export interface AdminEndpoint {
  method: HttpMethod;
  /** The whole path, `:name` for a parameter (`/api/agents/:id`). */
  path: `/${string}`;
  /** One line for the API document. */
  summary: string;
  params?: SchemaName;
  querystring?: SchemaName;
  body?: SchemaName | Bytes;
  /** By status: the schema of the JSON answer, its bytes, or null for an empty one (204, a redirect). Errors besides these are `ApiErrorBody`. */
  response: Readonly<Record<number, SchemaName | Bytes | null>>;
}

const PNG = { contentType: 'image/png' } as const;
const SVG = { contentType: 'image/svg+xml' } as const;
const RAW = { contentType: 'application/octet-stream' } as const;

/** `group.name` entries become `admin.group.name(…)`; a name without a dot, `admin.name(…)`. */
export const adminRoutes = {
  // Console sign-in (outside /api: no admin token; the sign-in and sign-out posts only from the console's own page).
  openSignInLink: {
    method: 'GET',
    path: '/auth',
    summary:
      'One-time sign-in link (`?ticket=`): sets the session cookie and redirects to the console; a used or unknown ticket redirects to the sign-in page. The query is read without a schema, so a missing or repeated ticket lands on that page rather than on a 400.',
    response: { 302: null },
  },
  signIn: {
    method: 'POST',
    path: '/auth/sign-in',
    summary: 'The admin token or a sign-in link, exchanged for a new console session (its cookie)',
    body: 'SignInBody',
    response: { 200: 'SignInResult' },
  },
  signOut: {
    method: 'POST',
    path: '/auth/sign-out',
    summary: 'Ends the console session on the server and clears its cookie',
    response: { 200: 'SignOutResult' },
  },

  signInWithPassword: {
    method: 'POST',
    path: '/auth/password',
    summary:
      'An admin’s email and password, exchanged for a new console session (its cookie); throttled per address and per account',
    body: 'PasswordSignInBody',
    response: { 200: 'PasswordSignInResult' },
  },
  setUpOwner: {
    method: 'POST',
    path: '/auth/setup',
    summary: 'The one-time set-up link’s form: the owner’s email, name and password; signs in (410 once used)',
    body: 'OwnerSetupBody',
    response: { 200: 'PasswordSignInResult' },
  },

  accountInvitation: {
    method: 'GET',
    path: '/auth/invitation',
    summary: 'Whom an admin’s set-up link is for (410 saying why when it is used, expired or replaced)',
    querystring: 'AccountSetupQuery',
    response: { 200: 'AccountSetupInfo' },
  },
  acceptAccountInvitation: {
    method: 'POST',
    path: '/auth/invitation',
    summary: 'The invited admin’s set-up link’s form: their password (and name); uses the link and signs in',
    body: 'AccountSetupBody',
    response: { 200: 'PasswordSignInResult' },
  },

  me: {
    method: 'GET',
    path: '/api/me',
    summary: 'Who is calling: the account, how (session or API token) and the role the call acts with',
    response: { 200: 'Me' },
  },
  'tokens.list': {
    method: 'GET',
    path: '/api/tokens',
    summary: 'API tokens (the owner sees everyone’s, others their own), never the tokens themselves',
    response: { 200: 'ApiTokenList' },
  },
  'tokens.create': {
    method: 'POST',
    path: '/api/tokens',
    summary:
      'A personal API token with a role no higher than the caller’s and an optional lifetime; the token is in this answer only',
    body: 'ApiTokenCreate',
    response: { 201: 'ApiTokenCreated' },
  },
  'tokens.revoke': {
    method: 'POST',
    path: '/api/tokens/:id/revoke',
    summary: 'Revokes an API token at once (the data dir’s admin token cannot be: 409)',
    params: 'IdParams',
    response: { 200: 'ApiToken' },
  },

  'accounts.list': {
    method: 'GET',
    path: '/api/accounts',
    summary:
      'The admins: role, status (invited, active, disabled), last sign-in, and an invited one’s set-up link’s expiry and email',
    response: { 200: 'AccountList' },
  },
  'accounts.invite': {
    method: 'POST',
    path: '/api/accounts',
    summary:
      'Invites an admin by email with a role: the mail worker sends a set-up link (expiring, one use); with `no_email` the answer carries the link instead',
    body: 'AccountInviteBody',
    response: { 201: 'AccountInvited' },
  },
  'accounts.reinvite': {
    method: 'POST',
    path: '/api/accounts/:id/invitation',
    summary: 'A new set-up link for an invited admin (the previous one stops working), emailed or, with `no_email`, answered',
    params: 'IdParams',
    body: 'AccountReinviteBody',
    response: { 201: 'AccountInvited' },
  },
  'accounts.update': {
    method: 'PATCH',
    path: '/api/accounts/:id',
    summary: 'Changes an admin’s role (never your own; never the last owner’s)',
    params: 'IdParams',
    body: 'AccountUpdate',
    response: { 200: 'AccountEntry' },
  },
  'accounts.disable': {
    method: 'POST',
    path: '/api/accounts/:id/disable',
    summary:
      'Disables an admin: their console sessions end and their API tokens are refused (never yourself, never the last owner)',
    params: 'IdParams',
    response: { 200: 'AccountEntry' },
  },
  'accounts.enable': {
    method: 'POST',
    path: '/api/accounts/:id/enable',
    summary: 'Enables a disabled admin again (their tokens work again; they sign in anew)',
    params: 'IdParams',
    response: { 200: 'AccountEntry' },
  },
  'accounts.remove': {
    method: 'DELETE',
    path: '/api/accounts/:id',
    summary: 'Deletes an admin and their API tokens (never yourself, never the last owner: 409)',
    params: 'IdParams',
    response: { 204: null },
  },

  'audit.list': {
    method: 'GET',
    path: '/api/audit',
    summary: 'The audit trail, newest first: who (admin and API token, role), from where, did what to which object; filtered',
    querystring: 'AuditQuery',
    response: { 200: 'AuditList' },
  },
  'audit.export': {
    method: 'GET',
    path: '/api/audit/export',
    summary:
      "Every audit entry the filters match (those of GET /api/audit, no limit), newest first, streamed as a download: CSV (`format=csv`, the default; cells starting with = + - @ are prefixed with ') or JSON lines (`format=jsonl`, one AuditEntry a line, Content-Type application/x-ndjson)",
    querystring: 'AuditExportQuery',
    response: { 200: { contentType: 'text/csv' } },
  },

  consoleTicket: {
    method: 'POST',
    path: '/api/console-tickets',
    summary: 'A fresh one-time console sign-in link',
    response: { 201: 'ConsoleTicket' },
  },
  status: {
    method: 'GET',
    path: '/api/status',
    summary: 'URLs, ports, counts, broker, LAN addresses and warnings',
    response: { 200: 'ServerStatus' },
  },
  choosePublicHost: {
    method: 'POST',
    path: '/api/public-host',
    summary: 'Makes a LAN address of this machine the public host now',
    body: 'PublicHostBody',
    response: { 200: 'PublicHostResult' },
  },
  events: {
    method: 'GET',
    path: '/api/events',
    summary: 'Event history, newest first',
    querystring: 'EventsQuery',
    response: { 200: 'EventList' },
  },
  eventStream: {
    method: 'GET',
    path: '/api/events/stream',
    summary:
      'Server-Sent Events: every change as it happens (`Last-Event-ID` or `?after=` replays what came after); each frame is an `Event`, plus `agent` (the device-list row) for events naming an agent',
    querystring: 'EventStreamQuery',
    response: { 200: { contentType: 'text/event-stream' } },
  },

  'invitations.list': {
    method: 'GET',
    path: '/api/invitations',
    summary: 'Invitations, filtered and paged',
    querystring: 'InvitationFilter',
    response: { 200: 'InvitationPage' },
  },
  'invitations.create': {
    method: 'POST',
    path: '/api/invitations',
    summary: 'Invites an address (409 with the pending invitation unless `another`)',
    body: 'InvitationCreate',
    response: { 201: 'Invitation', 409: 'InvitationPendingError' },
  },
  'invitations.validate': {
    method: 'POST',
    path: '/api/invitations/validate',
    summary: 'Checks rows without creating anything',
    body: 'InvitationBulk',
    response: { 200: 'InvitationValidation' },
  },
  'invitations.createMany': {
    method: 'POST',
    path: '/api/invitations/bulk',
    summary: 'Creates many invitations, all or nothing',
    body: 'InvitationBulk',
    response: { 201: 'InvitationBulkCreated', 400: 'InvitationBulkError' },
  },
  'invitations.get': {
    method: 'GET',
    path: '/api/invitations/:id',
    summary: 'One invitation with its log of attempts and its events',
    params: 'IdParams',
    response: { 200: 'InvitationDetail' },
  },
  'invitations.qrPng': {
    method: 'GET',
    path: '/api/invitations/:id/qr.png',
    summary: "The invitation's QR code (PNG)",
    params: 'IdParams',
    querystring: 'QrQuery',
    response: { 200: PNG },
  },
  'invitations.qrSvg': {
    method: 'GET',
    path: '/api/invitations/:id/qr.svg',
    summary: "The invitation's QR code (SVG)",
    params: 'IdParams',
    response: { 200: SVG },
  },
  'invitations.revoke': {
    method: 'POST',
    path: '/api/invitations/:id/revoke',
    summary: 'Revokes a pending invitation',
    params: 'IdParams',
    response: { 200: 'Invitation' },
  },
  'invitations.remove': {
    method: 'DELETE',
    path: '/api/invitations/:id',
    summary: 'Deletes an invitation',
    params: 'IdParams',
    response: { 204: null },
  },
  'invitations.resend': {
    method: 'POST',
    path: '/api/invitations/:id/resend',
    summary: 'Emails it again: same link, same expiry',
    params: 'IdParams',
    response: { 202: 'Invitation' },
  },
  'invitations.simulate': {
    method: 'POST',
    path: '/api/invitations/:id/simulate',
    summary: 'Runs the device simulator against the invitation',
    params: 'IdParams',
    querystring: 'SimulateQuery',
    response: { 200: 'SimulateResult' },
  },

  'codes.list': { method: 'GET', path: '/api/codes', summary: 'Enrollment codes', response: { 200: 'CodeList' } },
  'codes.create': {
    method: 'POST',
    path: '/api/codes',
    summary: 'Creates an enrollment code',
    body: 'CodeCreate',
    response: { 201: 'EnrollmentCode' },
  },
  'codes.get': {
    method: 'GET',
    path: '/api/codes/:id',
    summary: 'One code with its log of uses and refusals',
    params: 'IdParams',
    response: { 200: 'CodeDetail' },
  },
  'codes.qrPng': {
    method: 'GET',
    path: '/api/codes/:id/qr.png',
    summary: "The code's QR code (PNG)",
    params: 'IdParams',
    querystring: 'QrQuery',
    response: { 200: PNG },
  },
  'codes.qrSvg': {
    method: 'GET',
    path: '/api/codes/:id/qr.svg',
    summary: "The code's QR code (SVG)",
    params: 'IdParams',
    response: { 200: SVG },
  },
  'codes.revoke': {
    method: 'POST',
    path: '/api/codes/:id/revoke',
    summary: 'Revokes a code',
    params: 'IdParams',
    response: { 200: 'EnrollmentCode' },
  },
  'codes.rotate': {
    method: 'POST',
    path: '/api/codes/:id/rotate',
    summary: 'Gives a code a new token (the old QR code stops working)',
    params: 'IdParams',
    response: { 200: 'EnrollmentCode' },
  },
  'codes.simulate': {
    method: 'POST',
    path: '/api/codes/:id/simulate',
    summary: 'Runs the device simulator as a person using the code',
    params: 'IdParams',
    querystring: 'SimulateQuery',
    body: 'CodeSimulateBody',
    response: { 200: 'CodeSimulateResult' },
  },

  'agents.list': { method: 'GET', path: '/api/agents', summary: 'Devices', response: { 200: 'AgentList' } },
  'agents.get': {
    method: 'GET',
    path: '/api/agents/:id',
    summary: 'One device with its inventory, positions and events',
    params: 'IdParams',
    response: { 200: 'AgentDetail' },
  },
  'agents.remove': {
    method: 'DELETE',
    path: '/api/agents/:id',
    summary: 'Deletes a device (its api_token is retired)',
    params: 'IdParams',
    response: { 204: null },
  },
  'agents.move': {
    method: 'PATCH',
    path: '/api/agents/:id',
    summary: 'Moves a device to another fleet (the agent is told with Command/Subscribe)',
    params: 'IdParams',
    body: 'AgentPatch',
    response: { 200: 'AgentMoved' },
  },
  'agents.command': {
    method: 'POST',
    path: '/api/agents/:id/commands',
    summary: 'Sends a command to the device over MQTT',
    params: 'IdParams',
    body: 'CommandBody',
    response: { 202: 'CommandSent' },
  },
  'agents.approve': {
    method: 'POST',
    path: '/api/agents/:id/approve',
    summary: 'Approves a device enrolled with a manual code',
    params: 'IdParams',
    response: { 200: 'AgentSummary' },
  },
  'agents.reject': {
    method: 'POST',
    path: '/api/agents/:id/reject',
    summary: 'Rejects a device enrolled with a manual code',
    params: 'IdParams',
    response: { 200: 'AgentSummary' },
  },
  'agents.approveMany': {
    method: 'POST',
    path: '/api/agents/approve',
    summary: 'Approves many devices: each approved or listed with why not',
    body: 'ApproveManyBody',
    response: { 200: 'ApproveManyResult' },
  },
  'agents.tasks': {
    method: 'GET',
    path: '/api/agents/:id/tasks',
    summary: "A device's tasks with their history",
    params: 'SafeIdParams',
    response: { 200: 'DeviceTaskList' },
  },

  'fleets.list': { method: 'GET', path: '/api/fleets', summary: 'Fleets', response: { 200: 'FleetList' } },
  'fleets.create': {
    method: 'POST',
    path: '/api/fleets',
    summary: 'Creates a fleet',
    body: 'FleetName',
    response: { 201: 'FleetRecord' },
  },
  'fleets.rename': {
    method: 'PATCH',
    path: '/api/fleets/:id',
    summary: 'Renames a fleet',
    params: 'IdParams',
    body: 'FleetName',
    response: { 200: 'FleetRecord' },
  },
  'fleets.remove': {
    method: 'DELETE',
    path: '/api/fleets/:id',
    summary: 'Deletes an empty, non-default fleet',
    params: 'IdParams',
    response: { 204: null },
  },

  'settings.get': { method: 'GET', path: '/api/settings', summary: 'Settings', response: { 200: 'Settings' } },
  'settings.update': {
    method: 'PATCH',
    path: '/api/settings',
    summary: "Changes settings (refused when an invitation's QR code would overflow)",
    body: 'SettingsPatch',
    response: { 200: 'Settings' },
  },

  'mail.status': { method: 'GET', path: '/api/mail/status', summary: 'The mail queue', response: { 200: 'MailStatus' } },
  'mail.retry': {
    method: 'POST',
    path: '/api/mail/retry',
    summary: 'Retries failed deliveries: all, one bulk batch, or the listed invitations',
    body: 'MailRetryBody',
    response: { 202: 'MailRetryResult' },
  },
  'mail.batch': {
    method: 'GET',
    path: '/api/mail/batches/:batch_id',
    summary: 'The deliveries of one bulk batch',
    params: 'MailBatchParams',
    response: { 200: 'MailBatch' },
  },
  'mail.settings': {
    method: 'GET',
    path: '/api/mail/settings',
    summary: 'Mail settings (secrets left out)',
    response: { 200: 'MailSettingsView' },
  },
  'mail.saveSettings': {
    method: 'PUT',
    path: '/api/mail/settings',
    summary: 'Saves the mail settings',
    body: 'MailSettingsPut',
    response: { 200: 'MailSettingsView' },
  },
  'mail.preview': {
    method: 'POST',
    path: '/api/mail/preview',
    summary: 'The invitation email as it would be sent',
    body: 'MailPreviewBody',
    response: { 200: 'MailPreview' },
  },
  'mail.test': {
    method: 'POST',
    path: '/api/mail/test',
    summary: "Sends a test email now; 502 with the server's answer on failure",
    body: 'MailTestBody',
    response: { 200: 'MailTestResult', 502: 'MailTestFailure' },
  },

  // Files and packages: the upload is the raw body, streamed to disk (a JSON schema cannot describe it).
  'files.list': { method: 'GET', path: '/api/files', summary: 'Files', response: { 200: 'StoredItemList' } },
  'files.upload': {
    method: 'POST',
    path: '/api/files',
    summary: 'Uploads a file: the raw body (Content-Type: application/octet-stream)',
    querystring: 'UploadQuery',
    body: RAW,
    response: { 201: 'StoredItem' },
  },
  'files.remove': {
    method: 'DELETE',
    path: '/api/files/:id',
    summary: 'Deletes a file',
    params: 'SafeIdParams',
    response: { 204: null },
  },
  'packages.list': { method: 'GET', path: '/api/packages', summary: 'Packages', response: { 200: 'StoredItemList' } },
  'packages.upload': {
    method: 'POST',
    path: '/api/packages',
    summary: 'Uploads a package (an APK is read; 422 ERROR_APK_UNREADABLE unless `if_unreadable=keep`)',
    querystring: 'UploadQuery',
    body: RAW,
    response: { 201: 'StoredItem' },
  },
  'packages.update': {
    method: 'PATCH',
    path: '/api/packages/:id',
    summary: "What the APK's manifest did not say, or says wrong",
    params: 'SafeIdParams',
    body: 'PackagePatch',
    response: { 200: 'StoredItem' },
  },
  'packages.remove': {
    method: 'DELETE',
    path: '/api/packages/:id',
    summary: 'Deletes a package',
    params: 'SafeIdParams',
    response: { 204: null },
  },

  'deployments.list': {
    method: 'GET',
    path: '/api/deployments',
    summary: 'Deployments with task counts and progress',
    querystring: 'DeploymentFilter',
    response: { 200: 'DeploymentList' },
  },
  'deployments.create': {
    method: 'POST',
    path: '/api/deployments',
    summary: 'Publishes a file or package to a fleet or a device',
    body: 'DeployBody',
    response: { 201: 'DeploymentDetail' },
  },
  'deployments.get': {
    method: 'GET',
    path: '/api/deployments/:id',
    summary: 'One deployment with every task and its history',
    params: 'SafeIdParams',
    response: { 200: 'DeploymentDetail' },
  },
  'deployments.remove': {
    method: 'DELETE',
    path: '/api/deployments/:id',
    summary: 'Ends a deployment; with remove_on_delete, the removal it published',
    params: 'SafeIdParams',
    response: { 200: 'Undeployed' },
  },

  'policies.catalogue': {
    method: 'GET',
    path: '/api/policies',
    summary: 'The policy catalogue',
    response: { 200: 'PolicyCatalogue' },
  },
  'policies.list': {
    method: 'GET',
    path: '/api/policy-assignments',
    summary: 'Every assignment (deployments included) with task counts and progress',
    querystring: 'AssignmentFilter',
    response: { 200: 'AssignmentList' },
  },
  'policies.set': {
    method: 'POST',
    path: '/api/policy-assignments',
    summary: 'Sets a value policy on a fleet or a device',
    body: 'AssignBody',
    response: { 201: 'DeploymentDetail' },
  },
  'policies.get': {
    method: 'GET',
    path: '/api/policy-assignments/:id',
    summary: 'One assignment with every task and its history',
    params: 'SafeIdParams',
    response: { 200: 'DeploymentDetail' },
  },
  'policies.unset': {
    method: 'DELETE',
    path: '/api/policy-assignments/:id',
    summary: 'Unsets a value policy (or undeploys a deployment)',
    params: 'SafeIdParams',
    response: { 200: 'Unassigned' },
  },
  'policies.ofAgent': {
    method: 'GET',
    path: '/api/agents/:id/policies',
    summary: "A device's tasks of active assignments and which value applies",
    params: 'SafeIdParams',
    response: { 200: 'EffectivePolicyList' },
  },
  'policies.compliance': {
    method: 'GET',
    path: '/api/compliance',
    summary: 'Each enrolled device: its tasks counted and its compliance state',
    querystring: 'ComplianceFilter',
    response: { 200: 'ComplianceList' },
  },
} as const satisfies Record<string, AdminEndpoint>;

export type AdminRoutes = typeof adminRoutes;
export type AdminRouteName = keyof AdminRoutes;
