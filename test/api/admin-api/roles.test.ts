// Roles (issue 22, item 2): every entry of the admin route table, called by every role over real
// HTTP against a real backend and SQLite file, is allowed or refused exactly as the role table
// (src-shared/contract/permissions.ts) and the entry's declared permission say; a refusal is 403
// ERROR_FORBIDDEN naming the role and the missing permission, before anything runs or is audited.
// The issue's own words for each role are checked against the table separately, route by route.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRoutes, type AdminEndpoint, type AdminRouteName } from '../../../src-shared/contract/admin-routes.ts';
import {
  PERMISSION_NAMES,
  ROLE_PERMISSIONS,
  permissionsNeeded,
  refusalMessage,
  type Permission,
  type Role,
} from '../../../src-shared/contract/permissions.ts';
import { AGENT_COMMANDS, ROLES } from '../../../src-shared/contract/rules.ts';
import { JOB_ACTIONS } from '../../../src-shared/contract/bulk.ts';
import { enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';

let t: TestBackend;
let adminUrl: string;
const tokens = {} as Record<Role, string>;

beforeAll(async () => {
  t = await startTestBackend();
  adminUrl = t.backend.info.admin_url;
  for (const role of ROLES) {
    const made = await t.admin('POST', '/tokens', { name: `${role} token`, role });
    expect(made.status).toBe(201);
    tokens[role] = made.body.token;
  }
});
afterAll(async () => {
  await t?.stop();
});

interface Call {
  /** What the call is, in a failure's message. */
  label: string;
  body?: unknown;
  raw?: { contentType: string; bytes: string };
  query?: string;
}

/** Bodies that pass validation, where a route's permission depends on its body. */
const BODY_CALLS: Partial<Record<AdminRouteName, Call[]>> = {
  'agents.command': AGENT_COMMANDS.map((command) => ({ label: command, body: { command } })),
  // Devices that do not exist: an allowed action answers 404, a refused one 403.
  'jobs.create': JOB_ACTIONS.map((action) => ({ label: action, body: { action, selection: { ids: [999999] } } })),
  'settings.update': [
    { label: 'helpdesk name', body: { helpdesk_name: 'IT desk' } },
    { label: 'public host', body: { public_host: '127.0.0.1' } },
  ],
  'mail.saveSettings': [
    { label: 'sender name', body: { mail_from_name: 'IT desk' } },
    { label: 'SMTP server', body: { smtp_host: '' } },
  ],
};

/** One request per route (bodies where the permission depends on them); ids that name nothing change nothing. */
function callsOf(name: AdminRouteName): Call[] {
  const entry: AdminEndpoint = adminRoutes[name];
  if (BODY_CALLS[name]) return BODY_CALLS[name];
  if (typeof entry.permission === 'object') throw new Error(`${name}: its permission reads the body; add it to BODY_CALLS`);
  if (name === 'tokens.create') return [{ label: '', body: { name: 'made by a role', role: 'observer' } }];
  if (entry.body !== undefined && typeof entry.body === 'object') {
    return [{ label: '', raw: { contentType: entry.body.contentType, bytes: 'x' }, query: '?name=x.txt' }];
  }
  return [{ label: '', ...(entry.method === 'GET' || entry.method === 'DELETE' ? {} : { body: {} }) }];
}

const pathOf = (path: string) => path.replace(/:batch_id/g, 'nobatch').replace(/:\w+/g, '999999');

async function call(
  name: AdminRouteName,
  one: Call,
  bearer: string | null,
): Promise<{ status: number; body: { error?: string; message?: string } | undefined }> {
  const entry = adminRoutes[name];
  const headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' };
  if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
  let body: string | undefined;
  if (one.raw) {
    headers['content-type'] = one.raw.contentType;
    body = one.raw.bytes;
  } else if (one.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(one.body);
  }
  const response = await fetch(`${adminUrl}${pathOf(entry.path)}${one.query ?? ''}`, {
    method: entry.method,
    headers,
    body,
    redirect: 'manual',
  });
  // The event stream never ends: its status is all this needs.
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    await response.body?.cancel();
    return { status: response.status, body: undefined };
  }
  const text = await response.text();
  let parsed: { error?: string; message?: string } | undefined;
  try {
    parsed = text ? (JSON.parse(text) as { error?: string; message?: string }) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, body: parsed };
}

const auditCount = async () => ((await t.sql.get('SELECT count(*) AS n FROM audit_log')) as { n: number }).n;

