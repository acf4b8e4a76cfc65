import { viewCommands } from './view-commands.ts';
import { jobCommands } from './job-commands.ts';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { codeCommands } from './code-commands.ts';
import { tokenCommands } from './token-commands.ts';
import { alertCommands } from './alert-commands.ts';
import { accountCommands } from './account-commands.ts';
import { exportCommands } from './export-commands.ts';
import { commandCommand } from './command-command.ts';
import { deployCommands } from './deploy-commands.ts';
import { deploymentStatusCommands } from './deployment-status.ts';
import { policyCommands } from './policy-commands.ts';
import { reportCommands } from './report-commands.ts';
import { invitationsFromCsv, type CsvRow } from './csv.ts';
import { INVITATION_LIFETIME_DAYS, isWholeNumberIn } from '../../src-shared/contract/rules.ts';
import { CliError } from './server-file.ts';
import { output, parse, positiveInt, type Handler } from './handler.ts';
import { AdminApiError, collectionOf, type AdminClient } from '../../src-shared/contract/admin-client.ts';
import type {
  Invitation,
  InvitationBulk,
  InvitationCreate,
  InvitationStatus,
  StoredItem,
  UploadQuery,
} from '../../src-shared/contract/index.ts';

function deliveryText(d: Invitation['delivery']): string {
  if (!d) return 'not emailed';
  if (d.state === 'failed') return `email failed: ${d.error ?? ''}`;
  if (d.state === 'queued' && d.retry_at)
    return `email will retry at ${localTime(d.retry_at)} (last try: ${d.error ?? 'failed'})`;
  if (d.state === 'outbox') return `email in outbox ${d.outbox_file ?? ''}`;
  return `email ${d.state}`;
}

/** A time on this machine's clock, 24-hour, with the date when it is not today. */
function localTime(iso: string): string {
  const at = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  const time = `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
  const date = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}`;
  return at.toDateString() === new Date().toDateString() ? time : `${date} ${time}`;
}

/** The console's words for an invitation's state (the API says `done` for used). */
const STATUS_LABEL: Record<string, string> = { pending: 'Pending', done: 'Enrolled', expired: 'Expired', revoked: 'Revoked' };
const statusLabel = (status: string) => STATUS_LABEL[status] ?? status;

/**
 * An invitation as the CLI prints it with --json: the console's word "enrolled" for a used one
 * (the API and the agent spec keep "done"), like --status enrolled and the text output.
 */
type AdminInvitation = Omit<Invitation, 'status'> & { status: Exclude<InvitationStatus, 'done'> | 'enrolled' };
export const forAdmin = (invitation: Invitation): AdminInvitation => ({
  ...invitation,
  status: invitation.status === 'done' ? 'enrolled' : invitation.status,
});

const invitationLine = (i: Invitation) =>
  `#${i.id}  ${i.email}  ${statusLabel(i.status)}  expires ${i.expires_at}  fleet ${i.fleet ?? '-'}  ${deliveryText(i.delivery)}\n    ${i.deeplink}`;

function wholeNumber(value: string, what: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n))
    throw new CliError(`${what} must be a whole number, not "${value}"`);
  return n;
}

/**
 * Said before any code is made or email queued: codes that carry a loopback address are useless
 * to a phone. On stderr, so --json output stays clean.
 */
async function warnIfPhonesCannotReach(admin: AdminClient): Promise<void> {
  const status = await admin.status();
  if (!status.warnings.some((w) => /loopback/i.test(w))) return;
  const pick = status.lan_addresses[0];
  process.stderr.write(
    `Warning: phones cannot reach this server. Its public host ${status.public_host} is a loopback address, and the QR codes, links and emails made now carry it.\n` +
      (pick
        ? `  Fix: restart serve with --public-host ${pick}, or in the console click "Use ${pick}" (Dashboard).\n`
        : '  Fix: connect this computer to the network the phones use, then restart serve with --public-host ADDRESS.\n'),
  );
}

/** The server's rule, checked here so the CLI can say it in its own words. */
function lifetimeDays(value: string): number {
  const n = Number(value);
  if (!isWholeNumberIn(n, INVITATION_LIFETIME_DAYS)) {
    throw new CliError(
      `--days is how many days the invitation stays valid: a whole number from ${INVITATION_LIFETIME_DAYS.min} to ${INVITATION_LIFETIME_DAYS.max}, not "${value}"`,
    );
  }
  return n;
}

/** The bulk endpoint takes at most this many rows per request. */
export const BULK_BATCH = 5000;

type BulkOptions = Pick<InvitationBulk, 'send_email' | 'another'>;

