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
// contract does not compile.
//
// Each entry also names the permission it needs (permissions.ts): the route table checks it before
// the handler runs (backend/http/route-table.ts), so no handler checks a role. An entry without
// one does not compile; `public` says a route is reached without signing in.
import type { TSchema } from 'typebox';
import type * as Contract from './index.ts';
import { OWNER_SETTINGS, type Permission, type RoutePermission } from './permissions.ts';
import type { AgentCommand } from './rules.ts';
import type { JobAction } from './bulk.ts';

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
  /** What the caller's role must hold (permissions.ts); checked by the route table before the handler. */
  permission: RoutePermission;
}

/** Each command sent to a device, by the permission it needs (every command is listed: a new one does not compile). */
export const COMMAND_PERMISSIONS = {
  ping: 'devices.ping',
  geolocate: 'devices.locate',
  inventory: 'devices.inventory',
  lock: 'devices.lock',
  unlock: 'devices.lock',
  wipe: 'devices.wipe',
  unenroll: 'devices.unenroll',
} as const satisfies Record<AgentCommand, Permission>;

/** Each bulk action, by the permission it needs: the single-device route's for the same act. */
export const JOB_PERMISSIONS = {
  ...COMMAND_PERMISSIONS,
  move: 'devices.move',
  assign_policy: 'policies.write',
  deploy: 'deployments.write',
  delete: 'devices.delete',
} as const satisfies Record<JobAction, Permission>;

/** The owner's settings (permissions.ts) a body may change: each needs settings.server. */
const ownerKeys = (keys: readonly (typeof OWNER_SETTINGS)[number][]) =>
  Object.fromEntries(keys.map((key) => [key, 'settings.server'])) as Record<string, 'settings.server'>;
/** PATCH /api/settings: all of them but the SMTP password and URL (set with the mail settings only). */
const OWNER_SETTING_KEYS = ownerKeys(OWNER_SETTINGS.filter((key) => key !== 'smtp_password' && key !== 'smtp_url'));
/** PUT /api/mail/settings: the SMTP server's. */
const OWNER_MAIL_KEYS = ownerKeys(OWNER_SETTINGS.filter((key) => key.startsWith('smtp_')));

const PNG = { contentType: 'image/png' } as const;
const SVG = { contentType: 'image/svg+xml' } as const;
const RAW = { contentType: 'application/octet-stream' } as const;
/** An export (issue 25): CSV, or JSON lines with `format=jsonl`. */
const EXPORT = { contentType: 'text/csv' } as const;