describe('every admin route, every role', () => {
  const names = Object.keys(adminRoutes) as AdminRouteName[];

  it('every route declares a permission of the vocabulary (or says it is public)', () => {
    expect(names.length).toBeGreaterThan(60);
    const undeclared = names.filter((name) => {
      const rule = (adminRoutes[name] as { permission?: unknown }).permission;
      if (rule === 'public' || rule === 'signed-in') return false;
      if (typeof rule === 'string') return !PERMISSION_NAMES.includes(rule as Permission);
      if (typeof rule !== 'object' || rule === null) return true;
      const declared = rule as { values?: object; permission?: unknown };
      const named = declared.values ? Object.values(declared.values) : [declared.permission];
      return named.some((permission) => !PERMISSION_NAMES.includes(permission as Permission));
    });
    expect(undeclared, 'routes without a declared permission of permissions.ts').toEqual([]);
  });

  it('answers each role exactly as the role table says: allowed is not 403, refused is 403 naming the permission', async () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const name of names) {
      const rule = adminRoutes[name].permission;
      for (const one of callsOf(name)) {
        if (rule === 'public') {
          // Reached without signing in: never 401 for want of a token, never 403 for want of a role.
          const answer = await call(name, one, null);
          if (answer.status === 403 || answer.body?.error === 'ERROR_UNAUTHORIZED') {
            wrong.push(`${name}: public, answered ${answer.status} ${answer.body?.message}`);
          }
          checked++;
          continue;
        }
        // Not public: no token, no entry.
        const anonymous = await call(name, one, null);
        if (anonymous.status !== 401) wrong.push(`${name} ${one.label}: answered ${anonymous.status} without a token`);
        for (const role of ROLES) {
          const missing = permissionsNeeded(rule, one.body).find((permission) => !ROLE_PERMISSIONS[role].includes(permission));
          const before = missing === undefined ? 0 : await auditCount();
          const answer = await call(name, one, tokens[role]);
          checked++;
          const what = `${name}${one.label ? ` (${one.label})` : ''} as ${role}`;
          if (missing === undefined) {
            if (answer.status === 403) wrong.push(`${what}: refused (${answer.body?.message}), the table allows it`);
            continue;
          }
          if (answer.status !== 403 || answer.body?.error !== 'ERROR_FORBIDDEN') {
            wrong.push(`${what}: answered ${answer.status}, the table refuses it (needs ${missing})`);
          } else if (answer.body.message !== refusalMessage(role, missing)) {
            wrong.push(`${what}: says "${answer.body.message}", not "${refusalMessage(role, missing)}"`);
          }
          if ((await auditCount()) !== before) wrong.push(`${what}: refused, yet audited`);
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(250);
  }, 120_000); // every route × every role: minutes on a loaded machine, not 30 s
});

describe('the role table says what the issue says', () => {
  /** A route and, where it matters, the body that picks its permission. */
  const needs = (name: AdminRouteName, body?: unknown): Permission[] => permissionsNeeded(adminRoutes[name].permission, body);
  const allows = (role: Role, name: AdminRouteName, body?: unknown) =>
    needs(name, body).every((permission) => ROLE_PERMISSIONS[role].includes(permission));
  const command = (c: string): [AdminRouteName, unknown] => ['agents.command', { command: c }];

  const helpdesk: [AdminRouteName, unknown?][] = [
    ['invitations.create'],
    ['invitations.createMany'],
    ['invitations.resend'],
    ['mail.retry'],
    ['invitations.revoke'],
    ['codes.revoke'],
    ['agents.approve'],
    ['agents.reject'],
    ['agents.approveMany'],
    command('ping'),
    command('geolocate'),
    command('inventory'),
    command('lock'),
    command('unlock'),
  ];
  const notHelpdesk: [AdminRouteName, unknown?][] = [
    command('wipe'),
    command('unenroll'),
    ['agents.remove'],
    ['invitations.remove'],
    ['settings.update', { helpdesk_name: 'x' }],
    ['mail.saveSettings', { mail_from_name: 'x' }],
    ['choosePublicHost'],
    ['policies.set'],
    ['policies.unset'],
    ['deployments.create'],
    ['deployments.remove'],
    ['files.upload'],
    ['fleets.create'],
    ['consoleTicket'],
  ];
  const all = Object.keys(adminRoutes) as AdminRouteName[];
  /** The admins themselves are the owner's alone ("admin: everything but accounts"), reading them included. */
  const accounts = all.filter((name) => name.startsWith('accounts.') || name === 'consoleTicket');
  const reads = all.filter(
    (name) => adminRoutes[name].method === 'GET' && adminRoutes[name].permission !== 'public' && !accounts.includes(name),
  );

  it('owner: everything, accounts and the server settings included', () => {
    for (const name of Object.keys(adminRoutes) as AdminRouteName[]) {
      for (const one of callsOf(name)) expect(allows('owner', name, one.body), name).toBe(true);
    }
    expect(ROLE_PERMISSIONS.owner).toEqual(expect.arrayContaining(PERMISSION_NAMES));
  });

  it('admin: everything but accounts and the owner’s settings', () => {
    expect(PERMISSION_NAMES.filter((p) => !ROLE_PERMISSIONS.admin.includes(p))).toEqual(['settings.server', 'accounts.manage']);
    expect(allows('admin', 'settings.update', { helpdesk_name: 'x' })).toBe(true);
    expect(allows('admin', 'settings.update', { public_host: 'x' })).toBe(false);
    expect(allows('admin', 'mail.saveSettings', { smtp_password: 'x' })).toBe(false);
    expect(allows('admin', 'mail.saveSettings', { mail_subject_template: 'x' })).toBe(true);
    expect(allows('admin', 'choosePublicHost')).toBe(false);
    expect(accounts.length).toBeGreaterThan(5);
    for (const name of accounts) for (const role of ROLES) expect(allows(role, name), `${name} ${role}`).toBe(role === 'owner');
    for (const [name, body] of [...helpdesk, ...notHelpdesk.filter(([n]) => n !== 'choosePublicHost' && n !== 'consoleTicket')])
      expect(allows('admin', name, body), name).toBe(true);
  });

  it('operator: invite, resend, revoke, approve, ping, locate, inventory, lock, unlock; no wipe, unenroll, deletion, settings, policies, deployments', () => {
    for (const [name, body] of helpdesk) expect(allows('operator', name, body), `${name} ${JSON.stringify(body)}`).toBe(true);
    for (const [name, body] of notHelpdesk) expect(allows('operator', name, body), `${name} ${JSON.stringify(body)}`).toBe(false);
    for (const name of reads) expect(allows('operator', name), name).toBe(true);
  });

  it('observer: reads only', () => {
    for (const name of reads) expect(allows('observer', name), name).toBe(true);
    for (const [name, body] of [...helpdesk, ...notHelpdesk]) expect(allows('observer', name, body), name).toBe(false);
  });

  it('roles nest: each holds all the one below it holds', () => {
    for (let i = 1; i < ROLES.length; i++) {
      const below = ROLES[i]!;
      const above = ROLES[i - 1]!;
      expect(
        ROLE_PERMISSIONS[below].filter((p) => !ROLE_PERMISSIONS[above].includes(p)),
        `${above} ⊇ ${below}`,
      ).toEqual([]);
    }
  });
});

describe('a refused action on a real device', () => {
  it('an operator locks a phone; its wipe is refused, not sent, not audited; an admin’s wipe goes through', async () => {
    const invitation = await t.admin('POST', '/invitations', { email: 'phone.owner@example.org', send_email: false });
    expect(invitation.status).toBe(201);
    const { created } = await enrollByHand(t.apiUrl, invitation.body);
    const id = Number(created.body.id);
    expect(id).toBeGreaterThan(0);
    const send = async (role: Role, command: string) =>
      fetch(`${adminUrl}/api/agents/${id}/commands`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens[role]}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command }),
      });

    const locked = await send('operator', 'lock');
    expect(locked.status).toBe(202);
    expect((await t.admin('GET', `/agents/${id}`)).body).toMatchObject({ lock: 1 });

    const audited = await auditCount();
    const commands = async () =>
      (await t.sql.get(`SELECT count(*) AS n FROM events WHERE type = 'agent.command' AND agent_id = ?`, [id])) as { n: number };
    const sent = (await commands()).n;
    const wipe = await send('operator', 'wipe');
    expect(wipe.status).toBe(403);
    expect(await wipe.json()).toEqual({
      error: 'ERROR_FORBIDDEN',
      message: 'An operator cannot wipe devices: needs devices.wipe',
    });
    expect((await t.admin('GET', `/agents/${id}`)).body).toMatchObject({ wipe: 0 });
    expect((await commands()).n).toBe(sent);
    expect(await auditCount()).toBe(audited);

    const deleted = await fetch(`${adminUrl}/api/agents/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${tokens.operator}` },
    });
    expect(deleted.status).toBe(403);
    expect(((await deleted.json()) as { message: string }).message).toBe(
      'An operator cannot delete devices: needs devices.delete',
    );
    expect((await t.admin('GET', `/agents/${id}`)).status).toBe(200);
    expect(await auditCount()).toBe(audited);

    expect((await send('admin', 'wipe')).status).toBe(202);
    expect((await t.admin('GET', `/agents/${id}`)).body).toMatchObject({ wipe: 1 });
    expect(await auditCount()).toBeGreaterThan(audited);
  });

  it('the HEAD twin of a GET route is checked as the GET is', async () => {
    const refusedGets = (Object.keys(adminRoutes) as AdminRouteName[]).filter(
      (name) => adminRoutes[name].method === 'GET' && adminRoutes[name].permission === 'accounts.manage',
    );
    expect(refusedGets.length).toBeGreaterThan(0);
    for (const name of refusedGets) {
      const url = `${adminUrl}${pathOf(adminRoutes[name].path)}`;
      const head = await fetch(url, { method: 'HEAD', headers: { authorization: `Bearer ${tokens.operator}` } });
      expect(head.status, name).toBe(403);
      const owner = await fetch(url, { method: 'HEAD', headers: { authorization: `Bearer ${tokens.owner}` } });
      expect(owner.status, name).not.toBe(403);
    }
  });

  it('/api/me says what the calling role may do', async () => {
    for (const role of ROLES) {
      const me = await fetch(`${adminUrl}/api/me`, { headers: { authorization: `Bearer ${tokens[role]}` } });
      expect(me.status).toBe(200);
      const body = (await me.json()) as { role: Role; permissions: Permission[] };
      expect(body.role).toBe(role);
      expect(body.permissions).toEqual([...ROLE_PERMISSIONS[role]]);
    }
  });
});
