// `mdm-console agent …`: argument parsing and printing around runAgent.
import { parseArgs } from 'node:util';
import { runAgent } from './agent.ts';
import type { AgentRunOptions, AgentRunResult } from './agent.ts';
import { AgentApiError } from './api-client.ts';
import { DeeplinkError } from './deeplink.ts';
import { dialectOf } from './dialect.ts';
import { parseDownloadTarget } from './download.ts';
import type { AgentType } from './enroll.ts';
import { MqttRefusedError } from './mqtt-agent.ts';
import { MQTT_ARGUMENTS, MQTT_USAGE, mqttFlagsOf, MqttSession, type MqttFlags } from './mqtt-cli.ts';

export interface CliOutput {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

const processOutput: CliOutput = {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
};

export const AGENT_USAGE = `usage: mdm-console agent --deeplink URL --email EMAIL [options]

Simulates an MDM agent: enrolls through the agent REST API with the invitation deeplink,
then downloads and verifies files or packages with the agent's api_token.

  --deeplink URL        deeplink page URL, app link or bare base64 data (required)
  --email EMAIL         the invited email address (required: the deeplink does not carry it)
  --serial S            device serial (default: random, realistic)
  --uuid U              device UUID (default: random)
  --type android|apple  MDM type (default android)
  --version V           agent version (default 1.0.0; with --dialect flyve 2.0.0-rc.7 or -rc.6)
  --dialect spec|flyve  speak as the spec's agent (default) or as the reference Flyve agent:
                        Flyve resource names, Session-Token header, GLPI session keys, inventory at enrollment
  --reports http|mqtt   with --dialect flyve: report pings, presence, inventory and position over HTTP
                        (release 2.0.0-rc.7, the default) or over MQTT (release 2.0.0-rc.6)
  --firstname NAME, --lastname NAME
  --download file:ID|package:ID   download and verify byte ranges (repeatable)
  --android-version V   the Android version the phone runs and its inventory reports (e.g. 4.4);
                        value policies needing a newer one are reported incompatible
  --system              the agent is a system app (has_system_permission; system-only policies
                        are reported incompatible without it)
${MQTT_USAGE}
  --json                print one JSON object instead of progress lines
  -h, --help`;

/** Runs `agent` with the arguments that follow it; resolves to the process exit code. */
export async function runAgentCommand(argv: string[], output: CliOutput = processOutput): Promise<number> {
  let options: AgentRunOptions;
  let json: boolean;
  let mqtt: MqttFlags;
  try {
    const parsed = parseAgentArguments(argv);
    if (parsed === 'help') {
      output.stdout(AGENT_USAGE);
      return 0;
    }
    ({ options, json, mqtt } = parsed);
  } catch (error) {
    output.stderr(`error: ${error instanceof Error ? error.message : String(error)}`);
    output.stderr('run with --help for usage');
    return 2;
  }

  // After enrollment the agent connects to the broker (mqtt-agent.ts); --stay keeps it there.
  const session = new MqttSession(mqtt, json ? () => {} : output.stdout);
  if (mqtt.enabled) options.afterEnrollment = session.hook;
  try {
    const result = await runAgent(options, json ? () => {} : output.stdout);
    const mqttSession = await session.finish();
    if (json) output.stdout(JSON.stringify({ ...result, mqtt_session: mqttSession }, null, 2));
    else {
      printSummary(result, output.stdout);
      if (mqttSession.state?.waitingForApproval) output.stdout('  still waiting for approval by an administrator');
    }
    if (!result.ok && !json) output.stderr('error: some download checks failed');
    return result.ok && mqttSession.end !== 'refused' ? 0 : 1;
  } catch (error) {
    await session.stop().catch(() => {});
    if (json) output.stdout(JSON.stringify({ ok: false, error: errorJson(error) }, null, 2));
    else output.stderr(`error: ${describeFailure(error)}`);
    return 1;
  }
}

function parseAgentArguments(argv: string[]): { options: AgentRunOptions; json: boolean; mqtt: MqttFlags } | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      deeplink: { type: 'string' },
      email: { type: 'string' },
      serial: { type: 'string' },
      uuid: { type: 'string' },
      type: { type: 'string' },
      version: { type: 'string' },
      dialect: { type: 'string' },
      reports: { type: 'string' },
      firstname: { type: 'string' },
      lastname: { type: 'string' },
      download: { type: 'string', multiple: true },
      'android-version': { type: 'string' },
      system: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      ...MQTT_ARGUMENTS,
    },
  });
  if (values.help) return 'help';
  if (!values.deeplink) throw new Error('--deeplink is required (the invitation link or its data)');
  if (!values.email) {
    throw new Error('--email is required: the deeplink does not carry the invited address, and the server checks it');
  }
  const type = values.type ?? 'android';
  if (type !== 'android' && type !== 'apple') throw new Error(`--type must be android or apple, got ${JSON.stringify(type)}`);
  const downloads = values.download ?? [];
  downloads.forEach(parseDownloadTarget); // reject bad targets before enrolling

  const dialectName = values.dialect ?? 'spec';
  if (dialectName !== 'spec' && dialectName !== 'flyve')
    throw new Error(`--dialect must be spec or flyve, got ${JSON.stringify(dialectName)}`);
  const reports = values.reports;
  if (reports !== undefined && reports !== 'http' && reports !== 'mqtt')
    throw new Error(`--reports must be http or mqtt, got ${JSON.stringify(reports)}`);
  const options: AgentRunOptions = { deeplink: values.deeplink, email: values.email, type: type satisfies AgentType, downloads };
  if (values.dialect !== undefined) options.dialect = dialectOf(dialectName, reports);
  else if (reports !== undefined) throw new Error('--reports needs --dialect flyve');
  if (values.serial !== undefined) options.serial = values.serial;
  if (values.uuid !== undefined) options.uuid = values.uuid;
  if (values.version !== undefined) options.version = values.version;
  if (values.firstname !== undefined) options.firstname = values.firstname;
  if (values.lastname !== undefined) options.lastname = values.lastname;
  const androidVersion = values['android-version'];
  if (androidVersion !== undefined) {
    if (!/^\d{1,2}(\.\d{1,2}){0,2}$/.test(androidVersion))
      throw new Error(`--android-version must look like 4.4, 9 or 13.0, got ${JSON.stringify(androidVersion)}`);
    options.androidVersion = androidVersion;
  }
  if (values.system) options.system = true;
  return { options, json: values.json ?? false, mqtt: mqttFlagsOf(values) };
}

