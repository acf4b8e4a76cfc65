import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { lanAddresses, NODE_NAME_PATTERN } from '../backend/config.ts';
import { isLoopback } from '../../src-shared/contract/rules.ts';
import { fieldsUnfitForFlyve } from '../backend/deeplink/codec.ts';
import { parseSmtpUrl } from '../backend/mail/index.ts';
import { AUTH_SECRET_PATTERN, parseBrokerUrl } from '../backend/broker/broker-url.ts';
import { parseTrustProxy } from '../backend/trust-proxy.ts';
import { BROKER_MODES, type BrokerMode } from '../backend/broker/port.ts';
import { startBackend, type RunningBackend } from '../backend/server.ts';
import { StartupError } from '../backend/startup-error.ts';
import { SIMULATED_DEVICES_FILE } from '../device/state-file.ts';
import { CliError } from './server-file.ts';

/** The flag that changes each option a start-up error can name. */
const FLAG_OF: Record<string, string> = {
  port: '--port P',
  adminPort: '--admin-port A',
  mqttPort: '--mqtt-port M',
  mqttTlsPort: '--mqtt-tls-port T',
  mqttAuthPort: '--mqtt-auth-port P',
  host: '--host ADDR',
};

/** A StartupError as the serve command words it: with the flag to use. */
export function startupMessage(error: StartupError): string {
  const flag = error.option ? FLAG_OF[error.option] : undefined;
  if (!flag) return error.message;
  const anyPort = error.option === 'host' ? '' : ' (0 = any free port)';
  return `${error.message.replace(/ Choose another with the host option\.$/, '')} Choose another with ${flag}${anyPort}.`;
}

function port(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new CliError(`${flag} must be a port number (0 = any free port), not "${value}"`);
  return n;
}

/** --public-port: a port devices connect to (never 0: links must name a real port). */
function publicPort(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(n) || n < 1 || n > 65535)
    throw new CliError(`--public-port must be a port number from 1 to 65535 (the one devices connect to), not "${value}"`);
  return n;
}

/**
 * The device simulator (and mqtt.js with it, ~20 MB) is loaded only when "simulate a device" is
 * first used: most runs never do.
 */
/** The banner's warning when phones could not use the codes this server makes. */
function unreachableWarning(publicHost: string): string {
  if (!isLoopback(publicHost)) return '';
  const lan = lanAddresses();
  const fix = lan.length
    ? `restart with --public-host ${lan[0]}${lan.length > 1 ? ` (or ${lan.slice(1).join(', ')})` : ''}, or click "Use ${lan[0]}" in the console`
    : 'connect this computer to the network the phones use, then restart with --public-host ADDRESS';
  return `\n\n  WARNING: phones cannot reach this server. The public host ${publicHost} is a loopback address, and it is
  what every QR code, deeplink and invitation email carries. To fix it: ${fix}.\n`;
}

/**
 * A secret given in a file (its first line) or, when no file is named, an environment variable:
 * never on a command line, where every local user's `ps` shows it.
 */
