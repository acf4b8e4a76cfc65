// `export devices|invitations|codes|code-uses|results|jobs|job-results|audit [--format csv|jsonl] [--out FILE] [filters]`:
// a list as CSV or JSON lines, written as it arrives (an export of any length never sits whole in
// memory), to stdout or to FILE. FILE appears only once the export is complete: it is written
// beside it first and renamed at the end, so a failed export leaves no half file.
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { EXPORT_FORMATS, JOB_RESULT_STATUSES, type ExportFormat } from '../../src-shared/contract/index.ts';
import type { AdminClient } from '../../src-shared/contract/admin-client.ts';
import { parse, positiveInt, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';
import { fleetIds } from './token-commands.ts';
import { USAGES } from './usage.ts';

type Values = Record<string, string | boolean | undefined>;
type Options = Parameters<typeof parse>[1];

interface ExportKind {
  options: Options;
  /** The filters as the export's query (values checked here: a typo is an error, not an empty file). */
  query(values: Values, admin: AdminClient): Promise<Record<string, string | number | boolean>>;
  fetch(admin: AdminClient, query: Record<string, string | number | boolean>): Promise<Response>;
}

const text = (values: Values, name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);

function oneOf<T extends string>(values: Values, name: string, allowed: readonly T[]): T | undefined {
  const value = text(values, name);
  if (value !== undefined && !(allowed as readonly string[]).includes(value))
    throw new CliError(`--${name} must be ${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}, not "${value}"`);
  return value as T | undefined;
}

/** `--fleet NAME|ID` as the fleet's id (unknown: an error naming the fleets there are). */
async function fleetOf(values: Values, admin: AdminClient): Promise<{ fleet_id?: number }> {
  const given = text(values, 'fleet');
  return given === undefined ? {} : { fleet_id: (await fleetIds(admin, [given]))[0]! };
}

const id = (values: Values, name: string, key: string) => {
  const given = text(values, name);
  return given === undefined ? {} : { [key]: positiveInt(given, `--${name}`) };
};
const defined = (entries: Record<string, string | number | boolean | undefined>) =>
  Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined)) as Record<
    string,
    string | number | boolean
  >;