function printSummary(result: AgentRunResult, print: (line: string) => void): void {
  const { enrollment, mqtt } = result;
  print('');
  print(`enrolled: agent ${enrollment.agentId} (${String(enrollment.agent.name)}), ${enrollment.type} ${enrollment.version}`);
  print(`  serial ${enrollment.serial}, uuid ${enrollment.uuid}`);
  print(
    `  computer ${String(enrollment.agent.computers_id)}, entity ${String(enrollment.agent.entities_id)}, fleet ${String(enrollment.agent.plugin_mdm_fleets_id ?? enrollment.agent['plugin_flyvemdm_fleets_id'])}`,
  );
  if (enrollment.dialect.name === 'flyve')
    print(`  dialect flyve (${enrollment.version}), reports over ${enrollment.dialect.reports.toUpperCase()}`);
  print(
    `  mqtt ${mqtt.host}:${mqtt.port}${mqtt.tls ? ' (tls)' : ''}, topic ${mqtt.topic}, login ${mqtt.username}, password ${mask(mqtt.password)}`,
  );
  print(`  api_token ${mask(enrollment.apiToken)} (use --json to get the secrets)`);
  const helpdesk = [
    enrollment.helpdesk.name,
    enrollment.helpdesk.phone,
    enrollment.helpdesk.website,
    enrollment.helpdesk.email,
  ].filter((v) => v !== '');
  if (helpdesk.length > 0) print(`  helpdesk ${helpdesk.join(', ')}`);
  for (const download of result.downloads) {
    const failed = download.checks.filter((check) => check.status === 'failed').length;
    print(
      `${download.target}: ${download.size} bytes, sha256 ${download.sha256}` +
        `${download.fileName !== undefined ? `, ${download.fileName}` : ''} — ` +
        (failed === 0 ? `${download.checks.length} checks ok` : `${failed} of ${download.checks.length} checks FAILED`),
    );
  }
}

function mask(secret: string): string {
  return secret.length > 8 ? `${secret.slice(0, 4)}… (${secret.length} chars)` : '(hidden)';
}

function describeFailure(error: unknown): string {
  if (error instanceof MqttRefusedError && error.code === 5) {
    return `the broker refused the login: ${error.message} (a device waiting for approval by an administrator: run with --stay to wait until it is approved)`;
  }
  if (error instanceof AgentApiError) {
    return `${error.code}: ${error.serverMessage} (${error.status === 0 ? 'no response' : `HTTP ${error.status}`} from ${error.endpoint})`;
  }
  if (error instanceof DeeplinkError) return `bad deeplink: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

function errorJson(error: unknown): Record<string, unknown> {
  if (error instanceof AgentApiError) {
    return { status: error.status, code: error.code, message: error.serverMessage, endpoint: error.endpoint };
  }
  return {
    code: error instanceof DeeplinkError ? 'BAD_DEEPLINK' : 'ERROR',
    message: error instanceof Error ? error.message : String(error),
  };
}
