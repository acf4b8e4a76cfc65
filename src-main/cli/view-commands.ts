// Device selection in the CLI: `devices --where EXPR [--view NAME] [--fleet NAME]` (the filter
// language of docs/where.md), saved views (`views`, `view add|edit|rm`), and `viewOptions` /
// `selectionOf` for every command that selects devices (bulk actions and exports take them too).
import { CliError } from './server-file.ts';
import { output, parse, type Handler } from './handler.ts';
import type { AdminClient } from '../../src-shared/contract/admin-client.ts';
import type { AgentSummary, DeviceView } from '../../src-shared/contract/index.ts';

/** The options that select devices: `--where EXPR`, `--view NAME|ID`, `--fleet NAME|ID` (all given must hold). */
export const selectionOptions = {
  where: { type: 'string' },
  view: { type: 'string' },
  fleet: { type: 'string' },
} as const;

/** The selection of parsed options, as the admin API's device list takes it (GET /api/agents?where=&view=&fleet=). */
export function selectionOf(values: Record<string, string | boolean | undefined>): {
  where?: string;
  view?: string;
  fleet?: string;
} {
  const out: { where?: string; view?: string; fleet?: string } = {};
  for (const key of ['where', 'view', 'fleet'] as const) {
    const value = values[key];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value.trim() === '') throw new CliError(`--${key} needs a value`);
    out[key] = value;
  }
  return out;
}

/** A view's expression by name or id (bulk actions and exports send it as their `where`). */
export async function viewWhere(admin: AdminClient, nameOrId: string): Promise<string> {
  return (await findView(admin, nameOrId)).where;
}

/** A saved view by name (case-insensitively) or id; a usage error naming it when there is none. */
export async function findView(admin: AdminClient, nameOrId: string): Promise<DeviceView> {
  const { items } = await admin.views.list();
  const key = nameOrId.trim().toLowerCase();
  const view = items.find((v) => v.name.toLowerCase() === key) ?? items.find((v) => String(v.id) === key);
  if (!view) throw new CliError(`Unknown view "${nameOrId}" (mdm-console views lists them)`);
  return view;
}

const deviceLine = (a: AgentSummary) =>
  `#${a.id}  ${a.name}  ${a.type} ${a.version}  ${a.enroll_status}  ${a.is_online ? 'online' : 'offline'}  fleet ${a.fleet}  ` +
  `${a.os_name ? `${a.os_name} ${a.os_version ?? ''}`.trim() : 'OS ?'}  ${a.model ?? ''}  ${a.email ?? ''}  last contact ${a.last_contact ?? 'never'}`;

/** `devices` (and `agents`): every device, or those a selection picks. */
export const devices: Handler = async (argv) => {
  const { values, admin, json } = parse(argv, selectionOptions);
  const selection = selectionOf(values);
  const { items } = await admin().agents.list(Object.keys(selection).length > 0 ? { query: selection } : {});
  return output(json, items, () => items.map(deviceLine).join('\n') || 'No devices.');
};

const viewLine = (v: DeviceView) =>
  `#${v.id}  ${v.name}  ${v.count} device${v.count === 1 ? '' : 's'}  ${v.where || '(every device)'}${v.assignments ? `  ${v.assignments} assigned` : ''}`;

/** `views`: the saved views with their live counts. */
export const views: Handler = async (argv) => {
  const { admin, json } = parse(argv, {});
  const { items } = await admin().views.list();
  return output(
    json,
    items,
    () => items.map(viewLine).join('\n') || 'No saved views. Save one with: mdm-console view add NAME --where EXPR',
  );
};

/** `view add NAME --where EXPR`, `view edit NAME [--where EXPR] [--name NEW]`, `view rm NAME`. */
export const view: Handler = async (argv) => {
  const { values, positionals, admin, json } = parse(argv, { where: { type: 'string' }, name: { type: 'string' } });
  const [action, name, ...extra] = positionals;
  if (extra.length > 0) throw new CliError(`Unexpected "${extra.join(' ')}": quote a name with spaces ("Old phones")`);
  const where = values.where as string | undefined;
  if (action === 'add') {
    if (!name) throw new CliError('usage: mdm-console view add NAME --where EXPR');
    if (where === undefined) throw new CliError('view add needs --where EXPR (docs/where.md); --where "" saves every device');
    const created = await admin().views.create({ body: { name, where } });
    return output(json, created, () => `Saved view ${viewLine(created)}`);
  }
  if (action === 'edit') {
    if (!name) throw new CliError('usage: mdm-console view edit NAME [--where EXPR] [--name NEW_NAME]');
    const body = {
      ...(where === undefined ? {} : { where }),
      ...(values.name === undefined ? {} : { name: values.name as string }),
    };
    if (Object.keys(body).length === 0) throw new CliError('view edit needs --where EXPR or --name NEW_NAME');
    const found = await findView(admin(), name);
    const updated = await admin().views.update({ params: { id: found.id }, body });
    return output(json, updated, () => `View ${viewLine(updated)}`);
  }
  if (action === 'rm' || action === 'delete') {
    if (!name) throw new CliError('usage: mdm-console view rm NAME');
    const found = await findView(admin(), name);
    await admin().views.remove({ params: { id: found.id } });
    return output(json, { deleted: found.id, name: found.name }, () => `View "${found.name}" deleted`);
  }
  throw new CliError('usage: mdm-console view add NAME --where EXPR | view edit NAME [--where EXPR] [--name NEW] | view rm NAME');
};

export const viewCommands: Record<string, Handler> = { devices, views, view };