/**
 * What is wrong with each row of a CSV, by its line of the file: duplicates across the whole file
 * here, the server's rules batch by batch (its `row N` is the row's place in the batch sent).
 */
async function csvProblems(admin: AdminClient, rows: CsvRow[], another: boolean): Promise<Map<CsvRow, string[]>> {
  const problems = new Map<CsvRow, string[]>();
  const add = (row: CsvRow, message: string) => problems.set(row, [...(problems.get(row) ?? []), message]);
  const first = new Map<string, CsvRow>();
  rows.forEach((row, index) => {
    const email = row.invitation.email.trim().toLowerCase();
    if (!email) return;
    const earlier = first.get(email);
    if (earlier === undefined) first.set(email, row);
    else if (Math.floor(rows.indexOf(earlier) / BULK_BATCH) !== Math.floor(index / BULK_BATCH))
      add(row, `${email} already appears on line ${earlier.line}`);
  });
  for (let start = 0; start < rows.length; start += BULK_BATCH) {
    const batch = rows.slice(start, start + BULK_BATCH);
    const { errors } = await admin.invitations.validate({ body: { invitations: batch.map((row) => row.invitation), another } });
    for (const error of errors) {
      const match = /^row (\d+): (.*)$/s.exec(error);
      const row = match ? batch[Number(match[1]) - 1] : undefined;
      if (!row) throw new CliError(`the server refused the file: ${error}`);
      add(
        row,
        match![2]!.replace(/ in row (\d+)/, (_m, n: string) => ` on line ${batch[Number(n) - 1]?.line ?? n}`),
      );
    }
  }
  return problems;
}

const problemLines = (problems: Map<CsvRow, string[]>) =>
  [...problems].sort(([a], [b]) => a.line - b.line).map(([row, messages]) => `line ${row.line}: ${messages.join('; ')}`);

/**
 * A CSV import, the console's rule: every row is checked first; with a row in error nothing is
 * created (each bad row named by its line of the file), unless `skipInvalid`, which creates the
 * valid rows and names the others. Rows are created in batches of BULK_BATCH.
 */
async function inviteFromCsv(
  admin: AdminClient,
  rows: CsvRow[],
  extra: BulkOptions & { skipInvalid: boolean },
  progress: (text: string) => void,
) {
  const problems = await csvProblems(admin, rows, extra.another === true);
  const skipped = problemLines(problems);
  if (problems.size > 0 && (!extra.skipInvalid || problems.size === rows.length)) {
    const pending = [...problems.values()].flat().some((text) => text.includes('already has a pending invitation'));
    const hints = [
      ...(pending
        ? [
            'For addresses with a pending invitation: remove their rows and resend with mdm-console resend ID, or add --another to invite them again.',
          ]
        : []),
      ...(problems.size < rows.length ? ['--skip-invalid creates the valid rows and lists the others.'] : []),
    ];
    throw new CliError(
      `${problems.size} of ${rows.length} row(s) are invalid; nothing was created:\n  ${skipped.join('\n  ')}` +
        hints.map((hint) => `\n(${hint})`).join(''),
    );
  }
  const valid = rows.filter((row) => !problems.has(row));
  const created: Invitation[] = [];
  let queued = 0;
  const { skipInvalid: _skip, ...options } = extra;
  void _skip;
  for (let start = 0; start < valid.length; start += BULK_BATCH) {
    const batch = valid.slice(start, start + BULK_BATCH);
    if (valid.length > BULK_BATCH) progress(`Creating rows ${start + 1} to ${start + batch.length} of ${valid.length}…`);
    try {
      const result = await admin.invitations.createMany({
        body: { invitations: batch.map((row) => row.invitation), ...options },
      });
      created.push(...result.items);
      queued += result.mail.queued;
    } catch (error) {
      if (created.length === 0) throw error;
      // Checked a moment ago, so only a change meanwhile gets here: say exactly what exists.
      throw new CliError(
        `the rows from line ${batch[0]!.line} on were not created (${(error as Error).message}); ` +
          `those up to line ${valid[start - 1]!.line} were (invitations #${created[0]!.id} to #${created.at(-1)!.id})`,
      );
    }
  }
  return { items: created, queued, skipped };
}

