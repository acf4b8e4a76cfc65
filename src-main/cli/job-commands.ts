// Bulk actions from the CLI (issue 25): `command (--ids|--fleet|--where|--view)… ACTION` starts one
// job on the server (POST /api/jobs) and follows it to its end; `jobs` lists the history, `job ID`
// shows each device's result. Destructive actions ask for the count (or take --yes --count N).
import { createInterface } from 'node:readline/promises';
import { CliError } from './server-file.ts';
import { output, parse, positiveInt, type Handler } from './handler.ts';
import type { AdminClient } from '../../src-shared/contract/admin-client.ts';
import {
  isDestructiveJobAction,
  JOB_ACTION_LABELS,
  JOB_RESULT_STATUSES,
  type Job,
  type JobAction,
  type JobBody,
  type JobDetail,
  type JobResultStatus,
  policyDefinition,
} from '../../src-shared/contract/index.ts';
import { parsePolicyValue } from './policy-commands.ts';

/** The CLI's verbs for the job actions (`locate` and `policy` read better than the API's names). */
const VERBS: Record<string, JobAction> = {
  ping: 'ping',
  lock: 'lock',
  unlock: 'unlock',
  inventory: 'inventory',
  geolocate: 'geolocate',
  locate: 'geolocate',
  move: 'move',
  policy: 'assign_policy',
  deploy: 'deploy',
  unenroll: 'unenroll',
  wipe: 'wipe',
  delete: 'delete',
};

export const BULK_USAGE = `usage: mdm-console command (--ids 1,2,3 | --fleet NAME|ID | --where EXPR | --view NAME|ID)... ACTION
                          [--to FLEET] [--policy SYMBOL --value VALUE] [--package ID | --file ID [--destination PATH]]
                          [--yes --count N] [--no-wait] [--timeout SECONDS] [--json] [--data-dir DIR]

One job on every device selected (all the selectors given must hold; --ids alone names devices):
  ACTION   ping | lock | unlock | inventory | locate | move --to FLEET | policy --policy SYMBOL --value VALUE
           | deploy --package ID | deploy --file ID [--destination PATH] | unenroll | wipe | delete
  --where EXPR   the filter language (docs/where.md), e.g. --where 'os<10 last_contact>7d'
  unenroll, wipe and delete cannot be undone: the CLI shows how many devices and asks you to type
  that number; in a script give --yes --count N (refused, nothing done, when the selection holds
  another number). The job is followed to its end (ping, inventory and locate also wait up to
  --timeout seconds, default 10, for the answers) unless --no-wait. Then: mdm-console job ID.`;

/** `command` with a selection rather than one device id: a bulk job. */
export async function bulkCommand(argv: string[]): Promise<number> {
  const {
    values,
    positionals,
    admin: adminOf,
    json,
  } = parse(argv, {
    ids: { type: 'string' },
    fleet: { type: 'string' },
    where: { type: 'string' },
    view: { type: 'string' },
    to: { type: 'string' },
    policy: { type: 'string' },
    value: { type: 'string' },
    package: { type: 'string' },
    file: { type: 'string' },
    destination: { type: 'string' },
    yes: { type: 'boolean' },
    count: { type: 'string' },
    wait: { type: 'boolean' },
    'no-wait': { type: 'boolean' },
    timeout: { type: 'string' },
  });
  const [verb, ...extra] = positionals;
  if (!verb) throw new CliError(`which action? ${Object.keys(VERBS).join(', ')}\n\n${BULK_USAGE}`);
  if (extra.length > 0) throw new CliError(`one action at a time, not "${positionals.join(' ')}"`);
  const action = VERBS[verb];
  if (!action) throw new CliError(`unknown action "${verb}": use ${Object.keys(VERBS).join(', ')}`);
  const text = (key: string) => {
    const value = values[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.trim() === '') throw new CliError(`--${key} needs a value`);
    return value;
  };
  const ids = text('ids');
  const filter = { fleet: text('fleet'), where: text('where'), view: text('view') };
  const filtered = filter.fleet !== undefined || filter.where !== undefined || filter.view !== undefined;
  if (ids !== undefined && filtered)
    throw new CliError('--ids names the devices: give it alone, or select with --fleet, --where, --view');
  if (ids === undefined && !filtered) throw new CliError(`select devices: --ids, --fleet, --where or --view\n\n${BULK_USAGE}`);
  const idList = ids?.split(',').map((id) => positiveInt(id.trim(), 'each id of --ids'));
  const body: JobBody = {
    action,
    selection: idList
      ? { ids: idList }
      : { filter: Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined)) },
    ...actionParams(action, text),
  };
  const timeoutSeconds = values.timeout === undefined ? 10 : Number(values.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0)
    throw new CliError(`--timeout must be a positive number of seconds, not "${String(values.timeout)}"`);

  const admin = adminOf();
  if (values.count !== undefined) body.expected_count = wholeCount(text('count'));
  if (isDestructiveJobAction(action)) {
    if (values.yes === true) {
      if (body.expected_count === undefined)
        throw new CliError(`--yes needs --count N: the number of devices you expect ${verb} to act on`);
    } else {
      const count = await selectionCount(admin, body);
      body.expected_count = await confirmCount(verb, count, body.expected_count);
    }
  }
  const started = await admin.jobs.create({ body });
  if (values['no-wait'] === true)
    return output(
      json,
      started,
      () => `Job #${started.id} started: ${JOB_ACTION_LABELS[action]} ${devices(started.total)} (${started.selection})`,
    );
  const awaitsAnswers = action === 'ping' || action === 'inventory' || action === 'geolocate';
  const done = await follow(admin, started.id, awaitsAnswers ? timeoutSeconds * 1000 : 0);
  return output(json, done, () => summary(done));
}

