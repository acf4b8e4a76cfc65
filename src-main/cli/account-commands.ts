// `admins`, `admin add|set|invite-again|disable|enable|delete EMAIL`: managing admins (the owner's).
import { output, parse, positiveInt, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';
import { fleetIds } from './token-commands.ts';
import type { AdminClient } from '../../src-shared/contract/admin-client.ts';
import {
  isValidEmail,
  ROLES,
  type Account,
  type AccountEntry,
  type AccountInvited,
  type Role,
} from '../../src-shared/contract/index.ts';

const ROLE_LIST = ROLES.join('|');

const when = (iso: string | null) => (iso ? iso.replace('T', ' ').slice(0, 16) : 'never');

function invitationText(account: AccountEntry): string {
  const invitation = account.invitation;
  if (!invitation) return '';
  const link = invitation.expired ? `link expired ${when(invitation.expires_at)}` : `link until ${when(invitation.expires_at)}`;
  const delivery = invitation.delivery;
  const email = !delivery
    ? 'no email (link handed over)'
    : delivery.state === 'failed'
      ? `email failed: ${delivery.error ?? ''}`
      : delivery.retry_at
        ? `email will retry at ${delivery.retry_at.slice(11, 19)} (last try: ${delivery.error ?? ''})`
        : delivery.state === 'outbox'
          ? 'email in the outbox: no SMTP set up'
          : `email ${delivery.state}`;
  return `  (${link}; ${email})`;
}

const accountLine = (a: AccountEntry) =>
  `#${a.id}  ${a.email ?? '(no email: this computer’s user)'}  ${a.display_name}  ${a.role}` +
  `${a.fleet_ids.length > 0 ? ` (fleets #${a.fleet_ids.join(', #')})` : ''}  ${a.status}  ` +
  `two-factor ${a.two_factor ? 'on' : 'off'}  last sign-in ${when(a.last_sign_in_at)}${invitationText(a)}`;

function role(value: string | boolean | undefined, command: string): Role {
  if (typeof value !== 'string' || !(ROLES as readonly string[]).includes(value)) {
    throw new CliError(`${command} needs --role ${ROLE_LIST}${typeof value === 'string' ? `, not "${value}"` : ''}`);
  }
  return value as Role;
}

/** The account with this email (or #id), looked up in the list. */
async function accountNamed(client: AdminClient, name: string | undefined, command: string): Promise<AccountEntry> {
  if (!name) throw new CliError(`${command} needs the admin's EMAIL`);
  const { items } = await client.accounts.list();
  const wanted = name.trim().toLowerCase();
  const found = /^#?\d+$/.test(wanted)
    ? items.find((a) => a.id === Number(wanted.replace('#', '')))
    : items.find((a) => a.email?.toLowerCase() === wanted);
  if (!found) throw new CliError(`No admin ${name}: see mdm-console admins`);
  return found;
}

function invitedText(result: AccountInvited, verb: string): string {
  const a = result.account;
  return result.setup_url
    ? `${a.email} ${verb} as ${a.role}; no email sent. Hand over this set-up link (it works once, until ${when(a.invitation?.expires_at ?? null)}):\n  ${result.setup_url}`
    : `${a.email} ${verb} as ${a.role}: the set-up link is being emailed (see mdm-console admins for its state).`;
}

const admins: Handler = async (argv) => {
  const { admin, json } = parse(argv, {});
  const { items } = await admin().accounts.list();
  return output(json, items, () => items.map(accountLine).join('\n'));
};

const USAGE = `usage: admin add EMAIL --role ${ROLE_LIST} [--fleet NAME|ID]... [--name N] [--days D] [--no-email]
       admin set EMAIL --role ${ROLE_LIST} [--fleet NAME|ID]... [--all-fleets]
       admin invite-again EMAIL [--days D] [--no-email]
       admin disable|enable|delete|reset-two-factor EMAIL`;

const adminCommand: Handler = async (argv) => {
  const [action, ...rest] = argv;
  if (action === 'add') {
    const { values, positionals, admin, json } = parse(rest, {
      role: { type: 'string' },
      fleet: { type: 'string', multiple: true },
      name: { type: 'string' },
      days: { type: 'string' },
      'no-email': { type: 'boolean' },
    });
    const email = positionals[0];
    if (!email || positionals.length > 1) throw new CliError(`admin add needs one EMAIL\n${USAGE}`);
    if (!isValidEmail(email)) throw new CliError(`"${email}" is not an email address`);
    const wanted = role(values.role, 'admin add');
    const client = admin();
    const fleets = await fleetIds(client, (values.fleet as string[] | undefined) ?? []);
    const invited = await client.accounts.invite({
      body: {
        email,
        role: wanted,
        ...(fleets.length > 0 ? { fleet_ids: fleets } : {}),
        ...(typeof values.name === 'string' ? { display_name: values.name } : {}),
        ...(values.days === undefined ? {} : { days: positiveInt(values.days as string, '--days') }),
        ...(values['no-email'] === true ? { no_email: true } : {}),
      },
    });
    return output(json, invited, () => invitedText(invited, 'invited'));
  }
  if (action === 'invite-again') {
    const { values, positionals, admin, json } = parse(rest, { days: { type: 'string' }, 'no-email': { type: 'boolean' } });
    const client = admin();
    const account = await accountNamed(client, positionals[0], 'admin invite-again');
    const invited = await client.accounts.reinvite({
      params: { id: account.id },
      body: {
        ...(values.days === undefined ? {} : { days: positiveInt(values.days as string, '--days') }),
        ...(values['no-email'] === true ? { no_email: true } : {}),
      },
    });
    return output(json, invited, () => `${invitedText(invited, 'invited again')}\nThe previous link no longer works.`);
  }
  if (action === 'set') {
    const { values, positionals, admin, json } = parse(rest, {
      role: { type: 'string' },
      fleet: { type: 'string', multiple: true },
      'all-fleets': { type: 'boolean' },
    });
    const given = (values.fleet as string[] | undefined) ?? [];
    if (given.length > 0 && values['all-fleets'] === true)
      throw new CliError('admin set takes --fleet or --all-fleets, not both');
    const client = admin();
    const account = await accountNamed(client, positionals[0], 'admin set');
    const wanted = role(values.role, 'admin set');
    const fleets = await fleetIds(client, given);
    let changed: AccountEntry | Account = await client.accounts.update({ params: { id: account.id }, body: { role: wanted } });
    if (fleets.length > 0 || values['all-fleets'] === true) {
      changed = await client.accounts.setScope({ params: { id: account.id }, body: { fleet_ids: fleets } });
    }
    const scope = changed.fleet_ids.length > 0 ? `, fleets #${changed.fleet_ids.join(', #')}` : '';
    return output(json, changed, () =>
      account.role === changed.role
        ? `${changed.email} is ${changed.role}${scope || (changed.role === 'operator' || changed.role === 'observer' ? ', every fleet' : '')}`
        : `${changed.email}: role ${account.role} → ${changed.role}${scope}`,
    );
  }
  if (action === 'reset-two-factor') {
    const { positionals, admin, json } = parse(rest, {});
    const client = admin();
    const account = await accountNamed(client, positionals[0], 'admin reset-two-factor');
    const changed = await client.accounts.resetTwoFactor({ params: { id: account.id } });
    return output(
      json,
      changed,
      () =>
        `${changed.email ?? changed.display_name}: two-factor sign-in reset (their authenticator and recovery codes no longer work)`,
    );
  }
  if (action === 'disable' || action === 'enable' || action === 'delete') {
    const { positionals, admin, json } = parse(rest, {});
    const client = admin();
    const account = await accountNamed(client, positionals[0], `admin ${action}`);
    const name = account.email ?? account.display_name;
    if (action === 'delete') {
      await client.accounts.remove({ params: { id: account.id } });
      return output(
        json,
        { deleted: true, id: account.id, email: account.email },
        () => `${name} deleted, with their API tokens`,
      );
    }
    const changed =
      action === 'disable'
        ? await client.accounts.disable({ params: { id: account.id } })
        : await client.accounts.enable({ params: { id: account.id } });
    return output(json, changed, () =>
      action === 'disable'
        ? `${name} disabled: their console sessions ended and their API tokens are refused`
        : `${name} enabled: their API tokens work again; they sign in anew`,
    );
  }
  throw new CliError(action ? `Unknown admin action "${action}"\n${USAGE}` : USAGE);
};

export const accountCommands: Record<string, Handler> = { admins, admin: adminCommand };
