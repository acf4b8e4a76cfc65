import { parseArgs } from 'node:util';
import { startBackend } from '../backend/server.ts';
import { simulateEnrollment } from '../device/simulate.ts';
import { CliError } from './server-file.ts';

function port(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new CliError(`${flag} must be a port number (0 = any free port), not "${value}"`);
  return n;
}

/** `serve`: the backend headless, with the web console; stops cleanly on SIGINT/SIGTERM. */
export async function serveCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      port: { type: 'string' },
      'admin-port': { type: 'string' },
      'mqtt-port': { type: 'string' },
      'mqtt-tls-port': { type: 'string' },
      'public-host': { type: 'string' },
      host: { type: 'string' },
      json: { type: 'boolean' },
    },
    strict: true,
  });
  const backend = await startBackend({
    dataDir: values['data-dir'],
    port: port(values.port, '--port'),
    adminPort: port(values['admin-port'], '--admin-port'),
    mqttPort: port(values['mqtt-port'], '--mqtt-port'),
    mqttTlsPort: port(values['mqtt-tls-port'], '--mqtt-tls-port'),
    publicHost: values['public-host'],
    host: values.host,
    simulate: simulateEnrollment,
  });
  const { info } = backend;
  if (values.json) console.log(JSON.stringify({ ...info, admin_token: undefined }));
  else {
    console.log(`MDM Console backend is running (data in ${info.data_dir})
  Agent API (base_url):  ${info.api_url}
  Deeplink page:         ${info.deeplink_url}/deeplink/
  MQTT broker:           ${info.public_host}:${info.mqtt_port} (TLS ${info.mqtt_tls_port})
  Admin API:             ${info.admin_url}/api   (token in ${info.data_dir}/admin-token)
  Console:               ${info.console_url ?? info.admin_url}
Press Ctrl+C to stop.`);
  }
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.log(`\n${signal}: stopping…`);
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  await backend.close();
  console.log('Stopped; database closed.');
  return 0;
}