/** What the action takes besides the selection, from the options. */
function actionParams(action: JobAction, text: (key: string) => string | undefined): Partial<JobBody> {
  const given = ['to', 'policy', 'value', 'package', 'file', 'destination'].filter((key) => text(key) !== undefined);
  const only = (...allowed: string[]) => {
    const stray = given.filter((key) => !allowed.includes(key));
    if (stray.length > 0) throw new CliError(`${action} takes no ${stray.map((key) => `--${key}`).join(', ')}`);
  };
  switch (action) {
    case 'move': {
      only('to');
      const to = text('to');
      if (to === undefined) throw new CliError('move needs --to FLEET (a name or id)');
      return { fleet: to };
    }
    case 'assign_policy': {
      only('policy', 'value');
      const policy = text('policy');
      const value = text('value');
      if (policy === undefined || value === undefined) throw new CliError('policy needs --policy SYMBOL --value VALUE');
      const definition = policyDefinition(policy);
      if (!definition) throw new CliError(`Unknown policy "${policy}" (see: policies)`);
      // Read as `policy set` reads it (yes/no, a choice by its label …).
      return { policy, value: parsePolicyValue(definition, value) };
    }
    case 'deploy': {
      only('package', 'file', 'destination');
      const pkg = text('package');
      const file = text('file');
      if ((pkg === undefined) === (file === undefined)) throw new CliError('deploy needs --package ID or --file ID');
      if (pkg !== undefined && text('destination') !== undefined) throw new CliError('--destination is for --file only');
      const destination = text('destination');
      return pkg !== undefined
        ? { kind: 'package', item_id: positiveInt(pkg, '--package') }
        : { kind: 'file', item_id: positiveInt(file, '--file'), ...(destination === undefined ? {} : { destination }) };
    }
    case 'ping':
    case 'lock':
    case 'unlock':
    case 'inventory':
    case 'geolocate':
    case 'unenroll':
    case 'wipe':
    case 'delete':
      only();
      return {};
  }
}

function wholeCount(text: string | undefined): number {
  const n = Number(text);
  if (text === undefined || !/^\d+$/.test(text) || !Number.isSafeInteger(n))
    throw new CliError(`--count must be a whole number, not "${text ?? ''}"`);
  return n;
}

/** How many devices the selection holds now, as the server resolves it (the same query as `devices`). */
async function selectionCount(admin: AdminClient, body: JobBody): Promise<number> {
  const { ids, filter } = body.selection;
  if (ids) {
    const { items } = await admin.agents.list();
    const present = new Set(items.map((agent) => agent.id));
    return new Set(ids.filter((id) => present.has(id))).size;
  }
  const { items } = await admin.agents.list({ query: { where: filter?.where, view: filter?.view, fleet: filter?.fleet } });
  return items.length;
}

