import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { adminCommands } from './admin-commands.ts';
import { serveCommand } from './serve.ts';
import { backupCommand, restoreCommand } from './backup-commands.ts';
import { migrateDbCommand } from './migrate-db-command.ts';
import { COMMAND_USAGE } from './command-command.ts';
import { CliError, refusalText } from './server-file.ts';
import { AdminApiError } from '../../src-shared/contract/admin-client.ts';
import { StartupError } from '../backend/startup-error.ts';
import { OVERALL_USAGE, USAGES } from './usage.ts';

const wantsHelp = (argv: string[]) => argv.includes('--help') || argv.includes('-h');

async function usageOf(command: string): Promise<string | undefined> {
  if (command === 'command') return COMMAND_USAGE;
  if (command === 'agent') return (await import('../device/cli.ts')).AGENT_USAGE;
  return USAGES[command];
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    const usage = command === 'help' && rest[0] ? await usageOf(rest[0]) : undefined;
    console.log(usage ?? OVERALL_USAGE);
    return command ? 0 : 1;
  }
  if (wantsHelp(rest)) {
    const usage = await usageOf(command);
    if (usage) {
      console.log(usage);
      return 0;
    }
  }
  try {
    if (command === 'serve') return await serveCommand(rest);
    if (command === 'backup') return await backupCommand(rest);
    if (command === 'restore') return await restoreCommand(rest);
    if (command === 'migrate-db') return await migrateDbCommand(rest);
    if (command === 'agent') {
      const { runAgentCommand } = await import('../device/cli.ts');
      return await runAgentCommand(rest);
    }
    const handler = adminCommands[command];
    if (!handler) throw new CliError(`Unknown command "${command}". Run mdm-console --help.`);
    return await handler(rest);
  } catch (error) {
    if (error instanceof CliError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      const usage = (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? await usageOf(command) : undefined;
      // Node's wording adds advice about positional arguments that only confuses here.
      const message = (error as Error).message.replace(/\. To specify a positional argument.*$/s, '');
      console.error(`mdm-console: ${message}${usage ? `\n\n${usage}` : ''}`);
      return (error as CliError).exitCode ?? 2;
    }
    // The server refused (its message) or could not be reached: a usage-level failure, as before.
    if (error instanceof AdminApiError) {
      // A role without the permission: the server's line names the role and the permission it lacks.
      if (error.status === 403 && error.code === 'ERROR_FORBIDDEN') {
        const via = process.env.MDM_CONSOLE_TOKEN?.trim() ? ' (with the API token in MDM_CONSOLE_TOKEN)' : '';
        console.error(`mdm-console: not allowed: ${error.message}${via}`);
        return 2;
      }
      console.error(`mdm-console: ${refusalText(error)}`);
      return 2;
    }
    if (error instanceof StartupError) {
      console.error(`mdm-console: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

const invokedDirectly = (() => {
  try {
    const entry = realpathSync(process.argv[1] ?? '');
    return entry === fileURLToPath(import.meta.url) || entry.endsWith('/bin/mdm-console.js');
  } catch {
    return false;
  }
})();

if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      // A bug, not a user's mistake: the message, and the stack only when asked for.
      console.error(`mdm-console: unexpected error: ${(error as Error)?.message ?? String(error)}`);
      if (process.env.MDM_CONSOLE_DEBUG) console.error(error);
      else console.error('(run with MDM_CONSOLE_DEBUG=1 to see where it happened)');
      process.exitCode = 1;
    },
  );
}