function secretFrom(file: string | undefined, flag: string, envName: string): string | undefined {
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new CliError(`${flag}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
    const secret = text.split(/\r?\n/)[0]!.trim();
    if (!secret) throw new CliError(`${flag}: ${file} is empty; put the password on its first line`);
    return secret;
  }
  return process.env[envName] || undefined;
}

let simulator: Promise<typeof import('../device/simulate.ts')> | null = null;
const loadSimulator = () => (simulator ??= import('../device/simulate.ts'));

const simulatedDevicesFile = (backend: RunningBackend) => join(backend.info.data_dir, SIMULATED_DEVICES_FILE);

/**
 * The devices "Simulate a device" made in an earlier run come back (they keep their credentials as
 * a phone does), and one waiting for approval is told at once when an admin approves it, as a push
 * notification would tell a phone. Resolves with how many came back.
 */
async function resumeSimulatedDevices(backend: RunningBackend): Promise<number> {
  backend.services.events.subscribe((event) => {
    if (event.type === 'agent.approved' && event.agent_id !== null && simulator) {
      const id = event.agent_id;
      void simulator.then((loaded) => loaded.simulatedDeviceApproved(id));
    }
  });
  const file = simulatedDevicesFile(backend);
  if (!existsSync(file)) return 0;
  return (await loadSimulator()).resumeSimulatedDevices(file);
}

/** `serve`: the backend headless, with the web console; stops cleanly on SIGINT/SIGTERM. */
export async function serveCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      'node-name': { type: 'string' },
      'files-dir': { type: 'string' },
      port: { type: 'string' },
      'admin-port': { type: 'string' },
      'admin-host': { type: 'string' },
      'admin-origin': { type: 'string' },
      'mqtt-port': { type: 'string' },
      'mqtt-tls-port': { type: 'string' },
      'mqtt-tls-cert': { type: 'string' },
      'mqtt-tls-key': { type: 'string' },
      'public-host': { type: 'string' },
      'trust-proxy': { type: 'string' },
      'public-port': { type: 'string' },
      host: { type: 'string' },
      'smtp-url': { type: 'string' },
      'mail-from': { type: 'string' },
      'mqtt-broker': { type: 'string' },
      'mqtt-broker-url': { type: 'string' },
      'mqtt-broker-password-file': { type: 'string' },
      'mqtt-auth-secret-file': { type: 'string' },
      'mqtt-public-url': { type: 'string' },
      'mqtt-broker-ca': { type: 'string' },
      'mqtt-auth-host': { type: 'string' },
      'mqtt-auth-port': { type: 'string' },
      'agent-app': { type: 'string' },
      'secret-key-file': { type: 'string' },
      json: { type: 'boolean' },
    },
    strict: true,
  });
  // Env MDM_CONSOLE_SMTP_URL / MDM_CONSOLE_MAIL_FROM apply when the flags are absent (config.ts).
  const smtpUrl = values['smtp-url'] ?? (process.env.MDM_CONSOLE_SMTP_URL || undefined);
  if (smtpUrl) {
    try {
      parseSmtpUrl(smtpUrl);
    } catch (error) {
      throw new CliError(`--smtp-url: ${(error as Error).message}`);
    }
  }
  const mqttBroker = (values['mqtt-broker'] ?? 'embedded') as BrokerMode;
  if (!BROKER_MODES.includes(mqttBroker))
    throw new CliError(`--mqtt-broker must be one of ${BROKER_MODES.join(', ')}, not "${values['mqtt-broker']}"`);
  if (mqttBroker !== 'embedded' && !values['mqtt-broker-url'])
    throw new CliError(
      mqttBroker === 'mosquitto'
        ? '--mqtt-broker mosquitto needs --mqtt-broker-url mqtt[s]://ADMIN@HOST:PORT (the dynamic-security admin; its password in --mqtt-broker-password-file FILE or MDM_CONSOLE_MQTT_BROKER_PASSWORD)'
        : "--mqtt-broker rabbitmq needs --mqtt-broker-url mqtt[s]://[USER@]HOST:PORT[,HOST:PORT…] (the cluster's nodes)",
    );
  if (mqttBroker === 'embedded' && (values['mqtt-broker-url'] || values['mqtt-public-url']))
    throw new CliError('--mqtt-broker-url and --mqtt-public-url need --mqtt-broker mosquitto or rabbitmq');
  if (mqttBroker !== 'rabbitmq' && values['mqtt-auth-secret-file'] !== undefined)
    throw new CliError('--mqtt-auth-secret-file is for --mqtt-broker rabbitmq');
  if (mqttBroker === 'embedded' && values['mqtt-broker-password-file'] !== undefined)
    throw new CliError('--mqtt-broker-password-file needs --mqtt-broker mosquitto or rabbitmq');
  const warnings: string[] = [];
  let brokerUrlHasPassword = false;
  for (const flag of ['mqtt-broker-url', 'mqtt-public-url'] as const) {
    const value = values[flag];
    if (value === undefined) continue;
    try {
      const parsed = parseBrokerUrl(value, `--${flag}`);
      if (flag === 'mqtt-broker-url') brokerUrlHasPassword = parsed.password !== '';
    } catch (error) {
      throw new CliError((error as Error).message);
    }
  }
  const mqttBrokerPassword =
    mqttBroker === 'embedded'
      ? undefined
      : secretFrom(values['mqtt-broker-password-file'], '--mqtt-broker-password-file', 'MDM_CONSOLE_MQTT_BROKER_PASSWORD');
  if (brokerUrlHasPassword)
    warnings.push(
      mqttBrokerPassword !== undefined
        ? 'the password in --mqtt-broker-url is ignored: the one of --mqtt-broker-password-file (or MDM_CONSOLE_MQTT_BROKER_PASSWORD) is used. Take it out of the URL: every local user sees command lines (ps).'
        : 'the password in --mqtt-broker-url is on the command line, where every local user sees it (ps). Give it with --mqtt-broker-password-file FILE or MDM_CONSOLE_MQTT_BROKER_PASSWORD instead.',
    );
  const databaseUrl = values['database-url'];
  if (databaseUrl !== undefined && /^postgres(ql)?:\/\/[^/@]*:[^/@]*@/.test(databaseUrl))
    warnings.push(
      'the password in --database-url is on the command line, where every local user sees it (ps). Give the URL in MDM_CONSOLE_DATABASE_URL instead, or the password in PGPASSWORD or ~/.pgpass.',
    );
  if (mqttBroker === 'mosquitto' && !brokerUrlHasPassword && mqttBrokerPassword === undefined)
    throw new CliError(
      "--mqtt-broker mosquitto needs the dynamic-security admin's password: --mqtt-broker-password-file FILE (its first line) or MDM_CONSOLE_MQTT_BROKER_PASSWORD",
    );
  const mqttAuthSecret =
    mqttBroker === 'rabbitmq'
      ? secretFrom(values['mqtt-auth-secret-file'], '--mqtt-auth-secret-file', 'MDM_CONSOLE_MQTT_AUTH_SECRET')
      : undefined;
  if (mqttAuthSecret !== undefined && !AUTH_SECRET_PATTERN.test(mqttAuthSecret))
    throw new CliError(
      'the RabbitMQ auth secret must be 16 or more letters, digits, ".", "_", "~" or "-" (it goes into URLs in rabbitmq.conf)',
    );
  const agentApp = values['agent-app'];
  if (agentApp !== undefined && agentApp !== 'spec' && agentApp !== 'flyve') {
    throw new CliError(
      `--agent-app must be spec (the spec's agent) or flyve (the reference Flyve MDM agents), not "${agentApp}"`,
    );
  }
  // Env MDM_CONSOLE_ADMIN_HOST / MDM_CONSOLE_ADMIN_ORIGIN apply when the flags are absent.
  const adminHost = values['admin-host'] ?? (process.env.MDM_CONSOLE_ADMIN_HOST || undefined);
  if (adminHost !== undefined && !/^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:.]*|[A-Za-z0-9.-]+)$/.test(adminHost))
    throw new CliError(`--admin-host must be an address to listen on (e.g. 0.0.0.0 or 10.0.0.5), not "${adminHost}"`);
  const adminOrigin = values['admin-origin'] ?? (process.env.MDM_CONSOLE_ADMIN_ORIGIN || undefined);
  if (adminOrigin !== undefined) {
    const origin = URL.canParse(adminOrigin) ? new URL(adminOrigin) : null;
    if (origin === null || !/^https?:$/.test(origin.protocol) || origin.origin !== adminOrigin.replace(/\/$/, ''))
      throw new CliError(
        `--admin-origin must be the console's address behind the load balancer, as https://NAME[:PORT] (no path), not "${adminOrigin}"`,
      );
  }
  if (adminHost !== undefined && !isLoopback(adminHost.replace(/^\[|\]$/g, '')))
    warnings.push(
      `the admin API and console listen on ${adminHost}: they are reachable from the network (sign-in or the admin token is still needed). Keep the admin port behind a firewall or the load balancer.`,
    );
  const nodeName = values['node-name'] ?? (process.env.MDM_CONSOLE_NODE_NAME || undefined);
  if (nodeName !== undefined && !NODE_NAME_PATTERN.test(nodeName))
    throw new CliError(
      `--node-name must be letters, digits, ".", "_" and "-" (at most 100, starting with a letter or digit), not "${nodeName.slice(0, 100)}"`,
    );
  // Env MDM_CONSOLE_TRUST_PROXY applies when the flag is absent.
  const trustProxyText = values['trust-proxy'] ?? process.env.MDM_CONSOLE_TRUST_PROXY ?? '';
  let trustProxy: string[];
  try {
    trustProxy = parseTrustProxy(
      trustProxyText,
      values['trust-proxy'] === undefined ? 'MDM_CONSOLE_TRUST_PROXY' : '--trust-proxy',
    );
  } catch (error) {
    throw new CliError((error as Error).message);
  }
  if (values['trust-proxy'] !== undefined && trustProxy.length === 0)
    throw new CliError('--trust-proxy needs the addresses of the balancers (such as 127.0.0.1 or 10.0.0.0/8)');
  const filesDir = values['files-dir'];
  if (filesDir !== undefined && filesDir.trim() === '') throw new CliError('--files-dir needs a directory');
  let backend: RunningBackend;
  try {
    backend = await startBackend({
      dataDir: values['data-dir'],
      // Env MDM_CONSOLE_DATABASE_URL applies when the flag is absent (config.ts).
      databaseUrl: values['database-url'],
      nodeName,
      filesDir: filesDir === undefined ? undefined : resolve(filesDir),
      port: port(values.port, '--port'),
      adminPort: port(values['admin-port'], '--admin-port'),
      adminHost,
      adminOrigin: adminOrigin?.replace(/\/$/, ''),
      mqttPort: port(values['mqtt-port'], '--mqtt-port'),
      mqttTlsPort: port(values['mqtt-tls-port'], '--mqtt-tls-port'),
      mqttTlsCertFile: values['mqtt-tls-cert'],
      mqttTlsKeyFile: values['mqtt-tls-key'],
      publicHost: values['public-host'],
      trustProxy,
      publicPort: publicPort(values['public-port']),
      host: values.host,
      smtpUrl,
      mailFrom: values['mail-from'],
      mqttBroker,
      mqttBrokerUrl: values['mqtt-broker-url'],
      mqttBrokerPassword,
      mqttAuthSecret,
      mqttPublicUrl: values['mqtt-public-url'],
      mqttBrokerCaFile: values['mqtt-broker-ca'],
      mqttAuthHost: values['mqtt-auth-host'],
      mqttAuthPort: port(values['mqtt-auth-port'], '--mqtt-auth-port'),
      // PostgreSQL: the cluster key (env MDM_CONSOLE_SECRET_KEY applies when the flag is absent).
      secretKeyFile: values['secret-key-file'],
      // "Simulate a device": it enrolls, then stays online on the broker like a phone would (once
      // approved, when its code needs it), and is remembered in the data dir to come back after a restart.
      simulate: async (request) =>
        (await loadSimulator()).simulateEnrollment(request, { stayOnline: true, stateFile: simulatedDevicesFile(backend) }),
    });
  } catch (error) {
    if (error instanceof StartupError) throw new CliError(`cannot start: ${startupMessage(error)}`, 1);
    throw error;
  }
  warnings.push(...(backend.broker.warnings ?? []));
  for (const notice of backend.notices) console.error(`NOTE: ${notice}`);
  if (agentApp !== undefined && backend.services.settings.get().agent_app !== agentApp) {
    // The same rule as the settings page: the reference encoding cannot carry a ";".
    const unfit = agentApp === 'flyve' ? fieldsUnfitForFlyve(backend.services.settings.deeplinkFields()) : null;
    if (unfit) {
      await backend.close();
      throw new CliError(`--agent-app flyve: ${unfit}; change them in the settings first`);
    }
    await backend.services.settings.update({ agent_app: agentApp }, (change) =>
      backend.services.events.record(
        'settings.updated',
        `Settings changed: agent_app (serve --agent-app ${agentApp})`,
        {},
        change,
      ),
    );
  }
  const { info } = backend;
  const resumed = await resumeSimulatedDevices(backend);
  if (values.json) console.log(JSON.stringify({ ...info, admin_token: undefined }));
  else {
    console.log(`MDM Console backend is running (data in ${info.data_dir})
  Node:                  ${info.node_name}${info.files_dir === join(info.data_dir, 'files') ? '' : ` (stored files in ${info.files_dir})`}
  Agent API (base_url):  ${info.api_url}
  Deeplink page:         ${info.deeplink_url}/deeplink/
${
  info.mqtt_broker === 'embedded'
    ? `  MQTT broker:           ${info.public_host}:${info.mqtt_port} (TLS ${info.mqtt_tls_port})
  TLS certificate:       SHA-256 ${info.mqtt_tls_fingerprint}`
    : `  MQTT broker:           ${info.mqtt_broker} ${backend.broker.status().url}; agents connect to ${info.mqtt_host}:${info.mqtt_port || info.mqtt_tls_port}${info.mqtt_port ? '' : ' (TLS)'}
                         ${backend.broker.status().connected ? 'connected' : `not connected yet (${backend.broker.status().problem}): retrying in the background`}`
}
  Admin API:             ${info.admin_url}/api   (token in ${info.data_dir}/admin-token)
  Console:               ${info.console_url}
                         (a sign-in link as the owner: once, within 15 minutes; a new one: npm run cli -- console)${
                           info.setup_url
                             ? `
  Set up the owner:      ${info.setup_url}
                         (once: the first person to open it chooses the owner's email and password)`
                             : ''
                         }
  Mail:                  ${backend.services.mail.settings.describeTarget().summary}
  Agent app:             ${backend.services.settings.get().agent_app === 'flyve' ? 'flyve (codes for the Flyve MDM agents: flyve://register, reference encoding)' : "spec (codes for the spec's agent)"}${resumed > 0 ? `\n  Simulated devices:     ${resumed} from the last run reconnecting` : ''}${unreachableWarning(info.public_host)}
Press Ctrl+C to stop.`);
  }
  for (const warning of warnings) console.error(`WARNING: ${warning}`);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.log(`\n${signal}: stopping…`);
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  if (simulator) await (await simulator).stopSimulatedDevices();
  await backend.close();
  console.log('Stopped; database closed.');
  return 0;
}