/** Asks for the count on a terminal; a script must say --yes --count N. */
async function confirmCount(verb: string, count: number, given: number | undefined): Promise<number> {
  if (count === 0) throw new CliError(`the selection holds no device: nothing to ${verb}`);
  if (given !== undefined && given !== count)
    throw new CliError(`the selection holds ${devices(count)}, not ${given}: nothing was done`);
  if (!process.stdin.isTTY) {
    throw new CliError(`${verb} cannot be undone: the selection holds ${devices(count)}. Confirm with --yes --count ${count}`);
  }
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await prompt.question(`${verb} ${devices(count)}? This cannot be undone. Type ${count} to confirm: `);
    if (answer.trim() !== String(count))
      throw new CliError(`not confirmed ("${answer.trim()}" is not ${count}): nothing was done`);
  } finally {
    prompt.close();
  }
  return count;
}

/** Follows the job until it has acted on every device, then (up to `answersMs`) until every sent command is answered. */
async function follow(admin: AdminClient, id: number, answersMs: number): Promise<Job> {
  let answersDeadline: number | null = null;
  for (;;) {
    // The job and its counts; of the results only the failed ones (few), not every device's.
    const { results: _failed, ...current } = await admin.jobs.get({ params: { id }, query: { status: 'failed' } });
    if (current.state !== 'running') {
      answersDeadline ??= Date.now() + answersMs;
      if (current.counts.sent === 0 || Date.now() >= answersDeadline) return current;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const devices = (n: number) => `${n.toLocaleString('en-US')} device${n === 1 ? '' : 's'}`;
const tally = (job: Job) =>
  JOB_RESULT_STATUSES.filter((status) => job.counts[status] > 0)
    .map((status) => `${job.counts[status].toLocaleString('en-US')} ${status}`)
    .join(', ') || 'nothing yet';

function summary(job: Job): string {
  return `Job #${job.id}: ${JOB_ACTION_LABELS[job.action]} ${devices(job.total)} (${job.selection}) — ${job.state}: ${tally(job)}`;
}

const jobLine = (job: Job) =>
  `#${job.id}  ${job.created_at}  ${JOB_ACTION_LABELS[job.action]}  ${devices(job.total)}  ${job.state}  ${tally(job)}  (${job.selection})${job.actor ? `  by ${job.actor}` : ''}`;

/** `jobs [--limit N]`: the bulk jobs, newest first. */
const jobs: Handler = async (argv) => {
  const { values, admin, json } = parse(argv, { limit: { type: 'string' } });
  const limit = values.limit === undefined ? undefined : positiveInt(values.limit as string, '--limit');
  const { items } = await admin().jobs.list(limit === undefined ? {} : { query: { limit } });
  return output(
    json,
    items,
    () => items.map(jobLine).join('\n') || 'No jobs yet. Start one with: mdm-console command --fleet NAME ping',
  );
};

/** `job ID [--status S]`: one job and each device's result. */
const job: Handler = async (argv) => {
  const { values, positionals, admin, json } = parse(argv, { status: { type: 'string' } });
  const [idText, ...extra] = positionals;
  if (extra.length > 0) throw new CliError(`one job id, not "${positionals.join(' ')}"`);
  const id = positiveInt(idText, 'the job id');
  const status = values.status as string | undefined;
  if (status !== undefined && !(JOB_RESULT_STATUSES as readonly string[]).includes(status))
    throw new CliError(`--status must be one of ${JOB_RESULT_STATUSES.join(', ')}, not "${status}"`);
  const detail: JobDetail = await admin().jobs.get({
    params: { id },
    ...(status === undefined ? {} : { query: { status: status as JobResultStatus } }),
  });
  return output(json, detail, () =>
    [
      summary(detail),
      ...detail.results.map(
        (result) =>
          `  #${result.agent_id}  ${result.name}  ${result.status}${result.reason ? `  ${result.reason}` : ''}${result.answered_at ? `  answered ${result.answered_at}` : ''}`,
      ),
    ].join('\n'),
  );
};

export const jobCommands: Record<string, Handler> = { jobs, job };