const invite: Handler = async (argv) => {
  const { values, admin, json } = parse(argv, {
    email: { type: 'string' },
    firstname: { type: 'string' },
    lastname: { type: 'string' },
    fleet: { type: 'string' },
    days: { type: 'string' },
    csv: { type: 'string' },
    'no-email': { type: 'boolean' },
    another: { type: 'boolean' },
    resend: { type: 'boolean' },
    'skip-invalid': { type: 'boolean' },
  });
  const days = values.days === undefined ? undefined : lifetimeDays(values.days as string);
  // Absent: the server's mail_send_on_create setting decides (on by default).
  const extra: BulkOptions = {
    ...(values['no-email'] ? { send_email: false } : {}),
    ...(values.another ? { another: true } : {}),
  };
  if (values.another && values.resend)
    throw new CliError(
      '--another and --resend exclude each other: one creates a new invitation, the other emails the pending one again',
    );
  await warnIfPhonesCannotReach(admin());
  if (values.csv) {
    if (values.resend) throw new CliError('--resend works with --email; for a CSV, resend with mdm-console resend ID');
    let rows;
    try {
      rows = invitationsFromCsv(readFileSync(values.csv as string, 'utf8'));
    } catch (error) {
      throw new CliError(`${values.csv}: ${(error as Error).message}`);
    }
    if (rows.length === 0) throw new CliError(`${values.csv}: no rows after the header`);
    if (days !== undefined) rows = rows.map((row) => ({ ...row, invitation: { ...row.invitation, days } }));
    const result = await inviteFromCsv(admin(), rows, { ...extra, skipInvalid: values['skip-invalid'] === true }, (text) => {
      if (!json) console.error(text);
    });
    const mailed = result.queued ? `; ${result.queued} email(s) queued` : '';
    // The rows left out, on stderr so --json output stays the list of what was created.
    if (result.skipped.length)
      process.stderr.write(
        `${result.skipped.length} invalid row(s) skipped (--skip-invalid):\n  ${result.skipped.join('\n  ')}\n`,
      );
    return output(
      json,
      result.items.map(forAdmin),
      () => `${result.items.length} invitation(s) created${mailed}\n${result.items.map(invitationLine).join('\n')}`,
    );
  }
  if (!values.email) throw new CliError('invite needs --email ADDRESS (or --csv FILE); see mdm-console invite --help');
  const body: InvitationCreate = {
    email: values.email as string,
    firstname: values.firstname as string | undefined,
    lastname: values.lastname as string | undefined,
    fleet: values.fleet as string | undefined,
    days,
    ...extra,
  };
  let created: Invitation;
  try {
    created = await admin().invitations.create({ body: body });
  } catch (error) {
    // 409 ERROR_INVITATION_PENDING carries the pending invitation.
    const pending =
      error instanceof AdminApiError && error.status === 409 ? (error.body.invitation as Invitation | undefined) : undefined;
    if (!pending) throw error;
    if (values.resend) {
      const resent = await admin().invitations.resend({ params: { id: pending.id } });
      return output(
        json,
        forAdmin(resent),
        () =>
          `${resent.email} already had a pending invitation: #${resent.id} emailed again (same link, same expiry)\n${invitationLine(resent)}`,
      );
    }
    throw new CliError(
      `${pending.email} already has a pending invitation: #${pending.id}, valid until ${pending.expires_at}.\n` +
        `  Email it again:              mdm-console resend ${pending.id}   (or invite again with --resend)\n` +
        `  Invite anyway (a 2nd device): add --another`,
      3,
    );
  }
  return output(json, forAdmin(created), () => `Invitation created\n${invitationLine(created)}`);
};

const invitations: Handler = async (argv) => {
  const { values, admin, json } = parse(argv, { status: { type: 'string' }, search: { type: 'string' } });
  // "enrolled" is what the console calls it; the API says "done". Other words: the server judges them.
  const status = values.status === 'enrolled' ? 'done' : (values.status as InvitationStatus | undefined);
  const result = await admin().invitations.list({ query: { status, q: values.search as string | undefined } });
  return output(json, result.items.map(forAdmin), () => result.items.map(invitationLine).join('\n') || 'No invitations.');
};

const revoke: Handler = async (argv) => {
  const { positionals, admin, json } = parse(argv, {});
  const id = positiveInt(positionals[0], 'the invitation id');
  const result = await admin().invitations.revoke({ params: { id } });
  return output(json, forAdmin(result), () => `Invitation #${id} revoked`);
};

const resend: Handler = async (argv) => {
  const { positionals, admin, json } = parse(argv, {});
  const id = positiveInt(positionals[0], 'the invitation id');
  const result = await admin().invitations.resend({ params: { id } });
  return output(
    json,
    forAdmin(result),
    () => `Invitation #${id} email queued again (same link, same expiry)\n${invitationLine(result)}`,
  );
};

