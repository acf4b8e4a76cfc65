// `whoami`, `tokens`, `token create|revoke`, `audit`: who the CLI acts as, personal API tokens, and who did what.
import { output, parse, positiveInt, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';
import { ROLES, type ApiToken, type AuditEntry, type Role } from '../../src-shared/contract/index.ts';

const tokenLine = (t: ApiToken) =>
  `#${t.id}  ${t.name}  ${t.role}  ${t.status}  of ${t.account_name}  ` +
  `${t.expires_at ? `expires ${t.expires_at}` : 'never expires'}  last used ${t.last_used_at ?? 'never'}`;

const whoami: Handler = async (argv) => {
  const { admin, json } = parse(argv, {});
  const me = await admin().me();
  return output(json, me, () => {
    const who = me.account.email ? `${me.account.display_name} <${me.account.email}>` : me.account.display_name;
    return `${who}, ${me.role}${me.token ? ` (API token #${me.token.id} "${me.token.name}")` : ''}`;
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
    const { values, admin, json } = parse(rest, { name: { type: 'string' }, role: { type: 'string' }, days: { type: 'string' } });
    if (!values.name) throw new CliError('token create needs --name NAME');
    const role = values.role as string | undefined;
    if (!role || !(ROLES as readonly string[]).includes(role)) {
      throw new CliError(`token create needs --role ${ROLES.join('|')}${role ? `, not "${role}"` : ''}`);
    }
    const created = await admin().tokens.create({
      name: values.name as string,
      role: role as Role,
      ...(values.days === undefined ? {} : { days: positiveInt(values.days as string, '--days') }),
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
    const revoked = await admin().tokens.revoke(positiveInt(positionals[0], 'the token id'));
    return output(json, revoked, () => `API token #${revoked.id} "${revoked.name}" revoked`);
  }
  throw new CliError(`usage: token create --name NAME --role ${ROLES.join('|')} [--days D] | token revoke ID`);
};

const auditLine = (e: AuditEntry) =>
  `${e.at}  ${e.actor}${e.token_name ? ` (token "${e.token_name}")` : ''}${e.role ? ` [${e.role}]` : ''}  from ${e.address ?? '-'}  ` +
  `${e.action}${e.target_kind ? `  ${e.target_kind}${e.target_id ? ` #${e.target_id}` : ''}${e.target_name ? ` ${e.target_name}` : ''}` : ''}\n    ${e.message}`;

/** `audit [--actor A] [--action A] [--since ISO] [--until ISO] [--limit N]`: who did what, newest first. */
const audit: Handler = async (argv) => {
  const { values, admin, json } = parse(argv, {
    actor: { type: 'string' },
    action: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    limit: { type: 'string' },
  });
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  const result = await admin().audit({
    ...(text('actor') ? { actor: text('actor') } : {}),
    ...(text('action') ? { action: text('action') } : {}),
    ...(text('since') ? { since: text('since') } : {}),
    ...(text('until') ? { until: text('until') } : {}),
    ...(values.limit === undefined ? {} : { limit: positiveInt(values.limit as string, '--limit') }),
  });
  return output(json, result.items, () => result.items.map(auditLine).join('\n') || 'Nothing in the audit trail matches.');
};

export const tokenCommands: Record<string, Handler> = { whoami, tokens, token, audit };
