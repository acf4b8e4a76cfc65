// Every state-changing admin route leaves an audit entry (issue 22, items 4 and 7): this test walks
// the route table (src-shared/contract/admin-routes.ts) and, for every route that is not a GET,
// calls it successfully over real HTTP against a real backend and SQLite file and checks that an
// entry with the expected action, actor and address was written. A route added without a case
// here fails with what to add. Then: refused calls (400, 403, 404, 409) and a change undone after
// its audit entry was written inside its transaction leave no entry.
import { Readable } from 'node:stream';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRoutes, type AdminRouteName } from '../../../src-shared/contract/admin-routes.ts';
import { simulateEnrollment } from '../../../src-main/device/simulate.ts';
import { enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { callFrom, type Answer } from '../../helpers/from-address.ts';

let t: TestBackend;
let adminUrl: string;
/** The backend's clock: moved 31 s before each authenticator code, as a code is accepted once per 30 s step. */
let clock = Date.now();
const codeOf = (secret: string) => {
  clock += 31_000;
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: clock });
};

beforeAll(async () => {
  t = await startTestBackend({ ownerName: 'Ana Ruiz', simulate: (request) => simulateEnrollment(request), now: () => clock });
  adminUrl = t.backend.info.admin_url;
});
afterAll(async () => {
  await t?.stop();
});

type Entry = {
  id: number;
  actor: string;
  token_name: string | null;
  address: string | null;
  action: string;
  target_kind: string | null;
  target_id: number | null;
  changes: Record<string, { before: unknown; after: unknown }> | null;
};