/** `group.name` entries become `admin.group.name(…)`; a name without a dot, `admin.name(…)`. */
export const adminRoutes = {
  // Console sign-in (outside /api: no admin token; the sign-in and sign-out posts only from the console's own page).
  openSignInLink: {
    method: 'GET',
    path: '/auth',
    permission: 'public',
    summary:
      'One-time sign-in link (`?ticket=`): sets the session cookie and redirects to the console; a used or unknown ticket redirects to the sign-in page. The query is read without a schema, so a missing or repeated ticket lands on that page rather than on a 400.',
    response: { 302: null },
  },
  signIn: {
    method: 'POST',
    path: '/auth/sign-in',
    permission: 'public',
    summary: 'The admin token or a sign-in link, exchanged for a new console session (its cookie)',
    body: 'SignInBody',
    response: { 200: 'SignInResult' },
  },
  signOut: {
    method: 'POST',
    path: '/auth/sign-out',
    permission: 'public',
    summary: 'Ends the console session on the server and clears its cookie',
    response: { 200: 'SignOutResult' },
  },

  signInWithPassword: {
    method: 'POST',
    path: '/auth/password',
    permission: 'public',
    summary:
      'An admin’s email and password, exchanged for a new console session (its cookie); throttled per address and per account',
    body: 'PasswordSignInBody',
    response: { 200: 'PasswordSignInResult' },
  },
  signInWithCode: {
    method: 'POST',
    path: '/auth/two-factor',
    permission: 'public',
    summary:
      'The second step of a password sign-in: a code of the authenticator app (each accepted once) or an unused recovery code (then used up); 410 once the challenge expired or took five wrong codes',
    body: 'TwoFactorSignInBody',
    response: { 200: 'SignedInResult' },
  },
  beginTwoFactorEnrolment: {
    method: 'POST',
    path: '/auth/two-factor/enrol',
    permission: 'public',
    summary:
      'Two-factor required and this admin has none: a new secret to add to the authenticator app (text, otpauth URL and QR code), before anything else',
    body: 'TwoFactorChallengeBody',
    response: { 200: 'TwoFactorSetup' },
  },
  confirmTwoFactorEnrolment: {
    method: 'POST',
    path: '/auth/two-factor/enrol/confirm',
    permission: 'public',
    summary: 'The enrolment at sign-in confirmed by a code: two-factor on, signed in, and ten recovery codes shown this once',
    body: 'TwoFactorSignInBody',
    response: { 200: 'TwoFactorEnrolled' },
  },
  setUpOwner: {
    method: 'POST',
    path: '/auth/setup',
    permission: 'public',
    summary: 'The one-time set-up link’s form: the owner’s email, name and password; signs in (410 once used)',
    body: 'OwnerSetupBody',
    response: { 200: 'PasswordSignInResult' },
  },

  accountInvitation: {
    method: 'GET',
    path: '/auth/invitation',
    permission: 'public',
    summary: 'Whom an admin’s set-up link is for (410 saying why when it is used, expired or replaced)',
    querystring: 'AccountSetupQuery',
    response: { 200: 'AccountSetupInfo' },
  },
  acceptAccountInvitation: {
    method: 'POST',
    path: '/auth/invitation',
    permission: 'public',
    summary: 'The invited admin’s set-up link’s form: their password (and name); uses the link and signs in',
    body: 'AccountSetupBody',
    response: { 200: 'PasswordSignInResult' },
  },

  me: {
    method: 'GET',
    path: '/api/me',
    permission: 'signed-in',
    summary: 'Who is calling: the account, how (session or API token) and the role the call acts with',
    response: { 200: 'Me' },
  },
  'tokens.list': {
    method: 'GET',
    path: '/api/tokens',
    permission: 'tokens.own',
    summary: 'API tokens (the owner sees everyone’s, others their own), never the tokens themselves',
    response: { 200: 'ApiTokenList' },
  },
  'tokens.create': {
    method: 'POST',
    path: '/api/tokens',
    permission: 'tokens.own',
    summary:
      'A personal API token with a role no higher than the caller’s and an optional lifetime; the token is in this answer only',
    body: 'ApiTokenCreate',
    response: { 201: 'ApiTokenCreated' },
  },
  'accounts.setScope': {
    method: 'PUT',
    path: '/api/accounts/:id/scope',
    permission: 'accounts.manage',
    summary:
      'Scopes an operator or observer to fleets (an empty list: every fleet); 400 for an owner or admin, or an unknown fleet',
    params: 'IdParams',
    body: 'AccountScopeBody',
    response: { 200: 'Account' },
  },
  'tokens.revoke': {
    method: 'POST',
    path: '/api/tokens/:id/revoke',
    permission: 'tokens.own',
    summary: 'Revokes an API token at once (the data dir’s admin token cannot be: 409)',
    params: 'IdParams',
    response: { 200: 'ApiToken' },
  },

  'twoFactor.status': {
    method: 'GET',
    path: '/api/me/two-factor',
    permission: 'signed-in',
    summary: 'One’s own two-factor sign-in: on or off, recovery codes left, whether the owner requires it',
    response: { 200: 'TwoFactorStatus' },
  },
  'twoFactor.setup': {
    method: 'POST',
    path: '/api/me/two-factor/setup',
    permission: 'signed-in',
    summary:
      'Starts enrolling an authenticator app: a new secret (text, otpauth URL, QR code), shown in this answer only; 409 while two-factor is on',
    response: { 200: 'TwoFactorSetup' },
  },
  'twoFactor.confirm': {
    method: 'POST',
    path: '/api/me/two-factor/confirm',
    permission: 'signed-in',
    summary: 'Confirms the enrolment with a code of the app: two-factor on, and ten single-use recovery codes shown this once',
    body: 'TwoFactorCodeBody',
    response: { 200: 'RecoveryCodes' },
  },
  'twoFactor.disable': {
    method: 'POST',
    path: '/api/me/two-factor/disable',
    permission: 'signed-in',
    summary: 'Turns one’s own two-factor off, with a current code or a recovery code (409 when the owner requires it)',
    body: 'TwoFactorCodeBody',
    response: { 200: 'TwoFactorStatus' },
  },
  'password.change': {
    method: 'POST',
    path: '/api/me/password',
    permission: 'signed-in',
    summary: 'Changes one’s own password (the current one given); every other session of the account ends',
    body: 'PasswordChangeBody',
    response: { 200: 'PasswordChanged' },
  },
  'sessions.list': {
    method: 'GET',
    path: '/api/sessions',
    permission: 'signed-in',
    summary:
      'One’s own console sessions: from which address and browser, when signed in, last seen, when each ends; the current one marked',
    response: { 200: 'AdminSessionList' },
  },
  'sessions.end': {
    method: 'DELETE',
    path: '/api/sessions/:id',
    permission: 'signed-in',
    summary: 'Ends one of one’s own console sessions at once (404 for another admin’s)',
    params: 'SessionIdParams',
    response: { 200: 'SessionsEnded' },
  },
  'sessions.endOthers': {
    method: 'DELETE',
    path: '/api/sessions',
    permission: 'signed-in',
    summary: 'Ends every console session of one’s own but the current one',
    response: { 200: 'SessionsEnded' },
  },
  'signInSettings.get': {
    method: 'GET',
    path: '/api/sign-in-settings',
    permission: 'settings.read',
    summary: 'The owner’s sign-in settings: two-factor required for everyone, session idle time and maximum age',
    response: { 200: 'SignInSettings' },
  },
  'signInSettings.update': {
    method: 'PATCH',
    path: '/api/sign-in-settings',
    permission: 'settings.server',
    summary: 'Changes the sign-in settings (any of them); recorded with before and after values',
    body: 'SignInSettingsPatch',
    response: { 200: 'SignInSettings' },
  },
  'accounts.list': {
    method: 'GET',
    path: '/api/accounts',
    permission: 'accounts.manage',
    summary:
      'The admins: role, status (invited, active, disabled), last sign-in, and an invited one’s set-up link’s expiry and email',
    response: { 200: 'AccountList' },
  },
  'accounts.invite': {
    method: 'POST',
    path: '/api/accounts',
    permission: 'accounts.manage',
    summary:
      'Invites an admin by email with a role: the mail worker sends a set-up link (expiring, one use); with `no_email` the answer carries the link instead',
    body: 'AccountInviteBody',
    response: { 201: 'AccountInvited' },
  },
  'accounts.reinvite': {
    method: 'POST',
    path: '/api/accounts/:id/invitation',
    permission: 'accounts.manage',
    summary: 'A new set-up link for an invited admin (the previous one stops working), emailed or, with `no_email`, answered',
    params: 'IdParams',
    body: 'AccountReinviteBody',
    response: { 201: 'AccountInvited' },
  },
  'accounts.update': {
    method: 'PATCH',
    path: '/api/accounts/:id',
    permission: 'accounts.manage',
    summary: 'Changes an admin’s role (never your own; never the last owner’s)',
    params: 'IdParams',
    body: 'AccountUpdate',
    response: { 200: 'AccountEntry' },
  },
  'accounts.disable': {
    method: 'POST',
    path: '/api/accounts/:id/disable',
    permission: 'accounts.manage',
    summary:
      'Disables an admin: their console sessions end and their API tokens are refused (never yourself, never the last owner)',
    params: 'IdParams',
    response: { 200: 'AccountEntry' },
  },
  'accounts.enable': {
    method: 'POST',
    path: '/api/accounts/:id/enable',
    permission: 'accounts.manage',
    summary: 'Enables a disabled admin again (their tokens work again; they sign in anew)',
    params: 'IdParams',
    response: { 200: 'AccountEntry' },
  },
  'accounts.resetTwoFactor': {
    method: 'POST',
    path: '/api/accounts/:id/two-factor/reset',
    summary:
      'Resets an admin’s two-factor sign-in (a lost phone): secret and recovery codes gone; they sign in with the password alone, or enrol again when it is required (not your own: 409)',
    permission: 'accounts.manage',
    params: 'IdParams',
    response: { 200: 'AccountEntry' },
  },
  'accounts.remove': {
    method: 'DELETE',
    path: '/api/accounts/:id',
    permission: 'accounts.manage',
    summary: 'Deletes an admin and their API tokens (never yourself, never the last owner: 409)',
    params: 'IdParams',
    response: { 204: null },
  },

  'audit.list': {
    method: 'GET',
    path: '/api/audit',
    permission: 'audit.read',
    summary: 'The audit trail, newest first: who (admin and API token, role), from where, did what to which object; filtered',
    querystring: 'AuditQuery',
    response: { 200: 'AuditList' },
  },
  'audit.export': {
    method: 'GET',
    path: '/api/audit/export',
    permission: 'audit.read',
    summary:
      "Every audit entry the filters match (those of GET /api/audit, no limit), newest first, streamed as a download: CSV (`format=csv`, the default; cells starting with = + - @ are prefixed with ') or JSON lines (`format=jsonl`, one AuditEntry a line, Content-Type application/x-ndjson)",
    querystring: 'AuditExportQuery',
    response: { 200: EXPORT },
  },

  consoleTicket: {
    method: 'POST',
    path: '/api/console-tickets',
    permission: 'accounts.manage',
    summary:
      'A fresh one-time console sign-in link, as the caller’s own account or (the owner only) as the admin `?as=EMAIL` names (404 for an unknown email)',
    querystring: 'ConsoleTicketQuery',
    response: { 201: 'ConsoleTicket' },
  },
  status: {
    method: 'GET',
    path: '/api/status',
    permission: 'status.read',
    summary: 'URLs, ports, counts, broker, LAN addresses and warnings',
    response: { 200: 'ServerStatus' },
  },
  choosePublicHost: {
    method: 'POST',
    path: '/api/public-host',
    permission: 'settings.server',
    summary: 'Makes a LAN address of this machine the public host now',
    body: 'PublicHostBody',
    response: { 200: 'PublicHostResult' },
  },
  events: {
    method: 'GET',
    path: '/api/events',
    permission: 'events.read',
    summary: 'Event history, newest first',
    querystring: 'EventsQuery',
    response: { 200: 'EventList' },
  },
  eventStream: {
    method: 'GET',
    path: '/api/events/stream',
    permission: 'events.read',
    summary:
      'Server-Sent Events: every change as it happens (`Last-Event-ID` or `?after=` replays what came after); each frame is an `Event`, plus `agent` (the device-list row) for events naming an agent',
    querystring: 'EventStreamQuery',
    response: { 200: { contentType: 'text/event-stream' } },
  },

  'invitations.list': {
    method: 'GET',
    path: '/api/invitations',
    permission: 'invitations.read',
    summary: 'Invitations, filtered and paged',
    querystring: 'InvitationFilter',
    response: { 200: 'InvitationPage' },
  },
  'invitations.create': {
    method: 'POST',
    path: '/api/invitations',
    permission: 'invitations.create',
    summary: 'Invites an address (409 with the pending invitation unless `another`)',
    body: 'InvitationCreate',
    response: { 201: 'Invitation', 409: 'InvitationPendingError' },
  },
  'invitations.validate': {
    method: 'POST',
    path: '/api/invitations/validate',
    permission: 'invitations.create',
    summary: 'Checks rows without creating anything',
    body: 'InvitationBulk',
    response: { 200: 'InvitationValidation' },
  },
  'invitations.createMany': {
    method: 'POST',
    path: '/api/invitations/bulk',
    permission: 'invitations.create',
    summary: 'Creates many invitations, all or nothing',
    body: 'InvitationBulk',
    response: { 201: 'InvitationBulkCreated', 400: 'InvitationBulkError' },
  },
  'invitations.export': {
    method: 'GET',
    path: '/api/invitations/export',
    permission: 'invitations.read',
    summary:
      "Every invitation the list's filters match (no paging), newest first, without tokens or links: status, fleet, dates, the device enrolled, refused attempts, the email's delivery. Streamed as a download by keyset pages: CSV (`format=csv`, the default; cells starting with = + - @ are prefixed with ') or JSON lines (`format=jsonl`, one object a line, Content-Type application/x-ndjson); the file name says what and when.",
    querystring: 'InvitationExportQuery',
    response: { 200: EXPORT },
  },
  'invitations.get': {
    method: 'GET',
    path: '/api/invitations/:id',
    permission: 'invitations.read',
    summary: 'One invitation with its log of attempts and its events',
    params: 'IdParams',
    response: { 200: 'InvitationDetail' },
  },
  'invitations.qrPng': {
    method: 'GET',
    path: '/api/invitations/:id/qr.png',
    permission: 'invitations.read',
    summary: "The invitation's QR code (PNG)",
    params: 'IdParams',
    querystring: 'QrQuery',
    response: { 200: PNG },
  },
  'invitations.qrSvg': {
    method: 'GET',
    path: '/api/invitations/:id/qr.svg',
    permission: 'invitations.read',
    summary: "The invitation's QR code (SVG)",
    params: 'IdParams',
    response: { 200: SVG },
  },
  'invitations.revoke': {
    method: 'POST',
    path: '/api/invitations/:id/revoke',
    permission: 'invitations.revoke',
    summary: 'Revokes a pending invitation',
    params: 'IdParams',
    response: { 200: 'Invitation' },
  },
  'invitations.remove': {
    method: 'DELETE',
    path: '/api/invitations/:id',
    permission: 'invitations.delete',
    summary: 'Deletes an invitation',
    params: 'IdParams',
    response: { 204: null },
  },
  'invitations.resend': {
    method: 'POST',
    path: '/api/invitations/:id/resend',
    permission: 'invitations.resend',
    summary: 'Emails it again: same link, same expiry',
    params: 'IdParams',
    response: { 202: 'Invitation' },
  },
  'invitations.simulate': {
    method: 'POST',
    path: '/api/invitations/:id/simulate',
    permission: 'simulator.run',
    summary: 'Runs the device simulator against the invitation',
    params: 'IdParams',
    querystring: 'SimulateQuery',
    response: { 200: 'SimulateResult' },
  },

  'codes.list': {
    method: 'GET',
    path: '/api/codes',
    summary: 'Enrollment codes',
    permission: 'codes.read',
    response: { 200: 'CodeList' },
  },
  'codes.create': {
    method: 'POST',
    path: '/api/codes',
    permission: 'codes.write',
    summary: 'Creates an enrollment code',
    body: 'CodeCreate',
    response: { 201: 'EnrollmentCode' },
  },
  'codes.export': {
    method: 'GET',
    path: '/api/codes/export',
    permission: 'codes.read',
    summary:
      "Every enrollment code (of one fleet, or all), newest first, without tokens or links: status, domains, uses, devices, approvals waiting, refusals, dates. Streamed as a download by keyset pages: CSV (`format=csv`, the default; cells starting with = + - @ are prefixed with ') or JSON lines (`format=jsonl`, one object a line, Content-Type application/x-ndjson); the file name says what and when.",
    querystring: 'CodeExportQuery',
    response: { 200: EXPORT },
  },
  'codes.exportUses': {
    method: 'GET',
    path: '/api/code-uses/export',
    permission: 'codes.read',
    summary:
      "The codes' logs (one code's with `code_id`), newest first: each use and refusal with its message, email, serial, address and the device it enrolled. Streamed as a download by keyset pages: CSV (`format=csv`, the default; cells starting with = + - @ are prefixed with ') or JSON lines (`format=jsonl`, one object a line, Content-Type application/x-ndjson); the file name says what and when.",
    querystring: 'CodeUseExportQuery',
    response: { 200: EXPORT },
  },
  'codes.get': {
    method: 'GET',
    path: '/api/codes/:id',
    permission: 'codes.read',
    summary: 'One code with its log of uses and refusals',
    params: 'IdParams',
    response: { 200: 'CodeDetail' },
  },
  'codes.qrPng': {
    method: 'GET',
    path: '/api/codes/:id/qr.png',
    permission: 'codes.read',
    summary: "The code's QR code (PNG)",
    params: 'IdParams',
    querystring: 'QrQuery',
    response: { 200: PNG },
  },
  'codes.qrSvg': {
    method: 'GET',
    path: '/api/codes/:id/qr.svg',
    permission: 'codes.read',
    summary: "The code's QR code (SVG)",
    params: 'IdParams',
    response: { 200: SVG },
  },
  'codes.revoke': {
    method: 'POST',
    path: '/api/codes/:id/revoke',
    permission: 'codes.revoke',
    summary: 'Revokes a code',
    params: 'IdParams',
    response: { 200: 'EnrollmentCode' },
  },
  'codes.rotate': {
    method: 'POST',
    path: '/api/codes/:id/rotate',
    permission: 'codes.write',
    summary: 'Gives a code a new token (the old QR code stops working)',
    params: 'IdParams',
    response: { 200: 'EnrollmentCode' },
  },
  'codes.simulate': {
    method: 'POST',
    path: '/api/codes/:id/simulate',
    permission: 'simulator.run',
    summary: 'Runs the device simulator as a person using the code',
    params: 'IdParams',
    querystring: 'SimulateQuery',
    body: 'CodeSimulateBody',
    response: { 200: 'CodeSimulateResult' },
  },

  'agents.list': {
    method: 'GET',
    path: '/api/agents',
    summary:
      'Devices; `where` filters them by the device filter language (docs/where.md), `view` by a saved view, `fleet` by a fleet',
    permission: 'devices.read',
    querystring: 'AgentListQuery',
    response: { 200: 'AgentList' },
  },
  'agents.export': {
    method: 'GET',
    path: '/api/agents/export',
    permission: 'devices.read',
    summary:
      "Every device the devices table's filters match (fleet, status, type, online, compliance, search), by id, with the inventory's fields (model, OS, serial, IMEI, battery, storage, memory, apps), person, fleet, status, last contact, online and compliance. Streamed as a download by keyset pages: CSV (`format=csv`, the default; cells starting with = + - @ are prefixed with ') or JSON lines (`format=jsonl`, one object a line, Content-Type application/x-ndjson); the file name says what and when.",
    querystring: 'DeviceExportQuery',
    response: { 200: EXPORT },
  },
  'agents.get': {
    method: 'GET',
    path: '/api/agents/:id',
    permission: 'devices.read',
    summary: 'One device with its inventory, positions and events',
    params: 'IdParams',
    response: { 200: 'AgentDetail' },
  },
  'agents.remove': {
    method: 'DELETE',
    path: '/api/agents/:id',
    permission: 'devices.delete',
    summary: 'Deletes a device (its api_token is retired)',
    params: 'IdParams',
    response: { 204: null },
  },
  'agents.move': {
    method: 'PATCH',
    path: '/api/agents/:id',
    permission: 'devices.move',
    summary: 'Moves a device to another fleet (the agent is told with Command/Subscribe)',
    params: 'IdParams',
    body: 'AgentPatch',
    response: { 200: 'AgentMoved' },
  },
  'agents.command': {
    method: 'POST',
    path: '/api/agents/:id/commands',
    permission: { field: 'command', values: COMMAND_PERMISSIONS },
    summary: 'Sends a command to the device over MQTT',
    params: 'IdParams',
    body: 'CommandBody',
    response: { 202: 'CommandSent' },
  },
  'agents.approve': {
    method: 'POST',
    path: '/api/agents/:id/approve',
    permission: 'devices.approve',
    summary: 'Approves a device enrolled with a manual code',
    params: 'IdParams',
    response: { 200: 'AgentSummary' },
  },
  'agents.reject': {
    method: 'POST',
    path: '/api/agents/:id/reject',
    permission: 'devices.approve',
    summary: 'Rejects a device enrolled with a manual code',
    params: 'IdParams',
    response: { 200: 'AgentSummary' },
  },
  'agents.approveMany': {
    method: 'POST',
    path: '/api/agents/approve',
    permission: 'devices.approve',
    summary: 'Approves many devices: each approved or listed with why not',
    body: 'ApproveManyBody',
    response: { 200: 'ApproveManyResult' },
  },
  'agents.tasks': {
    method: 'GET',
    path: '/api/agents/:id/tasks',
    permission: 'devices.read',
    summary: "A device's tasks with their history",
    params: 'SafeIdParams',
    response: { 200: 'DeviceTaskList' },
  },

  'jobs.create': {
    method: 'POST',
    path: '/api/jobs',
    permission: { field: 'action', values: JOB_PERMISSIONS },
    summary:
      'Starts a bulk job: one action on a selection of devices (ids, or a filter resolved in the caller’s fleets); answers at once with the job. Unenroll, wipe and delete need expected_count (409 when the selection differs)',
    body: 'JobBody',
    response: { 202: 'Job' },
  },
  'jobs.list': {
    method: 'GET',
    path: '/api/jobs',
    permission: 'devices.read',
    summary: 'Bulk jobs, newest first, with their counts',
    querystring: 'JobListQuery',
    response: { 200: 'JobList' },
  },
  'jobs.get': {
    method: 'GET',
    path: '/api/jobs/:id',
    permission: 'devices.read',
    summary: 'One bulk job with each device’s result (sent, answered, offline, done, refused, failed)',
    params: 'SafeIdParams',
    querystring: 'JobResultsQuery',
    response: { 200: 'JobDetail' },
  },

  'jobs.export': {
    method: 'GET',
    path: '/api/jobs/export',
    permission: 'devices.read',
    summary:
      "Every bulk job the caller sees (those acting on a device of its fleets), newest first: action, state, selection, params, devices, each result's count, actor, error, times. Streamed as a download by keyset pages: CSV (`format=csv`, the default; cells starting with = + - @ are prefixed with ') or JSON lines (`format=jsonl`, one object a line, Content-Type application/x-ndjson); the file name says what and when.",
    querystring: 'JobExportQuery',
    response: { 200: EXPORT },
  },
  'jobs.exportResults': {
    method: 'GET',
    path: '/api/job-results/export',
    permission: 'devices.read',
    summary:
      "Each device's result in the bulk jobs (one job's with `job_id`, one status with `status`), of the caller's fleets, newest job first: device, fleet, status, reason, when sent and answered. Streamed as a download by keyset pages: CSV (`format=csv`, the default; cells starting with = + - @ are prefixed with ') or JSON lines (`format=jsonl`, one object a line, Content-Type application/x-ndjson); the file name says what and when.",
    querystring: 'JobResultExportQuery',
    response: { 200: EXPORT },
  },

  'views.list': {
    method: 'GET',
    path: '/api/views',
    summary: 'Saved device views, each with how many devices match now (within your fleet scope)',
    permission: 'devices.read',
    response: { 200: 'DeviceViewList' },
  },
  'views.get': {
    method: 'GET',
    path: '/api/views/:id',
    summary: 'One saved device view with its live count',
    permission: 'devices.read',
    params: 'IdParams',
    response: { 200: 'DeviceView' },
  },
  'views.create': {
    method: 'POST',
    path: '/api/views',
    summary: 'Saves a device view: a name (unique) and an expression of the filter language',
    permission: 'fleets.write',
    body: 'DeviceViewBody',
    response: { 201: 'DeviceView' },
  },
  'views.update': {
    method: 'PATCH',
    path: '/api/views/:id',
    summary: 'Renames a view or changes its expression (its assignments follow the new members)',
    permission: 'fleets.write',
    params: 'IdParams',
    body: 'DeviceViewPatch',
    response: { 200: 'DeviceView' },
  },
  'views.assignments': {
    method: 'GET',
    path: '/api/views/:id/assignments',
    summary: "The policies and deployments assigned to a view, each with its member devices' tasks counted",
    permission: 'policies.read',
    params: 'IdParams',
    response: { 200: 'ViewAssignmentList' },
  },
  'views.assign': {
    method: 'POST',
    path: '/api/views/:id/assignments',
    summary:
      "Assigns a policy or deployment to a view: carried to each member on its own topic, opened when a device enters the view, canceled when it leaves (the device's own value ranks above a view's, a view's above the fleet's)",
    permission: 'policies.write',
    params: 'IdParams',
    body: 'ViewAssignBody',
    response: { 201: 'ViewAssignment' },
  },
  'views.unassign': {
    method: 'DELETE',
    path: '/api/view-assignments/:id',
    summary: "Removes a view's assignment from every member (a deployment's removal published with remove_on_delete)",
    permission: 'policies.write',
    params: 'IdParams',
    response: { 200: 'ViewAssignment' },
  },
  'views.remove': {
    method: 'DELETE',
    path: '/api/views/:id',
    summary: 'Deletes a view (refused while a policy or deployment is assigned to it)',
    permission: 'fleets.write',
    params: 'IdParams',
    response: { 204: null },
  },

  'fleets.list': {
    method: 'GET',
    path: '/api/fleets',
    summary: 'Fleets',
    permission: 'fleets.read',
    response: { 200: 'FleetList' },
  },
  'fleets.create': {
    method: 'POST',
    path: '/api/fleets',
    permission: 'fleets.write',
    summary: 'Creates a fleet',
    body: 'FleetName',
    response: { 201: 'FleetRecord' },
  },
  'fleets.rename': {
    method: 'PATCH',
    path: '/api/fleets/:id',
    permission: 'fleets.write',
    summary: 'Renames a fleet',
    params: 'IdParams',
    body: 'FleetName',
    response: { 200: 'FleetRecord' },
  },
  'fleets.remove': {
    method: 'DELETE',
    path: '/api/fleets/:id',
    permission: 'fleets.write',
    summary: 'Deletes an empty, non-default fleet',
    params: 'IdParams',
    response: { 204: null },
  },

  'settings.get': {
    method: 'GET',
    path: '/api/settings',
    summary: 'Settings',
    permission: 'settings.read',
    response: { 200: 'Settings' },
  },
  'settings.update': {
    method: 'PATCH',
    path: '/api/settings',
    permission: { permission: 'settings.write', keys: OWNER_SETTING_KEYS },
    summary: "Changes settings (refused when an invitation's QR code would overflow)",
    body: 'SettingsPatch',
    response: { 200: 'Settings' },
  },

  'alerts.rules': {
    method: 'GET',
    path: '/api/alerts/rules',
    permission: 'alerts.read',
    summary: 'Alert rules, each with its channels and open incidents',
    response: { 200: 'AlertRuleList' },
  },
  'alerts.createRule': {
    method: 'POST',
    path: '/api/alerts/rules',
    permission: 'alerts.write',
    summary: 'Creates an alert rule (emails and webhooks optional: incidents show in the console either way); evaluated at once',
    body: 'AlertRuleCreate',
    response: { 201: 'AlertRule' },
  },
  'alerts.updateRule': {
    method: 'PATCH',
    path: '/api/alerts/rules/:id',
    permission: 'alerts.write',
    summary:
      'Changes an alert rule (enable, disable, threshold, fleet, channels); disabling resolves its open incidents without notice',
    params: 'IdParams',
    body: 'AlertRulePatch',
    response: { 200: 'AlertRule' },
  },
  'alerts.deleteRule': {
    method: 'DELETE',
    path: '/api/alerts/rules/:id',
    permission: 'alerts.write',
    summary: 'Deletes an alert rule and its incidents',
    params: 'IdParams',
    response: { 200: 'AlertRule' },
  },
  'alerts.incidents': {
    method: 'GET',
    path: '/api/alerts/incidents',
    permission: 'alerts.read',
    summary: 'Incidents, newest first: open, resolved, or both; of one rule',
    querystring: 'AlertIncidentsQuery',
    response: { 200: 'AlertIncidentList' },
  },
  'alerts.evaluate': {
    method: 'POST',
    path: '/api/alerts/evaluate',
    permission: 'alerts.write',
    summary: 'Evaluates every enabled rule now (they are evaluated each minute and on events anyway)',
    response: { 200: 'AlertEvaluation' },
  },
  'webhooks.list': {
    method: 'GET',
    path: '/api/webhooks',
    permission: 'alerts.read',
    summary: 'Webhooks (secrets shown by their last four characters only), each with its last delivery',
    response: { 200: 'WebhookList' },
  },
  'webhooks.create': {
    method: 'POST',
    path: '/api/webhooks',
    permission: 'alerts.write',
    summary: 'Adds a webhook (an http or https URL); without a secret the server draws one and shows it this once',
    body: 'WebhookCreate',
    response: { 201: 'WebhookCreated' },
  },
  'webhooks.update': {
    method: 'PATCH',
    path: '/api/webhooks/:id',
    permission: 'alerts.write',
    summary: 'Changes a webhook: URL, name, secret, enabled',
    params: 'IdParams',
    body: 'WebhookPatch',
    response: { 200: 'Webhook' },
  },
  'webhooks.delete': {
    method: 'DELETE',
    path: '/api/webhooks/:id',
    permission: 'alerts.write',
    summary: 'Deletes a webhook and its delivery log (rules stop notifying it)',
    params: 'IdParams',
    response: { 200: 'Webhook' },
  },
  'webhooks.test': {
    method: 'POST',
    path: '/api/webhooks/:id/test',
    permission: 'alerts.write',
    summary: 'Queues a test event to the webhook (signed, retried like any delivery); answers the queued delivery',
    params: 'IdParams',
    response: { 202: 'WebhookDelivery' },
  },
  'webhooks.deliveries': {
    method: 'GET',
    path: '/api/webhooks/:id/deliveries',
    permission: 'alerts.read',
    summary: 'The webhook’s delivery log, newest first: state, attempts, response code and time, next retry',
    params: 'IdParams',
    querystring: 'WebhookDeliveriesQuery',
    response: { 200: 'WebhookDeliveryList' },
  },
  'mail.status': {
    method: 'GET',
    path: '/api/mail/status',
    summary: 'The mail queue',
    permission: 'mail.read',
    response: { 200: 'MailStatus' },
  },
  'mail.retry': {
    method: 'POST',
    path: '/api/mail/retry',
    permission: 'invitations.resend',
    summary: 'Retries failed deliveries: all, one bulk batch, or the listed invitations',
    body: 'MailRetryBody',
    response: { 202: 'MailRetryResult' },
  },
  'mail.batch': {
    method: 'GET',
    path: '/api/mail/batches/:batch_id',
    permission: 'mail.read',
    summary: 'The deliveries of one bulk batch',
    params: 'MailBatchParams',
    response: { 200: 'MailBatch' },
  },
  'mail.settings': {
    method: 'GET',
    path: '/api/mail/settings',
    permission: 'mail.read',
    summary: 'Mail settings (secrets left out)',
    response: { 200: 'MailSettingsView' },
  },
  'mail.saveSettings': {
    method: 'PUT',
    path: '/api/mail/settings',
    permission: { permission: 'settings.write', keys: OWNER_MAIL_KEYS },
    summary: 'Saves the mail settings',
    body: 'MailSettingsPut',
    response: { 200: 'MailSettingsView' },
  },
  'mail.preview': {
    method: 'POST',
    path: '/api/mail/preview',
    permission: 'mail.read',
    summary: 'The invitation email as it would be sent',
    body: 'MailPreviewBody',
    response: { 200: 'MailPreview' },
  },
  'mail.test': {
    method: 'POST',
    path: '/api/mail/test',
    permission: 'settings.write',
    summary: "Sends a test email now; 502 with the server's answer on failure",
    body: 'MailTestBody',
    response: { 200: 'MailTestResult', 502: 'MailTestFailure' },
  },

  // Files and packages: the upload is the raw body, streamed to disk (a JSON schema cannot describe it).
  'files.list': {
    method: 'GET',
    path: '/api/files',
    summary: 'Files',
    permission: 'files.read',
    response: { 200: 'StoredItemList' },
  },
  'files.upload': {
    method: 'POST',
    path: '/api/files',
    permission: 'files.write',
    summary: 'Uploads a file: the raw body (Content-Type: application/octet-stream)',
    querystring: 'UploadQuery',
    body: RAW,
    response: { 201: 'StoredItem' },
  },
  'files.remove': {
    method: 'DELETE',
    path: '/api/files/:id',
    permission: 'files.write',
    summary: 'Deletes a file',
    params: 'SafeIdParams',
    response: { 204: null },
  },
  'packages.list': {
    method: 'GET',
    path: '/api/packages',
    summary: 'Packages',
    permission: 'files.read',
    response: { 200: 'StoredItemList' },
  },
  'packages.upload': {
    method: 'POST',
    path: '/api/packages',
    permission: 'files.write',
    summary: 'Uploads a package (an APK is read; 422 ERROR_APK_UNREADABLE unless `if_unreadable=keep`)',
    querystring: 'UploadQuery',
    body: RAW,
    response: { 201: 'StoredItem' },
  },
  'packages.update': {
    method: 'PATCH',
    path: '/api/packages/:id',
    permission: 'files.write',
    summary: "What the APK's manifest did not say, or says wrong",
    params: 'SafeIdParams',
    body: 'PackagePatch',
    response: { 200: 'StoredItem' },
  },
  'packages.remove': {
    method: 'DELETE',
    path: '/api/packages/:id',
    permission: 'files.write',
    summary: 'Deletes a package',
    params: 'SafeIdParams',
    response: { 204: null },
  },

  'deployments.list': {
    method: 'GET',
    path: '/api/deployments',
    permission: 'deployments.read',
    summary: 'The deployment kinds of GET /api/policy-assignments (kind=deployment): an alias',
    querystring: 'DeploymentFilter',
    response: { 200: 'DeploymentList' },
  },
  'deployments.create': {
    method: 'POST',
    path: '/api/deployments',
    permission: 'deployments.write',
    summary:
      'Publishes a file or package to a fleet or a device: an alias of POST /api/policy-assignments (deployApp, deployFile)',
    body: 'DeployBody',
    response: { 201: 'DeploymentDetail' },
  },
  'deployments.get': {
    method: 'GET',
    path: '/api/deployments/:id',
    permission: 'deployments.read',
    summary: 'One assignment with every task and its history (an alias of GET /api/policy-assignments/:id)',
    params: 'SafeIdParams',
    response: { 200: 'DeploymentDetail' },
  },
  'deployments.remove': {
    method: 'DELETE',
    path: '/api/deployments/:id',
    permission: 'deployments.write',
    summary:
      'Ends an assignment; with remove_on_delete, the removal it published (an alias of DELETE /api/policy-assignments/:id)',
    params: 'SafeIdParams',
    response: { 200: 'Undeployed' },
  },

  'policies.catalogue': {
    method: 'GET',
    path: '/api/policies',
    permission: 'policies.read',
    summary: 'The policy catalogue',
    response: { 200: 'PolicyCatalogue' },
  },
  'policies.list': {
    method: 'GET',
    path: '/api/policy-assignments',
    permission: 'policies.read',
    summary: 'Every assignment (deployments included) with task counts and progress',
    querystring: 'AssignmentFilter',
    response: { 200: 'AssignmentList' },
  },
  'policies.set': {
    method: 'POST',
    path: '/api/policy-assignments',
    permission: 'policies.write',
    summary: 'Sets a policy on a fleet or a device: a value, or a deployment kind (an item id, or what to remove)',
    body: 'AssignBody',
    response: { 201: 'DeploymentDetail' },
  },
  'policies.exportResults': {
    method: 'GET',
    path: '/api/policy-results/export',
    permission: 'policies.read',
    summary:
      "Each device's task of the assignments (deployments and policies) the filters match, by task id: status, reason, and a package's install verified against the inventory; `assignment_id` one assignment's, `agent_id` one device's. Streamed as a download by keyset pages: CSV (`format=csv`, the default; cells starting with = + - @ are prefixed with ') or JSON lines (`format=jsonl`, one object a line, Content-Type application/x-ndjson); the file name says what and when.",
    querystring: 'ResultExportQuery',
    response: { 200: EXPORT },
  },
  'policies.get': {
    method: 'GET',
    path: '/api/policy-assignments/:id',
    permission: 'policies.read',
    summary: 'One assignment with every task and its history',
    params: 'SafeIdParams',
    response: { 200: 'DeploymentDetail' },
  },
  'policies.unset': {
    method: 'DELETE',
    path: '/api/policy-assignments/:id',
    permission: 'policies.write',
    summary: 'Unsets a policy (a deployment: undeployed, its removal published with remove_on_delete)',
    params: 'SafeIdParams',
    response: { 200: 'Unassigned' },
  },
  'policies.ofAgent': {
    method: 'GET',
    path: '/api/agents/:id/policies',
    permission: 'policies.read',
    summary: "A device's tasks of active assignments and which value applies",
    params: 'SafeIdParams',
    response: { 200: 'EffectivePolicyList' },
  },
  'policies.compliance': {
    method: 'GET',
    path: '/api/compliance',
    permission: 'policies.read',
    summary: 'Each enrolled device: its tasks counted and its compliance state',
    querystring: 'ComplianceFilter',
    response: { 200: 'ComplianceList' },
  },
  'reports.get': {
    method: 'GET',
    path: '/api/reports/:report',
    permission: 'devices.read',
    summary:
      'A report over the last `days` days (UTC, today included), for one fleet or every fleet the caller sees: enrollments, online, compliance, os, models or deployments, one value per series and day',
    params: 'ReportParams',
    querystring: 'ReportQuery',
    response: { 200: 'Report' },
  },
} as const satisfies Record<string, AdminEndpoint>;

export type AdminRoutes = typeof adminRoutes;
export type AdminRouteName = keyof AdminRoutes;