/** `mail status`, `mail test --to ADDRESS`, `mail retry`. */
const mail: Handler = async (argv) => {
  const { positionals, values, admin, json } = parse(argv, { to: { type: 'string' } });
  const [action] = positionals;
  if (action === 'status' || action === undefined) {
    const status = await admin().mail.status();
    const next = status.next_retry_at
      ? `\n${status.counts.retrying} waiting for a retry; next at ${localTime(status.next_retry_at)} (mail retry sends them now)`
      : '';
    return output(
      json,
      status,
      () =>
        `${status.transport?.summary ?? status.error}\n${Object.entries(status.counts)
          .map(([k, v]) => `${k}: ${v}`)
          .join('  ')}${next}`,
    );
  }
  if (action === 'test') {
    if (!values.to) throw new CliError('mail test needs --to ADDRESS');
    const result = await admin().mail.test({ body: { to: values.to as string } });
    return output(json, result, () =>
      result.via === 'outbox'
        ? `No SMTP configured: test message written to ${result.file}`
        : `Sent. Server answered: ${result.response}`,
    );
  }
  if (action === 'retry') {
    const result = await admin().mail.retry({ body: {} });
    return output(json, result, () => `${result.queued} failed or waiting email(s) queued again`);
  }
  throw new CliError('usage: mail status | mail test --to ADDRESS | mail retry');
};

const fleets: Handler = async (argv) => {
  const { admin, json } = parse(argv, {});
  const { items } = await admin().fleets.list();
  return output(json, items, () =>
    items.map((f) => `#${f.id}  ${f.name}${f.is_default ? ' (default)' : ''}  ${f.agent_count} agent(s)`).join('\n'),
  );
};

/** `file add PATH`, `package add PATH`, `file rm ID`, `files`, `packages`. */
function storedItems(kind: 'file' | 'package'): { single: Handler; list: Handler } {
  const list: Handler = async (argv) => {
    const { admin, json } = parse(argv, {});
    const rows = await admin()[collectionOf(kind)].list();
    return output(
      json,
      rows,
      () => rows.map((i) => `#${i.id}  ${i.name}  ${i.size} bytes  sha256 ${i.sha256}`).join('\n') || `No ${kind}s.`,
    );
  };
  const single: Handler = async (argv) => {
    const { positionals, values, admin, json } = parse(argv, {
      name: { type: 'string' },
      // Packages whose manifest is not read (anything but an APK): what devices need to install them.
      'package-name': { type: 'string' },
      'version-code': { type: 'string' },
      'version-name': { type: 'string' },
      // An APK whose manifest cannot be read: refuse it (the default) or keep it as described.
      'if-unreadable': { type: 'string' },
      // `file add x.apk`: store an APK as a plain file rather than as a package.
      'as-file': { type: 'boolean' },
    });
    const [action, target] = positionals;
    if (action === 'add' && target) {
      let size: number;
      try {
        const stat = statSync(target);
        if (!stat.isFile()) throw new Error('not a regular file');
        size = stat.size;
      } catch (error) {
        throw new CliError(`${target}: ${(error as Error).message}`);
      }
      const name = (values.name as string | undefined) ?? basename(target);
      if (kind === 'file' && /\.apk$/i.test(name) && values['as-file'] !== true) {
        throw new CliError(
          `${name} is an Android app (APK): add it as a package, which devices install, with\n` +
            `  mdm-console package add ${target}\n` +
            'or pass --as-file to store it as a plain file that devices only download.',
        );
      }
      const ifUnreadable = values['if-unreadable'] as string | undefined;
      if (ifUnreadable !== undefined && ifUnreadable !== 'keep' && ifUnreadable !== 'refuse') {
        throw new CliError(`--if-unreadable is keep or refuse, not "${ifUnreadable}"`);
      }
      const stream = Readable.toWeb(createReadStream(target)) as ReadableStream;
      const query: UploadQuery = { name };
      if (kind === 'package') {
        if (values['package-name'] !== undefined) query.package_name = values['package-name'] as string;
        if (values['version-code'] !== undefined)
          query.version_code = wholeNumber(values['version-code'] as string, '--version-code');
        if (values['version-name'] !== undefined) query.version_name = values['version-name'] as string;
        if (ifUnreadable !== undefined) query.if_unreadable = ifUnreadable;
        if (ifUnreadable === 'keep' && (query.package_name === undefined || query.version_code === undefined)) {
          throw new CliError('--if-unreadable keep needs --package-name and --version-code: they describe the package');
        }
      }
      let item: StoredItem;
      try {
        item = await admin()[collectionOf(kind)].upload({ body: stream, query, headers: { 'content-length': String(size) } });
      } catch (error) {
        if (error instanceof AdminApiError && error.code === 'ERROR_APK_UNREADABLE') {
          throw new CliError(
            `${error.message}\nNothing was stored. To keep it anyway, as the package you describe:\n` +
              `  mdm-console package add ${target} --if-unreadable keep --package-name NAME --version-code N [--version-name V]`,
          );
        }
        throw error;
      }
      const described =
        kind === 'package' && item.package_name
          ? `, ${item.package_name}${item.version_name ? ` ${item.version_name}` : ''}${item.version_code !== null && item.version_code !== undefined ? ` (code ${item.version_code})` : ''}`
          : '';
      return output(
        json,
        item,
        () =>
          `${kind === 'file' ? 'File' : 'Package'} #${item.id} "${item.name}" added (${item.size} bytes${described}, sha256 ${item.sha256})`,
      );
    }
    if ((action === 'rm' || action === 'delete') && target) {
      const id = positiveInt(target, `the ${kind} id`);
      await admin()[collectionOf(kind)].remove({ params: { id } });
      return output(json, { id, deleted: true }, () => `${kind} #${id} deleted`);
    }
    if (action === 'list' || action === undefined) return list(argv.filter((a) => a !== 'list'));
    throw new CliError(
      `usage: ${kind} add PATH [--name NAME]${kind === 'package' ? ' [--package-name P --version-code N --version-name V] [--if-unreadable refuse|keep]' : ' [--as-file]'} | ${kind} rm ID | ${kind}s`,
    );
  };
  return { single, list };
}