const ADDRESS = '127.0.0.3';
const sameOrigin = { 'sec-fetch-site': 'same-origin' };
const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;
const cookieOf = (answer: Answer) => /mdm_console=([^;]*)/.exec(String(answer.headers['set-cookie']))?.[1];
/** The admin API with the data dir's token, from ADDRESS. */
const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> =>
  callFrom(ADDRESS, `${adminUrl}${path}`, {
    method,
    headers: {
      // A console session's cookie, or the data dir's token.
      ...(headers.cookie ? {} : { authorization: `Bearer ${t.backend.info.admin_token}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const upload = async (kind: 'files' | 'packages', name: string): Promise<Answer> => {
  const described = kind === 'packages' ? '&if_unreadable=keep&package_name=org.example.app&version_code=1' : '';
  const response = await fetch(`${adminUrl}/api/${kind}?name=${name}${described}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body: Readable.toWeb(Readable.from([Buffer.from('content')])) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  const text = await response.text();
  return { status: response.status, headers: {}, text, body: JSON.parse(text) };
};
const entriesAfter = async (id: number): Promise<Entry[]> => {
  const rows = (await t.sql.all('SELECT * FROM audit_log WHERE id > ? ORDER BY id', [id])) as Array<
    Entry & { changes: string | null }
  >;
  return rows.map((row) => ({ ...row, changes: row.changes === null ? null : JSON.parse(row.changes) }));
};
const lastId = async () => ((await t.sql.get('SELECT coalesce(max(id), 0) AS id FROM audit_log')) as { id: number }).id;

/** What the cases share: ids made by earlier cases. */
const made: Record<string, number> = {};
/** The owner's console session for the routes of one's own account (two-factor, password, sessions). */
let session = '';
let secret = '';
let ownerPassword = 'a long enough password';
/** The admin API with the owner's console session (from the console's own page). */
const own = (method: string, path: string, body?: unknown, cookie = session) =>
  call(method, path, body, { ...sameOrigin, cookie: `mdm_console=${cookie}` });
const passwordSignIn = (email: string, password: string) => call('POST', '/auth/password', { email, password }, sameOrigin);

interface Case {
  /** Makes the call; its answer must be a success (2xx). */
  run: () => Promise<Answer>;
  /** The audit action it records. */
  action: string;
  /** The actor when it is not the owner through the data dir's token (sign-in and set-up). */
  actor?: string;
  /** The address when the call is not made from ADDRESS (fetch streams an upload from 127.0.0.1). */
  address?: string;
  /** Fields whose before/after the entry must show. */
  changes?: Record<string, { before: unknown; after: unknown }>;
}

// In the order they run (later cases use what earlier ones made).
const CASES: Partial<Record<AdminRouteName, Case>> = {
  setUpOwner: {
    run: async () => {
      const answer = await call(
        'POST',
        '/auth/setup',
        {
          token: tokenOf(t.backend.info.setup_url!),
          email: 'ana@example.org',
          display_name: 'Ana Ruiz',
          password: 'a long enough password',
        },
        sameOrigin,
      );
      return answer;
    },
    action: 'account.owner_set_up',
    actor: 'Ana Ruiz',
  },
  signInWithPassword: {
    run: async () => {
      const answer = await passwordSignIn('ana@example.org', ownerPassword);
      session = cookieOf(answer) ?? '';
      return answer;
    },
    action: 'admin.signed_in',
    actor: 'Ana Ruiz',
  },
  'twoFactor.setup': {
    run: async () => {
      const answer = await own('POST', '/api/me/two-factor/setup');
      secret = answer.body?.secret;
      return answer;
    },
    action: 'account.two_factor_enrolment_started',
  },
  'twoFactor.confirm': {
    run: () => own('POST', '/api/me/two-factor/confirm', { code: codeOf(secret) }),
    action: 'account.two_factor_enabled',
  },
  signInWithCode: {
    run: async () => {
      const first = await passwordSignIn('ana@example.org', ownerPassword);
      return call('POST', '/auth/two-factor', { challenge: first.body?.challenge, code: codeOf(secret) }, sameOrigin);
    },
    action: 'admin.signed_in',
  },
  'twoFactor.disable': {
    run: () => own('POST', '/api/me/two-factor/disable', { code: codeOf(secret) }),
    action: 'account.two_factor_disabled',
  },
  'password.change': {
    run: async () => {
      const answer = await own('POST', '/api/me/password', {
        current_password: ownerPassword,
        new_password: 'a new long password',
      });
      if (answer.status === 200) ownerPassword = 'a new long password';
      return answer;
    },
    action: 'account.password_changed',
  },
  'sessions.endOthers': {
    run: async () => {
      await passwordSignIn('ana@example.org', ownerPassword);
      return own('DELETE', '/api/sessions');
    },
    action: 'admin.sessions_ended',
  },
  'sessions.end': {
    run: async () => {
      await passwordSignIn('ana@example.org', ownerPassword);
      const other = (await own('GET', '/api/sessions')).body.items.find((item: { current: boolean }) => !item.current);
      return own('DELETE', `/api/sessions/${other?.id}`);
    },
    action: 'admin.sessions_ended',
  },
  'signInSettings.update': {
    run: () => call('PATCH', '/api/sign-in-settings', { require_two_factor: true }),
    action: 'settings.sign_in_updated',
    changes: { require_two_factor: { before: false, after: true } },
  },
  beginTwoFactorEnrolment: {
    run: async () => {
      // An admin without two-factor signs in while it is required: they enrol before anything else.
      const invited = await call('POST', '/api/accounts', { email: 'cy@example.org', role: 'admin', no_email: true });
      (made as Record<string, unknown>).cy = invited.body?.account?.id;
      await call(
        'POST',
        '/auth/invitation',
        { token: tokenOf(invited.body.setup_url), password: 'cy long password' },
        sameOrigin,
      );
      const first = await passwordSignIn('cy@example.org', 'cy long password');
      (made as Record<string, unknown>).challenge = first.body?.challenge;
      const answer = await call('POST', '/auth/two-factor/enrol', { challenge: first.body?.challenge }, sameOrigin);
      (made as Record<string, unknown>).cySecret = answer.body?.secret;
      return answer;
    },
    action: 'account.two_factor_enrolment_started',
    actor: 'cy@example.org',
  },
  confirmTwoFactorEnrolment: {
    run: async () => {
      const { challenge, cySecret } = made as Record<string, unknown>;
      const answer = await call(
        'POST',
        '/auth/two-factor/enrol/confirm',
        { challenge, code: codeOf(String(cySecret)) },
        sameOrigin,
      );
      await call('PATCH', '/api/sign-in-settings', { require_two_factor: false });
      return answer;
    },
    action: 'account.two_factor_enabled',
    actor: 'cy@example.org',
  },
  signIn: {
    run: () => call('POST', '/auth/sign-in', { credential: t.backend.info.admin_token }, sameOrigin),
    action: 'admin.signed_in',
    actor: 'Ana Ruiz',
  },
  signOut: {
    run: () => call('POST', '/auth/sign-out', undefined, { ...sameOrigin, cookie: `mdm_console=${session}` }),
    action: 'admin.signed_out',
    actor: 'Ana Ruiz',
  },
  'tokens.create': {
    run: async () => {
      const answer = await call('POST', '/api/tokens', { name: 'ci-bot', role: 'admin' });
      made.token = answer.body?.id;
      return answer;
    },
    action: 'account.token_created',
  },
  'tokens.revoke': { run: () => call('POST', `/api/tokens/${made.token}/revoke`), action: 'account.token_revoked' },
  'accounts.invite': {
    run: async () => {
      const answer = await call('POST', '/api/accounts', { email: 'bo@example.org', role: 'operator', no_email: true });
      made.account = answer.body?.account?.id;
      made.setupUrl = answer.body?.setup_url;
      return answer;
    },
    action: 'account.invited',
  },
  'accounts.reinvite': {
    run: async () => {
      const answer = await call('POST', `/api/accounts/${made.account}/invitation`, { no_email: true });
      (made as Record<string, unknown>).setupUrl = answer.body?.setup_url;
      return answer;
    },
    action: 'account.reinvited',
  },
  acceptAccountInvitation: {
    run: () =>
      call(
        'POST',
        '/auth/invitation',
        { token: tokenOf(String((made as Record<string, unknown>).setupUrl)), password: 'another long password' },
        sameOrigin,
      ),
    action: 'account.invitation_accepted',
    actor: 'bo@example.org',
  },
  'accounts.update': {
    run: () => call('PATCH', `/api/accounts/${made.account}`, { role: 'observer' }),
    action: 'account.role_changed',
    changes: { role: { before: 'operator', after: 'observer' } },
  },
  'accounts.disable': { run: () => call('POST', `/api/accounts/${made.account}/disable`), action: 'account.disabled' },
  'accounts.enable': { run: () => call('POST', `/api/accounts/${made.account}/enable`), action: 'account.enabled' },
  'accounts.setScope': {
    run: async () => {
      await call('PATCH', `/api/accounts/${made.account}`, { role: 'operator' });
      return call('PUT', `/api/accounts/${made.account}/scope`, { fleet_ids: [1] });
    },
    action: 'account.scope_changed',
  },
  'accounts.resetTwoFactor': {
    run: () => call('POST', `/api/accounts/${String((made as Record<string, unknown>).cy)}/two-factor/reset`),
    action: 'account.two_factor_reset',
    changes: { two_factor: { before: true, after: false } },
  },
  'accounts.remove': { run: () => call('DELETE', `/api/accounts/${made.account}`), action: 'account.deleted' },
  consoleTicket: { run: () => call('POST', '/api/console-tickets'), action: 'admin.sign_in_link_issued' },
  'fleets.create': {
    run: async () => {
      const answer = await call('POST', '/api/fleets', { name: 'Sales' });
      made.fleet = answer.body?.id;
      return answer;
    },
    action: 'fleet.created',
  },
  'fleets.rename': {
    run: () => call('PATCH', `/api/fleets/${made.fleet}`, { name: 'Field sales' }),
    action: 'fleet.renamed',
    changes: { name: { before: 'Sales', after: 'Field sales' } },
  },
  'views.create': {
    run: async () => {
      const answer = await call('POST', '/api/views', { name: 'Old Android', where: 'type=android os<10' });
      made.view = answer.body?.id;
      return answer;
    },
    action: 'view.created',
  },
  'views.update': {
    run: () => call('PATCH', `/api/views/${made.view}`, { where: 'os<11' }),
    action: 'view.updated',
    changes: { where: { before: 'type=android os<10', after: 'os<11' } },
  },
  'views.assign': {
    run: async () => {
      const answer = await call('POST', `/api/views/${made.view}/assignments`, { policy: 'disableCamera', value: true });
      made.viewAssignment = answer.body?.id;
      return answer;
    },
    action: 'view.assigned',
  },
  'views.unassign': { run: () => call('DELETE', `/api/view-assignments/${made.viewAssignment}`), action: 'view.unassigned' },
  'invitations.create': {
    run: async () => {
      const answer = await call('POST', '/api/invitations', { email: 'carol@example.com', send_email: false });
      made.invitation = answer.body?.id;
      return answer;
    },
    action: 'invitation.created',
  },
  'invitations.createMany': {
    run: () => call('POST', '/api/invitations/bulk', { invitations: [{ email: 'dan@example.com' }], send_email: false }),
    action: 'invitation.created',
  },
  'invitations.resend': { run: () => call('POST', `/api/invitations/${made.invitation}/resend`), action: 'mail.queued' },
  'invitations.simulate': {
    run: async () => {
      const other = await call('POST', '/api/invitations', { email: 'eve@example.com', send_email: false });
      return call('POST', `/api/invitations/${other.body.id}/simulate`);
    },
    action: 'invitation.simulated',
  },
  'invitations.revoke': {
    run: () => call('POST', `/api/invitations/${made.invitation}/revoke`),
    action: 'invitation.revoked',
    changes: { status: { before: 'pending', after: 'revoked' } },
  },
  'invitations.remove': { run: () => call('DELETE', `/api/invitations/${made.invitation}`), action: 'invitation.deleted' },
  'codes.create': {
    run: async () => {
      const answer = await call('POST', '/api/codes', { name: 'Lobby', approval: 'manual' });
      made.code = answer.body?.id;
      return answer;
    },
    action: 'code.created',
  },
  'codes.simulate': {
    run: async () => {
      const answer = await call('POST', `/api/codes/${made.code}/simulate`, {});
      made.pending = answer.body?.agent_id;
      return answer;
    },
    action: 'code.simulated',
  },
  'agents.approve': {
    run: async () => {
      const pending = (await call('GET', '/api/agents')).body.items.filter(
        (a: { enroll_status: string }) => a.enroll_status === 'pending_approval',
      );
      return call('POST', `/api/agents/${pending[0]?.id}/approve`);
    },
    action: 'agent.approved',
  },
  'agents.approveMany': {
    run: async () => {
      await call('POST', `/api/codes/${made.code}/simulate`, {});
      const pending = (await call('GET', '/api/agents')).body.items.filter(
        (a: { enroll_status: string }) => a.enroll_status === 'pending_approval',
      );
      return call('POST', '/api/agents/approve', { ids: [pending[0]?.id] });
    },
    action: 'agent.approved',
  },
  'agents.reject': {
    run: async () => {
      await call('POST', `/api/codes/${made.code}/simulate`, {});
      const pending = (await call('GET', '/api/agents')).body.items.filter(
        (a: { enroll_status: string }) => a.enroll_status === 'pending_approval',
      );
      return call('POST', `/api/agents/${pending[0]?.id}/reject`);
    },
    action: 'agent.rejected',
  },
  'codes.rotate': { run: () => call('POST', `/api/codes/${made.code}/rotate`), action: 'code.rotated' },
  'codes.revoke': { run: () => call('POST', `/api/codes/${made.code}/revoke`), action: 'code.revoked' },
  'agents.command': {
    run: async () => {
      const invitation = (await call('POST', '/api/invitations', { email: 'finn@example.com', send_email: false })).body;
      const { created } = await enrollByHand(t.apiUrl, invitation);
      made.agent = Number(created.body.id);
      return call('POST', `/api/agents/${made.agent}/commands`, { command: 'lock' });
    },
    action: 'agent.command',
    changes: { locked: { before: false, after: true } },
  },
  'jobs.create': {
    run: () => call('POST', '/api/jobs', { action: 'unlock', selection: { ids: [made.agent] } }),
    action: 'job.started',
  },
  'agents.move': {
    run: () => call('PATCH', `/api/agents/${made.agent}`, { fleet_id: made.fleet }),
    action: 'agent.fleet_changed',
    changes: { fleet: { before: 'Default fleet', after: 'Field sales' } },
  },
  'policies.set': {
    run: async () => {
      const answer = await call('POST', '/api/policy-assignments', {
        policy: 'disableCamera',
        value: true,
        fleet_id: made.fleet,
      });
      made.assignment = answer.body?.id;
      return answer;
    },
    action: 'deployment.created',
    changes: { disableCamera: { before: null, after: true } },
  },
  'policies.unset': {
    run: () => call('DELETE', `/api/policy-assignments/${made.assignment}`),
    action: 'deployment.removed',
    changes: { disableCamera: { before: true, after: null } },
  },
  'files.upload': {
    run: async () => {
      const answer = await upload('files', 'notes.txt');
      made.file = answer.body?.id;
      return answer;
    },
    action: 'file.added',
    address: '127.0.0.1',
  },
  'packages.upload': {
    run: async () => {
      const answer = await upload('packages', 'app.apk');
      made.package = answer.body?.id;
      return answer;
    },
    action: 'package.added',
    address: '127.0.0.1',
  },
  'packages.update': {
    run: () => call('PATCH', `/api/packages/${made.package}`, { label: 'Field app' }),
    action: 'package.updated',
    changes: { label: { before: null, after: 'Field app' } },
  },
  'deployments.create': {
    run: async () => {
      const answer = await call('POST', '/api/deployments', { kind: 'file', item_id: made.file, fleet_id: made.fleet });
      made.deployment = answer.body?.id;
      return answer;
    },
    action: 'deployment.created',
  },
  'deployments.remove': { run: () => call('DELETE', `/api/deployments/${made.deployment}`), action: 'deployment.removed' },
  'files.remove': { run: () => call('DELETE', `/api/files/${made.file}`), action: 'file.removed' },
  'packages.remove': { run: () => call('DELETE', `/api/packages/${made.package}`), action: 'package.removed' },
  'agents.remove': { run: () => call('DELETE', `/api/agents/${made.agent}`), action: 'agent.deleted' },
  'fleets.remove': { run: () => call('DELETE', `/api/fleets/${made.fleet}`), action: 'fleet.deleted' },
  'views.remove': { run: () => call('DELETE', `/api/views/${made.view}`), action: 'view.deleted' },
  'settings.update': {
    run: () => call('PATCH', '/api/settings', { helpdesk_name: 'IT desk' }),
    action: 'settings.updated',
    changes: { helpdesk_name: { before: '', after: 'IT desk' } },
  },
  'mail.saveSettings': {
    run: () => call('PUT', '/api/mail/settings', { smtp_host: '127.0.0.1', smtp_port: 9, smtp_password: 'hunter2-secret' }),
    action: 'settings.updated',
    changes: { smtp_host: { before: '', after: '127.0.0.1' }, smtp_password: { before: null, after: '[redacted]' } },
  },
  'mail.retry': {
    run: async () => {
      // An email that cannot be delivered (nothing listens on port 9), then retried once its first
      // attempt has failed (failed, or queued again for a later retry: either has an error).
      const invitation = (await call('POST', '/api/invitations', { email: 'gus@example.com', send_email: true })).body;
      let delivery: { state: string; error: string | null } | null = null;
      for (let i = 0; i < 200 && !delivery?.error; i++) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 50));
        delivery = (await call('GET', `/api/invitations/${invitation.id}`)).body.delivery;
      }
      if (!delivery?.error) {
        const text = `the email's first attempt never failed: delivery ${JSON.stringify(delivery)}`;
        return { status: 599, headers: {}, text, body: undefined };
      }
      return call('POST', '/api/mail/retry', { invitation_ids: [invitation.id] });
    },
    action: 'mail.queued',
  },
  'mail.test': {
    run: async () => {
      await call('PUT', '/api/mail/settings', { smtp_host: '' });
      return call('POST', '/api/mail/test', { to: 'admin@example.org' });
    },
    action: 'mail.test',
  },
  'webhooks.create': {
    run: async () => {
      // Nothing listens on port 9: deliveries are queued and retried, which this test does not wait for.
      const answer = await call('POST', '/api/webhooks', { url: 'http://127.0.0.1:9/hook', secret: 'hunter2-secret-webhook' });
      made.webhook = answer.body?.id;
      return answer;
    },
    action: 'webhook.created',
    changes: { secret: { before: null, after: '[redacted]' }, url: { before: null, after: 'http://127.0.0.1:9/hook' } },
  },
  'webhooks.update': {
    run: () => call('PATCH', `/api/webhooks/${made.webhook}`, { name: 'Ops hook' }),
    action: 'webhook.updated',
    changes: { name: { before: '127.0.0.1:9', after: 'Ops hook' } },
  },
  'webhooks.test': { run: () => call('POST', `/api/webhooks/${made.webhook}/test`), action: 'webhook.test' },
  'alerts.createRule': {
    run: async () => {
      const answer = await call('POST', '/api/alerts/rules', {
        kind: 'device_silent',
        threshold: 3,
        webhook_ids: [made.webhook!],
      });
      made.rule = answer.body?.id;
      return answer;
    },
    action: 'alert.rule_created',
  },
  'alerts.updateRule': {
    run: () => call('PATCH', `/api/alerts/rules/${made.rule}`, { threshold: 5 }),
    action: 'alert.rule_updated',
    changes: { threshold: { before: 3, after: 5 } },
  },
  'alerts.deleteRule': { run: () => call('DELETE', `/api/alerts/rules/${made.rule}`), action: 'alert.rule_deleted' },
  'webhooks.delete': { run: () => call('DELETE', `/api/webhooks/${made.webhook}`), action: 'webhook.deleted' },
  // Last: phones (and the simulator) reach the server at the new host from then on.
  choosePublicHost: {
    run: async () => {
      const lan = (await call('GET', '/api/status')).body.lan_addresses as string[];
      // A machine without a LAN address cannot take this route; loopback-only CI still runs the rest.
      if (lan.length === 0) return { status: 299, headers: {}, text: '', body: undefined };
      return call('POST', '/api/public-host', { host: lan[0] });
    },
    action: 'settings.updated',
  },
};

/** Routes that are not GET but change nothing: why. */
const CHANGE_NOTHING: Partial<Record<AdminRouteName, string>> = {
  'invitations.validate': 'checks rows and creates nothing',
  'mail.preview': 'renders a template with the given values and stores nothing',
  'alerts.evaluate':
    'evaluates the rules now: the incidents it opens or resolves are the server’s own (events alert.fired/resolved), as each minute',
};

const mutating = (Object.keys(adminRoutes) as AdminRouteName[]).filter((name) => adminRoutes[name].method !== 'GET');

describe('audit coverage', () => {
  it('knows every state-changing route of the route table', () => {
    const missing = mutating.filter((name) => !CASES[name] && !CHANGE_NOTHING[name]);
    expect(
      missing.map(
        (name) =>
          `${name} (${adminRoutes[name].method} ${adminRoutes[name].path}) has no audit case: its service must record an event ` +
          `(events.record(type, message, refs, data) inside the change's unit of work; data with before/after for changed fields), ` +
          `and test/api/admin-api/audit-coverage.test.ts needs CASES['${name}'] = { run: <a successful call>, action: '<that event type>' } ` +
          `(or CHANGE_NOTHING['${name}'] = '<why it changes nothing>').`,
      ),
    ).toEqual([]);
  });

  it('every state-changing route, called successfully, writes its audit entry with actor, address and changes', async () => {
    const problems: string[] = [];
    for (const [name, c] of Object.entries(CASES) as Array<[AdminRouteName, Case]>) {
      const before = await lastId();
      const answer = await c.run();
      if (answer.status === 299) continue;
      if (answer.status < 200 || answer.status >= 300) {
        problems.push(`${name}: answered ${answer.status} ${answer.text.slice(0, 200)}`);
        continue;
      }
      const entries = await entriesAfter(before);
      const entry = entries.find((e) => e.action === c.action);
      if (!entry) {
        problems.push(`${name}: no audit entry "${c.action}" (got ${entries.map((e) => e.action).join(', ') || 'none'})`);
        continue;
      }
      const actor = c.actor ?? 'Ana Ruiz';
      if (entry.actor !== actor) problems.push(`${name}: actor ${entry.actor}, expected ${actor}`);
      const address = c.address ?? ADDRESS;
      if (entry.address !== address) problems.push(`${name}: address ${entry.address}, expected ${address}`);
      for (const [field, change] of Object.entries(c.changes ?? {})) {
        if (JSON.stringify(entry.changes?.[field]) !== JSON.stringify(change)) {
          problems.push(
            `${name}: changes.${field} = ${JSON.stringify(entry.changes?.[field])}, expected ${JSON.stringify(change)}`,
          );
        }
      }
    }
    expect(problems).toEqual([]);
    // No secret reached the trail or the events, whatever the field.
    const all = JSON.stringify([await t.sql.all('SELECT * FROM audit_log'), await t.sql.all('SELECT * FROM events')]);
    expect(all).not.toContain('hunter2-secret');
    expect(all).not.toContain(t.backend.info.admin_token);
  }, 120_000); // ~70 routes, each called and its entry read: minutes on a loaded machine, not 30 s
});

describe('no entry without the change', () => {
  it('a refused call (400, 403, 404, 409) records nothing', async () => {
    const before = await lastId();
    const fleet = (await call('POST', '/api/fleets', { name: 'Refusals' })).body;
    const operator = (await call('POST', '/api/tokens', { name: 'helpdesk', role: 'operator' })).body.token as string;
    const after = await lastId();
    expect(after).toBeGreaterThan(before);
    expect((await call('POST', '/api/fleets', { name: 'Refusals' })).status).toBe(409);
    expect((await call('PATCH', `/api/fleets/${fleet.id}`, { name: '' })).status).toBe(400);
    expect((await call('POST', '/api/invitations', { email: 'not an email', send_email: false })).status).toBe(400);
    expect((await call('PATCH', '/api/settings', { no_such_setting: 1 })).status).toBe(400);
    expect((await call('POST', '/api/invitations/999999/revoke')).status).toBe(404);
    expect((await call('DELETE', '/api/agents/999999')).status).toBe(404);
    expect(
      (await call('POST', '/auth/sign-in', { credential: t.backend.info.admin_token }, { 'sec-fetch-site': 'cross-site' }))
        .status,
    ).toBe(403);
    // An operator may not change settings nor delete a fleet: 403, nothing recorded.
    const asOperator = { authorization: `Bearer ${operator}` };
    expect((await call('PATCH', '/api/settings', { helpdesk_name: 'x' }, asOperator)).status).toBe(403);
    expect((await call('DELETE', `/api/fleets/${fleet.id}`, undefined, asOperator)).status).toBe(403);
    expect(await entriesAfter(after)).toEqual([]);
  });

  it('a change that fails after its audit entry was written, in its transaction, leaves neither change nor entry', async () => {
    const fleet = (await call('POST', '/api/fleets', { name: 'Undone' })).body;
    const events = async () => ((await t.sql.get('SELECT count(*) AS n FROM events')) as { n: number }).n;
    // 1. The audit row is written, then the statement fails (a trigger on the real table).
    await t.sql.exec(
      t.engine === 'postgres'
        ? `CREATE FUNCTION fail_after_audit() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN RAISE EXCEPTION 'injected failure after the audit entry'; END $$;
           CREATE TRIGGER fail_after_audit AFTER INSERT ON audit_log FOR EACH ROW WHEN (NEW.action = 'fleet.renamed')
             EXECUTE FUNCTION fail_after_audit()`
        : `CREATE TRIGGER fail_after_audit AFTER INSERT ON audit_log WHEN NEW.action = 'fleet.renamed'
             BEGIN SELECT RAISE(ABORT, 'injected failure after the audit entry'); END`,
    );
    try {
      const before = await lastId();
      const eventCount = await events();
      const renamed = await call('PATCH', `/api/fleets/${fleet.id}`, { name: 'Renamed' });
      expect(renamed.status).toBe(500);
      expect(await entriesAfter(before)).toEqual([]);
      expect(await events()).toBe(eventCount);
      expect((await call('GET', '/api/fleets')).body.items.map((f: { name: string }) => f.name)).toContain('Undone');
    } finally {
      await t.sql.exec(
        t.engine === 'postgres'
          ? 'DROP TRIGGER fail_after_audit ON audit_log; DROP FUNCTION fail_after_audit()'
          : 'DROP TRIGGER fail_after_audit',
      );
    }

    // 2. The mail settings: the audit entry is written, then the SMTP password cannot be. It is
    //    kept in the data dir's file on SQLite (the file's place is taken by a directory) and in the
    //    database on PostgreSQL (cluster_secrets, where a trigger refuses it): either way the settings
    //    stay as they were, no entry, no event.
    const { rmSync, mkdirSync } = await import('node:fs');
    const { join } = await import('node:path');
    const secrets = join(t.dataDir, 'secrets.json');
    if (t.engine === 'postgres') {
      await t.sql.exec(
        `CREATE FUNCTION fail_password() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'injected failure writing the password'; END $$;
         CREATE TRIGGER fail_password BEFORE INSERT OR UPDATE ON cluster_secrets FOR EACH ROW
           WHEN (NEW.name = 'sealed:smtp_password') EXECUTE FUNCTION fail_password()`,
      );
    } else {
      rmSync(secrets, { force: true });
      mkdirSync(secrets);
    }
    try {
      const before = await lastId();
      const eventCount = await events();
      const hostBefore = (await call('GET', '/api/mail/settings')).body.settings?.smtp_host;
      const saved = await call('PUT', '/api/mail/settings', { smtp_host: 'mail.example.org', smtp_password: 'another-secret' });
      expect(saved.status).toBe(500);
      expect(await entriesAfter(before)).toEqual([]);
      expect(await events()).toBe(eventCount);
      expect((await call('GET', '/api/mail/settings')).body.settings?.smtp_host).toBe(hostBefore);
    } finally {
      if (t.engine === 'postgres')
        await t.sql.exec('DROP TRIGGER fail_password ON cluster_secrets; DROP FUNCTION fail_password()');
      else rmSync(secrets, { recursive: true, force: true });
    }
  });
});
