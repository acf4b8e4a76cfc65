// `deploy`, `deployments`, `undeploy` and `fleet add|rename|delete`: thin clients of the admin API.
import { parseArgs } from 'node:util';
import { defaultDataDir } from '../backend/config.ts';
import { adminRequest, CliError, readServerFile, type ServerFile } from './server-file.ts';

type Handler = (argv: string[]) => Promise<number>;

interface Task {
  id: number;
  agent_id: number;
  agent_name: string;
  status: string;
  reason: string | null;
}

interface Deployment {
  id: number;
  policy: string;
  item_name: string;
  target_name: string;
  fleet_id: number | null;
  agent_id: number | null;
  state: string;
  topic: string;
  progress: string;
  tasks?: Task[];
}

interface Fleet {
  id: number;
  name: string;
  is_default: number;
  agent_count: number;
}

function parse(argv: string[], options: NonNullable<Parameters<typeof parseArgs>[0]>['options'] = {}) {
  const parsed = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' }, json: { type: 'boolean' }, ...options }, allowPositionals: true, strict: true });
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const server = (): ServerFile => readServerFile((values['data-dir'] as string | undefined) ?? defaultDataDir());
  return { values, positionals: parsed.positionals, server, json: values.json === true };
}

function print(json: boolean, data: unknown, human: () => string): number {
  console.log(json ? JSON.stringify(data, null, 2) : human());
  return 0;
}

function positiveInt(value: string | undefined, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${what} must be a positive integer, not "${value ?? ''}"`);
  return n;
}

const deploymentLine = (d: Deployment) => `#${d.id}  ${d.policy} "${d.item_name}" → ${d.target_name}  ${d.state}  ${d.progress}`;
const taskLine = (t: Task) => `    ${t.agent_name} (agent ${t.agent_id}): ${t.status}${t.reason ? ` — ${t.reason}` : ''}`;

/** A fleet by id or by name (names are matched case-insensitively, as the server does). */
async function findFleet(server: ServerFile, idOrName: string): Promise<Fleet> {
  const { items } = await adminRequest<{ items: Fleet[] }>(server, 'GET', '/fleets');
  const byId = /^\d+$/.test(idOrName) ? items.find((f) => f.id === Number(idOrName)) : undefined;
  const found = byId ?? items.find((f) => f.name.toLowerCase() === idOrName.trim().toLowerCase());
  if (!found) throw new CliError(`No fleet "${idOrName}" (see: fleets)`);
  return found;
}

const deploy: Handler = async (argv) => {
  const { positionals, values, server, json } = parse(argv, {
    fleet: { type: 'string' },
    agent: { type: 'string' },
    destination: { type: 'string' },
    'keep-on-remove': { type: 'boolean' },
  });
  const match = /^(file|package):([1-9]\d*)$/.exec(positionals[0] ?? '');
  if (!match || positionals.length !== 1) throw new CliError('usage: deploy file:ID|package:ID (--fleet NAME | --agent ID) [--destination PATH] [--keep-on-remove]');
  if ((values.fleet === undefined) === (values.agent === undefined)) throw new CliError('deploy needs exactly one of --fleet NAME or --agent ID');
  if (values.destination !== undefined && match[1] !== 'file') throw new CliError('--destination is for files only');
  const body: Record<string, unknown> = {
    kind: match[1],
    item_id: Number(match[2]),
    // What the device installed is removed with the deployment unless --keep-on-remove.
    remove_on_delete: values['keep-on-remove'] !== true,
  };
  if (values.fleet !== undefined) body.fleet = values.fleet;
  if (values.agent !== undefined) body.agent_id = positiveInt(values.agent as string, 'the agent id');
  if (values.destination !== undefined) body.destination = values.destination;
  const created = await adminRequest<Deployment>(server(), 'POST', '/deployments', body);
  return print(json, created, () => `Deployment ${deploymentLine(created)}\n  topic ${created.topic}\n${(created.tasks ?? []).map(taskLine).join('\n') || '    (no device in scope yet)'}`);
};

const deployments: Handler = async (argv) => {
  const { values, server, json } = parse(argv, { fleet: { type: 'string' }, agent: { type: 'string' }, all: { type: 'boolean' } });
  const query = new URLSearchParams();
  if (values.fleet !== undefined) query.set('fleet_id', String((await findFleet(server(), values.fleet as string)).id));
  if (values.agent !== undefined) query.set('agent_id', String(positiveInt(values.agent as string, 'the agent id')));
  if (!values.all) query.set('state', 'active');
  const { items } = await adminRequest<{ items: Deployment[] }>(server(), 'GET', `/deployments${query.size > 0 ? `?${query}` : ''}`);
  return print(json, items, () => items.map(deploymentLine).join('\n') || 'No deployments.');
};

const undeploy: Handler = async (argv) => {
  const { positionals, server, json } = parse(argv);
  const id = positiveInt(positionals[0], 'the deployment id');
  const result = await adminRequest<{ removed: Deployment; removal: Deployment | null }>(server(), 'DELETE', `/deployments/${id}`);
  return print(json, result, () =>
    `Deployment ${deploymentLine(result.removed)}` + (result.removal ? `\nRemoval published: ${deploymentLine(result.removal)}` : '\nNothing is removed from the devices.'),
  );
};

const fleet: Handler = async (argv) => {
  const { positionals, server, json } = parse(argv);
  const [action, ...args] = positionals;
  if (action === 'add' && args.length > 0) {
    const created = await adminRequest<Fleet>(server(), 'POST', '/fleets', { name: args.join(' ') });
    return print(json, created, () => `Fleet #${created.id} "${created.name}" created`);
  }
  if (action === 'rename' && args.length >= 2) {
    const target = await findFleet(server(), args[0]!);
    const renamed = await adminRequest<Fleet>(server(), 'PATCH', `/fleets/${target.id}`, { name: args.slice(1).join(' ') });
    return print(json, renamed, () => `Fleet #${target.id} renamed from "${target.name}" to "${renamed.name}"`);
  }
  if ((action === 'delete' || action === 'rm') && args.length > 0) {
    const target = await findFleet(server(), args.join(' '));
    await adminRequest(server(), 'DELETE', `/fleets/${target.id}`);
    return print(json, { id: target.id, name: target.name, deleted: true }, () => `Fleet #${target.id} "${target.name}" deleted`);
  }
  throw new CliError('usage: fleet add NAME | fleet rename ID|NAME NEW_NAME | fleet delete ID|NAME');
};

export const deployCommands: Record<string, Handler> = { deploy, deployments, undeploy, fleet };
