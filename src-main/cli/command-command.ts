// `mdm-console command <agent-id> ping|lock|unlock|wipe|unenroll|inventory|geolocate [--fleet NAME]`: commands to a
// device over MQTT through the running server's admin API; with a selection (`--fleet NAME lock`,
// `--where EXPR ping`, `--ids 1,2,3 …`) instead of an id, one bulk job (job-commands.ts).
import { parseArgs } from 'node:util';
import { defaultDataDir } from '../backend/config.ts';
import { adminOf, CliError, readServerFile } from './server-file.ts';
import type { AgentDetail } from '../../src-shared/contract/index.ts';
import { AGENT_COMMANDS, type AgentCommand } from '../../src-shared/contract/rules.ts';
import { BULK_USAGE, bulkCommand } from './job-commands.ts';

export const COMMAND_USAGE = `usage: mdm-console command AGENT_ID [ping|lock|unlock|wipe|unenroll|inventory|geolocate] [--fleet NAME]
                          [--wait | --no-wait] [--timeout SECONDS] [--json] [--data-dir DIR]

  ping       waits for the device's answer (unless --no-wait)
  inventory, geolocate   ask for the device's inventory or position; wait for it (unless --no-wait)
  lock, unlock, wipe, unenroll   retained: a device that is offline gets them when it connects
                                 (--wait waits for the confirmation of unenroll)
  --fleet NAME   moves the device to that fleet (it is told with Command/Subscribe)

${BULK_USAGE}`;

const VERBS = AGENT_COMMANDS;
type Verb = AgentCommand;
/** The event each command's reply produces, for those that have one. */
const REPLY_EVENT: Partial<Record<Verb, string>> = {
  ping: 'agent.ping_reply',
  unenroll: 'agent.unenrolled',
  inventory: 'agent.inventory',
  geolocate: 'agent.geolocation',
};
/** Commands whose answer is waited for by default. */
const WAITED: readonly Verb[] = ['ping', 'inventory', 'geolocate'];

/** Whether `command`'s arguments select devices (a bulk job) rather than name one device by its id. */
function isBulk(argv: string[]): boolean {
  if (argv.some((arg) => /^--(ids|where|view)(=|$)/.test(arg))) return true;
  const first = argv.find((arg, i) => !arg.startsWith('-') && !/^--(data-dir|fleet|timeout)$/.test(argv[i - 1] ?? ''));
  return first !== undefined && !/^\d+$/.test(first);
}

export async function commandCommand(argv: string[]): Promise<number> {
  if (isBulk(argv) && !argv.includes('--help') && !argv.includes('-h')) return bulkCommand(argv);
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    allowNegative: true,
    strict: true,
    options: {
      'data-dir': { type: 'string' },
      json: { type: 'boolean' },
      fleet: { type: 'string' },
      wait: { type: 'boolean' },
      timeout: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(COMMAND_USAGE);
    return 0;
  }
  const [idText, verbText, ...extra] = positionals;
  const id = Number(idText);
  if (!idText || !Number.isInteger(id) || id < 1) throw new CliError(`the agent id must be a positive integer\n${COMMAND_USAGE}`);
  if (extra.length > 0) throw new CliError(`one command at a time, not "${[verbText, ...extra].join(' ')}"`);
  if (verbText !== undefined && !(VERBS as readonly string[]).includes(verbText)) {
    throw new CliError(`unknown command "${verbText}": use ${VERBS.join(', ')}`);
  }
  const verb = verbText as Verb | undefined;
  if (!verb && values.fleet === undefined) throw new CliError(`nothing to do: give a command or --fleet NAME\n${COMMAND_USAGE}`);
  const timeoutSeconds = values.timeout === undefined ? 10 : Number(values.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0)
    throw new CliError(`--timeout must be a positive number of seconds, not "${values.timeout}"`);

  const admin = adminOf(readServerFile(values['data-dir'] ?? defaultDataDir()));
  const lines: string[] = [];
  const result: Record<string, unknown> = {};

  if (values.fleet !== undefined) {
    const moved = await admin.agents.move({ params: { id }, body: { fleet: values.fleet } });
    result.fleet = { fleet: moved.fleet, command: moved.command };
    lines.push(
      moved.command
        ? `${moved.name} moved to fleet "${moved.fleet}" (Command/Subscribe sent, retained)`
        : `${moved.name} is already in fleet "${moved.fleet}"`,
    );
  }

  let exit = 0;
  if (verb) {
    const sent = await admin.agents.command({ params: { id }, body: { command: verb } });
    const { agent, ...command } = sent;
    result.command = command;
    const name = agent.name;
    lines.push(
      `${verb} sent to ${name} on ${sent.topic}${sent.retained ? ' (retained)' : ''}` +
        (sent.online ? '' : sent.retained ? ': the device is offline and gets it when it connects' : ''),
    );
    const replyType = REPLY_EVENT[verb];
    const wait = values.wait ?? WAITED.includes(verb);
    if (wait && replyType) {
      const reply = await waitForEvent(
        () => admin.agents.get({ params: { id } }),
        replyType,
        sent.event_id,
        timeoutSeconds * 1000,
      );
      result.reply = reply;
      if (reply) lines.push(`reply: ${reply.message}`);
      else {
        lines.push(`no reply within ${timeoutSeconds} s`);
        exit = 1;
      }
    }
  }
  console.log(values.json ? JSON.stringify(result, null, 2) : lines.join('\n'));
  return exit;
}

/** Polls the agent's events for the first `type` newer than `afterId`. */
async function waitForEvent(read: () => Promise<AgentDetail>, type: string, afterId: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { events } = await read();
    const found = events.filter((event) => event.type === type && event.id > afterId).sort((a, b) => a.id - b.id)[0];
    if (found) return found;
    if (Date.now() >= deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, Math.min(200, Math.max(deadline - Date.now(), 1))));
  }
}
