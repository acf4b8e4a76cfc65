// `whoami`, `tokens`, `token create|revoke`, `audit`: who the CLI acts as, personal API tokens, and who did what.
import { output, parse, positiveInt, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';
import { once } from 'node:events';
import {
  AUDIT_EXPORT_FORMATS,
  ROLES,
  type ApiToken,
  type AuditEntry,
  type AuditExportFormat,
  type Role,
} from '../../src-shared/contract/index.ts';
import type { AdminClient } from '../../src-shared/contract/admin-client.ts';
import { PERMISSION_NAMES, PERMISSIONS } from '../../src-shared/contract/permissions.ts';

const tokenLine = (t: ApiToken) =>
  `#${t.id}  ${t.name}  ${t.role}  ${t.status}  of ${t.account_name}  ` +
  `${t.expires_at ? `expires ${t.expires_at}` : 'never expires'}  last used ${t.last_used_at ?? 'never'}` +
  (t.fleet_ids.length > 0 ? `  fleets #${t.fleet_ids.join(', #')}` : '');

/**
 * `--fleet NAME|ID` (repeatable) as fleet ids: a fleet called so (case-insensitive) or, failing
 * that, whose id it is, among the fleets the caller sees; an unknown one is an error.
 */
export async function fleetIds(admin: AdminClient, given: string[]): Promise<number[]> {
  if (given.length === 0) return [];
  const { items } = await admin.fleets.list();
  return given.map((text) => {
    const clean = text.trim();
    const fleet =
      items.find((f) => f.name.toLowerCase() === clean.toLowerCase()) ??
      (/^[1-9]\d{0,15}$/.test(clean) ? items.find((f) => f.id === Number(clean)) : undefined);
    if (!fleet) throw new CliError(`Unknown fleet "${clean}" (fleets: ${items.map((f) => f.name).join(', ') || 'none'})`);
    return fleet.id;
  });
}

const whoami: Handler = async (argv) => {
  const { admin, json } = parse(argv, {});
  const me = await admin().me();
  return output(json, me, () => {
    const who = me.account.email ? `${me.account.display_name} <${me.account.email}>` : me.account.display_name;
    const scope = me.fleets === null ? '' : `, scoped to fleets: ${me.fleets.map((f) => f.name).join(', ') || 'none'}`;
    const denied = PERMISSION_NAMES.filter((permission) => !me.permissions.includes(permission));
    return (
      `${who}, ${me.role}${me.token ? ` (API token #${me.token.id} "${me.token.name}")` : ''}${scope}` +
      (denied.length > 0 ? `\ncannot: ${denied.map((permission) => PERMISSIONS[permission]).join('; ')}` : '')
    );
  });
};

const tokens: Handler = async (argv) => {
  const { admin, json } = parse(argv, {});
  const result = await admin().tokens.list();
  return output(json, result.items, () => result.items.map(tokenLine).join('\n') || 'No API tokens.');
};

const token: Handler = async (argv) => {
  const [action, ...rest] = argv;
  if (action === 'create') {
    const { values, admin, json } = parse(rest, {
      name: { type: 'string' },
      role: { type: 'string' },
      days: { type: 'string' },
      fleet: { type: 'string', multiple: true },
    });
    if (!values.name) throw new CliError('token create needs --name NAME');
    const role = values.role as string | undefined;
    if (!role || !(ROLES as readonly string[]).includes(role)) {
      throw new CliError(`token create needs --role ${ROLES.join('|')}${role ? `, not "${role}"` : ''}`);
    }
    const client = admin();
    const fleets = await fleetIds(client, (values.fleet as unknown as string[] | undefined) ?? []);
    const created = await client.tokens.create({
      body: {
        name: values.name as string,
        role: role as Role,
        ...(values.days === undefined ? {} : { days: positiveInt(values.days as string, '--days') }),
        ...(fleets.length > 0 ? { fleet_ids: fleets } : {}),
      },
    });
    return output(
      json,
      created,
      () =>
        `API token created (shown this once: keep it now)\n  ${created.token}\n${tokenLine(created)}\n` +
        `Use it as Authorization: Bearer <token>, or MDM_CONSOLE_TOKEN=<token> for this CLI.`,
    );
  }
  if (action === 'revoke') {
    const { positionals, admin, json } = parse(rest, {});
    const revoked = await admin().tokens.revoke({ params: { id: positiveInt(positionals[0], 'the token id') } });
    return output(json, revoked, () => `API token #${revoked.id} "${revoked.name}" revoked`);
  }
  throw new CliError(
    `usage: token create --name NAME --role ${ROLES.join('|')} [--fleet NAME|ID]... [--days D] | token revoke ID`,
  );
};

const auditChanges = (e: AuditEntry) =>
  e.changes
    ? Object.entries(e.changes)
        .map(([field, c]) => `\n    ${field}: ${JSON.stringify(c.before ?? null)} -> ${JSON.stringify(c.after ?? null)}`)
        .join('')
    : '';
const auditLine = (e: AuditEntry) =>
  `${e.at}  ${e.actor}${e.token_name ? ` (token "${e.token_name}")` : ''}${e.role ? ` [${e.role}]` : ''}  from ${e.address ?? '-'}  ` +
  `${e.action}${e.target_kind ? `  ${e.target_kind}${e.target_id ? ` #${e.target_id}` : ''}${e.target_name ? ` ${e.target_name}` : ''}` : ''}\n    ${e.message}` +
  auditChanges(e);

/**
 * `audit [--actor A] [--action A] [--target NAME] [--since ISO] [--until ISO] [--limit N]`: who did
 * what, newest first; `--format csv|jsonl`: every matching entry (no limit), streamed to stdout.
 */
const audit: Handler = async (argv) => {
  const { values, admin, json } = parse(argv, {
    actor: { type: 'string' },
    action: { type: 'string' },
    target: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    limit: { type: 'string' },
    format: { type: 'string' },
  });
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  const filters = {
    ...(text('actor') ? { actor: text('actor') } : {}),
    ...(text('action') ? { action: text('action') } : {}),
    ...(text('target') ? { target_name: text('target') } : {}),
    ...(text('since') ? { since: text('since') } : {}),
    ...(text('until') ? { until: text('until') } : {}),
  };
  const format = text('format');
  if (format !== undefined) {
    if (!(AUDIT_EXPORT_FORMATS as readonly string[]).includes(format)) {
      throw new CliError(`--format must be ${AUDIT_EXPORT_FORMATS.join(' or ')}, not "${format}"`);
    }
    if (values.limit !== undefined || json)
      throw new CliError('--format exports every matching entry: leave out --limit and --json');
    const response = await admin().audit.export({ query: { ...filters, format: format as AuditExportFormat } });
    // Written as it arrives: an export of any length never sits whole in memory.
    for await (const chunk of response.body ?? []) {
      if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
    }
    return 0;
  }
  const result = await admin().audit.list({
    query: { ...filters, ...(values.limit === undefined ? {} : { limit: positiveInt(values.limit as string, '--limit') }) },
  });
  return output(json, result.items, () => result.items.map(auditLine).join('\n') || 'Nothing in the audit trail matches.');
};

export const tokenCommands: Record<string, Handler> = { whoami, tokens, token, audit };
