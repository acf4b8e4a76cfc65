// `whoami`, `tokens`, `token create|revoke`: who the CLI acts as, and personal API tokens.
import { output, parse, positiveInt, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';
import { ROLES, type ApiToken, type Role } from '../../src-shared/contract/index.ts';

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

export const tokenCommands: Record<string, Handler> = { whoami, tokens, token };
