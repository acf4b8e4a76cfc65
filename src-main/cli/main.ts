import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { adminCommands } from './admin-commands.ts';
import { serveCommand } from './serve.ts';
import { CliError } from './server-file.ts';

const USAGE = `mdm-console — device-enrollment console and backend

Usage: mdm-console <command> [options]        (or: npm run cli -- <command> [options])

  serve      [--data-dir DIR] [--port P] [--admin-port A] [--mqtt-port M] [--mqtt-tls-port T]
             [--public-host HOST] [--host ADDR]          run the backend and the web console
             [--mqtt-tls-cert FILE --mqtt-tls-key FILE]  the broker's own TLS certificate (default: generated)
             [--smtp-url smtp(s)://USER:PASS@HOST:PORT] [--mail-from "Name <addr>"]
                                                         (or $MDM_CONSOLE_SMTP_URL, $MDM_CONSOLE_MAIL_FROM;
                                                         no SMTP: emails go to DIR/outbox as .eml)
  invite     --email E [--firstname F] [--lastname L] [--fleet NAME] [--days D] [--no-email]
  invite     --csv FILE [--no-email]                     one invitation per row (all or nothing)
  invitations [--status pending|done|expired|revoked] [--search TEXT]
  revoke     ID                                          revoke a pending invitation
  resend     ID                                          email the invitation again (same link and expiry)
  code create --name N [--fleet F] [--domain D]... [--max-uses K] [--days D] [--approval manual]
                                                         one enrollment code (QR) for many devices
  codes | code revoke ID | code rotate ID                list, revoke, new tokens (printed copies stop working)
  approve AGENT_ID | reject AGENT_ID                     a device enrolled with a code needing approval
  mail       status | test --to ADDRESS | retry          mail transport, test email, retry failed emails
  agents                                                 enrolled devices
  command    AGENT_ID ping|lock|unlock|wipe|unenroll [--fleet NAME] [--no-wait]
                                                         a command to a device over MQTT (--fleet moves it)
  fleets | fleet add NAME | fleet rename ID|NAME NEW_NAME | fleet delete ID|NAME
  file add PATH | package add PATH | files | packages | file rm ID | package rm ID
  deploy     file:ID|package:ID (--fleet NAME | --agent ID) [--destination PATH] [--keep-on-remove]
                                                         publish a file or package to a fleet or one device
  deployments [--fleet NAME] [--agent ID] [--all]        deployments and their progress
  undeploy   ID                                          remove a deployment (and, unless kept, what it installed)
  agent      --deeplink URL --email E [--serial S] [--uuid U] [--type android|apple]
             [--download file:ID|package:ID] [--stay]    the device simulator (with --stay it obeys policies)
  status                                                 where the running server is
  console                                                a new one-time link that opens the console signed in

Every command but serve and agent talks to the server of --data-dir (default: $MDM_CONSOLE_DATA_DIR
or the per-user data folder) and prints JSON with --json.`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 1;
  }
  try {
    if (command === 'serve') return await serveCommand(rest);
    if (command === 'agent') {
      const { runAgentCommand } = await import('../device/cli.ts');
      return await runAgentCommand(rest);
    }
    const handler = adminCommands[command];
    if (!handler) throw new CliError(`Unknown command "${command}". Run mdm-console --help.`);
    return await handler(rest);
  } catch (error) {
    if (error instanceof CliError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`mdm-console: ${(error as Error).message}`);
      return 2;
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
      console.error(error);
      process.exitCode = 1;
    },
  );
}