const files = storedItems('file');
const packages = storedItems('package');

/** `status`: where the server is, and a fresh sign-in link (the one it printed at start is used up). */
const status: Handler = async (argv) => {
  const { admin, json } = parse(argv, {});
  const current = await admin().status();
  const { console_url } = await admin().consoleTicket();
  const view = { ...current, console_url };
  const c = current.counts;
  return output(json, view, () =>
    [
      `MDM Console server running (pid ${current.pid}, since ${current.started_at}), data in ${current.data_dir}`,
      `  Agent API (base_url):  ${current.api_url}`,
      `  Deeplink page:         ${current.deeplink_url}/deeplink/`,
      `  MQTT broker:           ${current.public_host}:${current.mqtt_port} (TLS ${current.mqtt_tls_port}, SHA-256 ${current.mqtt_tls_fingerprint})`,
      `  Admin API:             ${current.admin_url}/api`,
      `  Invitations:           ${c.pending} pending, ${c.used} enrolled`,
      `  Devices:               ${c.agents} (${c.enrolled} enrolled, ${c.online} online)`,
      `  Nodes:                 ${current.nodes.filter((n) => n.live).length} of ${current.nodes.length} live (this one: ${current.node_name})`,
      ...current.nodes.map(
        (n) =>
          `    ${n.name.padEnd(20)} ${(n.live ? 'live' : n.stopped_at ? 'stopped' : 'silent').padEnd(8)} ${n.admin_url}  ${n.agent_url}  ${n.version}  ${n.mqtt_broker}  heard ${n.last_heartbeat}`,
      ),
      ...current.warnings.map((warning) => `  Warning: ${warning}`),
      `  Console:               ${console_url}`,
      `                         (a new sign-in link: opens the console once, within 15 minutes)`,
    ].join('\n'),
  );
};

/** `console [--as EMAIL]`: a fresh one-time link that opens the console signed in, as the owner or the admin named. */
const consoleLink: Handler = async (argv) => {
  const { admin, json, values } = parse(argv, { as: { type: 'string' } });
  const as = typeof values.as === 'string' ? values.as.trim() : undefined;
  if (as === '') throw new CliError('--as needs the email of an admin');
  const ticket = await admin().consoleTicket(as === undefined ? {} : { query: { as } });
  const who = as === undefined ? '' : ` as ${as}`;
  return output(json, ticket, () => `Open this link once to sign in to the console${who}:\n  ${ticket.console_url}`);
};

export const adminCommands: Record<string, Handler> = {
  console: consoleLink,
  invite,
  invitations,
  revoke,
  resend,
  mail,
  agents: viewCommands.devices!,
  fleets,
  file: files.single,
  files: files.list,
  package: packages.single,
  packages: packages.list,
  status,
  command: commandCommand,
  ...deployCommands,
  ...deploymentStatusCommands,
  ...policyCommands,
  ...reportCommands,
  ...codeCommands,
  ...tokenCommands,
  ...accountCommands,
  ...alertCommands,
  ...viewCommands,
  ...jobCommands,
  ...exportCommands,
};
