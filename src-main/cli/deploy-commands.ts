// `deploy`, `deployments`, `undeploy` and `fleet add|rename|delete`: thin clients of the admin API.
import type { AdminClient } from '../../src-shared/contract/admin-client.ts';
import type { DeployBody, Deployment, DeviceTask, Fleet } from '../../src-shared/contract/index.ts';
import { output as print, parse, positiveInt, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';

const deploymentLine = (d: Deployment) => `#${d.id}  ${d.policy} "${d.item_name}" → ${d.target_name}  ${d.state}  ${d.progress}`;
const taskLine = (t: DeviceTask) =>
  `    ${t.agent_name} (agent ${t.agent_id}): ${t.status_text}${t.reason ? ` — ${t.reason}` : ''}`;

/** A fleet by id or by name (names are matched case-insensitively, as the server does). */
export async function findFleet(admin: AdminClient, idOrName: string): Promise<Fleet> {
  const { items } = await admin.fleets.list();
  const byId = /^\d+$/.test(idOrName) ? items.find((f) => f.id === Number(idOrName)) : undefined;
  const found = byId ?? items.find((f) => f.name.toLowerCase() === idOrName.trim().toLowerCase());
  if (!found) throw new CliError(`No fleet "${idOrName}" (see: fleets)`);
  return found;
}

const deploy: Handler = async (argv) => {
  const { positionals, values, admin, json } = parse(argv, {
    fleet: { type: 'string' },
    agent: { type: 'string' },
    destination: { type: 'string' },
    'keep-on-remove': { type: 'boolean' },
  });
  const match = /^(file|package):([1-9]\d*)$/.exec(positionals[0] ?? '');
  if (!match || positionals.length !== 1)
    throw new CliError('usage: deploy file:ID|package:ID (--fleet NAME | --agent ID) [--destination PATH] [--keep-on-remove]');
  if ((values.fleet === undefined) === (values.agent === undefined))
    throw new CliError('deploy needs exactly one of --fleet NAME or --agent ID');
  if (values.destination !== undefined && match[1] !== 'file') throw new CliError('--destination is for files only');
  const body: DeployBody = {
    kind: match[1] as DeployBody['kind'],
    item_id: Number(match[2]),
    // What the device installed is removed with the deployment unless --keep-on-remove.
    remove_on_delete: values['keep-on-remove'] !== true,
  };
  if (values.fleet !== undefined) body.fleet = values.fleet as string;
  if (values.agent !== undefined) body.agent_id = positiveInt(values.agent as string, 'the agent id');
  if (values.destination !== undefined) body.destination = values.destination as string;
  const created = await admin().deployments.create({ body: body });
  return print(
    json,
    created,
    () =>
      `Deployment ${deploymentLine(created)}\n  topic ${created.topic}\n${created.tasks.map(taskLine).join('\n') || '    (no device in scope yet)'}`,
  );
};

const deployments: Handler = async (argv) => {
  const { values, admin, json } = parse(argv, { fleet: { type: 'string' }, agent: { type: 'string' }, all: { type: 'boolean' } });
  const { items } = await admin().deployments.list({
    query: {
      ...(values.fleet !== undefined ? { fleet_id: (await findFleet(admin(), values.fleet as string)).id } : {}),
      ...(values.agent !== undefined ? { agent_id: positiveInt(values.agent as string, 'the agent id') } : {}),
      ...(values.all ? {} : { state: 'active' as const }),
    },
  });
  return print(json, items, () => items.map(deploymentLine).join('\n') || 'No deployments.');
};

const undeploy: Handler = async (argv) => {
  const { positionals, admin, json } = parse(argv, {});
  const id = positiveInt(positionals[0], 'the deployment id');
  const result = await admin().deployments.remove({ params: { id } });
  return print(
    json,
    result,
    () =>
      `Deployment ${deploymentLine(result.removed)}` +
      (result.removal ? `\nRemoval published: ${deploymentLine(result.removal)}` : '\nNothing is removed from the devices.'),
  );
};

const fleet: Handler = async (argv) => {
  const { positionals, admin, json } = parse(argv, {});
  const [action, ...args] = positionals;
  if (action === 'add' && args.length > 0) {
    const created = await admin().fleets.create({ body: { name: args.join(' ') } });
    return print(json, created, () => `Fleet #${created.id} "${created.name}" created`);
  }
  if (action === 'rename' && args.length >= 2) {
    const target = await findFleet(admin(), args[0]!);
    const renamed = await admin().fleets.rename({ params: { id: target.id }, body: { name: args.slice(1).join(' ') } });
    return print(json, renamed, () => `Fleet #${target.id} renamed from "${target.name}" to "${renamed.name}"`);
  }
  if ((action === 'delete' || action === 'rm') && args.length > 0) {
    const target = await findFleet(admin(), args.join(' '));
    await admin().fleets.remove({ params: { id: target.id } });
    return print(json, { id: target.id, name: target.name, deleted: true }, () => `Fleet #${target.id} "${target.name}" deleted`);
  }
  throw new CliError('usage: fleet add NAME | fleet rename ID|NAME NEW_NAME | fleet delete ID|NAME');
};

export const deployCommands: Record<string, Handler> = { deploy, deployments, undeploy, fleet };