const KINDS: Record<string, ExportKind> = {
  devices: {
    options: {
      where: { type: 'string' },
      view: { type: 'string' },
      fleet: { type: 'string' },
      status: { type: 'string' },
      type: { type: 'string' },
      online: { type: 'boolean' },
      offline: { type: 'boolean' },
      compliance: { type: 'string' },
      search: { type: 'string' },
    },
    async query(values) {
      if (values.online && values.offline) throw new CliError('give --online or --offline, not both');
      // The selection as the device list takes it: the server resolves the fleet (name or id) and the view.
      return defined({
        where: text(values, 'where'),
        view: text(values, 'view'),
        fleet: text(values, 'fleet'),
        status: text(values, 'status'),
        type: oneOf(values, 'type', ['android', 'apple'] as const),
        online: values.online ? true : values.offline ? false : undefined,
        compliance: oneOf(values, 'compliance', ['compliant', 'pending', 'failing', 'none'] as const),
        q: text(values, 'search'),
      });
    },
    fetch: (admin, query) => admin.agents.export({ query }),
  },
  invitations: {
    options: { fleet: { type: 'string' }, status: { type: 'string' }, search: { type: 'string' } },
    async query(values, admin) {
      return defined({
        ...(await fleetOf(values, admin)),
        // "enrolled" as the console and `invitations` say it; the API's word is "done".
        status:
          text(values, 'status') === 'enrolled'
            ? 'done'
            : oneOf(values, 'status', ['pending', 'done', 'expired', 'revoked'] as const),
        q: text(values, 'search'),
      });
    },
    fetch: (admin, query) => admin.invitations.export({ query }),
  },
  codes: {
    options: { fleet: { type: 'string' } },
    query: async (values, admin) => fleetOf(values, admin),
    fetch: (admin, query) => admin.codes.export({ query }),
  },
  'code-uses': {
    options: { code: { type: 'string' }, outcome: { type: 'string' } },
    query: async (values) =>
      defined({ ...id(values, 'code', 'code_id'), outcome: oneOf(values, 'outcome', ['used', 'refused'] as const) }),
    fetch: (admin, query) => admin.codes.exportUses({ query }),
  },
  results: {
    options: {
      assignment: { type: 'string' },
      fleet: { type: 'string' },
      agent: { type: 'string' },
      policy: { type: 'string' },
      kind: { type: 'string' },
      state: { type: 'string' },
      status: { type: 'string' },
    },
    async query(values, admin) {
      return defined({
        ...id(values, 'assignment', 'assignment_id'),
        ...(await fleetOf(values, admin)),
        ...id(values, 'agent', 'agent_id'),
        policy: text(values, 'policy'),
        kind: oneOf(values, 'kind', ['deployment', 'value'] as const),
        state: oneOf(values, 'state', ['active', 'removed'] as const),
        status: text(values, 'status'),
      });
    },
    fetch: (admin, query) => admin.policies.exportResults({ query }),
  },
  jobs: {
    options: {},
    query: async () => ({}),
    fetch: (admin, query) => admin.jobs.export({ query }),
  },
  'job-results': {
    options: { job: { type: 'string' }, status: { type: 'string' } },
    query: async (values) => defined({ ...id(values, 'job', 'job_id'), status: oneOf(values, 'status', JOB_RESULT_STATUSES) }),
    fetch: (admin, query) => admin.jobs.exportResults({ query }),
  },
  audit: {
    options: {
      actor: { type: 'string' },
      action: { type: 'string' },
      target: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
    },
    query: async (values) =>
      defined({
        actor: text(values, 'actor'),
        action: text(values, 'action'),
        target_name: text(values, 'target'),
        since: text(values, 'since'),
        until: text(values, 'until'),
      }),
    fetch: (admin, query) => admin.audit.export({ query }),
  },
};

const exportCommand: Handler = async (argv) => {
  const [kindName, ...rest] = argv;
  const kind = kindName === undefined ? undefined : KINDS[kindName];
  if (!kind) {
    throw new CliError(
      `${kindName === undefined ? 'export what?' : `cannot export "${kindName}"`} (${Object.keys(KINDS).join(', ')})\n\n${USAGES.export}`,
    );
  }
  const { values, admin, json } = parse(rest, { ...kind.options, format: { type: 'string' }, out: { type: 'string' } });
  if (json) throw new CliError('export writes CSV or JSON lines: use --format jsonl, not --json');
  const format = oneOf<ExportFormat>(values, 'format', EXPORT_FORMATS) ?? 'csv';
  const out = text(values, 'out');
  if (out === '') throw new CliError('--out needs a file name');
  const client = admin();
  const response = await kind.fetch(client, { ...(await kind.query(values, client)), format });
  const body = response.body ?? new ReadableStream<Uint8Array>();
  if (out === undefined) {
    for await (const chunk of body) if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
    return 0;
  }
  const partial = `${out}.part`;
  const file = createWriteStream(partial, { flags: 'w' });
  let bytes = 0;
  try {
    for await (const chunk of body) {
      bytes += chunk.length;
      if (!file.write(chunk)) await once(file, 'drain');
    }
    file.end();
    await once(file, 'finish');
    await rename(partial, out);
  } catch (error) {
    file.destroy();
    await rm(partial, { force: true });
    throw new CliError(`the export stopped before its end, nothing written to ${out}: ${(error as Error).message}`);
  }
  const disposition = response.headers.get('content-disposition') ?? '';
  const named = /filename="([^"]+)"/.exec(disposition)?.[1];
  console.log(
    `Wrote ${bytes.toLocaleString('en')} bytes of ${format === 'csv' ? 'CSV' : 'JSON lines'} to ${out}${named ? ` (${named})` : ''}`,
  );
  return 0;
};

export const exportCommands: Record<string, Handler> = { export: exportCommand };
