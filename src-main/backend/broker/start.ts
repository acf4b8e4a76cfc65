// Chooses the broker implementation behind the port (port.ts).
import { startBroker, type BrokerOptions } from './broker.ts';
import type { MqttBroker, BrokerMode } from './port.ts';
import type { IngestDuties } from './external-broker.ts';

export interface BrokerPortOptions extends BrokerOptions {
  mode: BrokerMode;
  /** External modes: the node holding the `mqtt-ingest` duty reads what agents report. */
  duties?: IngestDuties | undefined;
  /** External modes: mqtt[s]://USER:PASSWORD@HOST:PORT[,HOST:PORT…] */
  brokerUrl?: string | undefined;
  /** External modes: the broker account's password, given apart from the URL. */
  brokerPassword?: string | undefined;
  publicUrl?: string | undefined;
  caFile?: string | undefined;
  /** rabbitmq: where the HTTP auth backend listens. */
  authHost: string;
  authPort: number;
  /** rabbitmq: the secret the nodes present (default: DIR/rabbitmq-auth-secret). */
  authSecret?: string | undefined;
}

export async function startBrokerPort(options: BrokerPortOptions): Promise<MqttBroker> {
  if (options.mode === 'embedded') return startBroker(options);
  if (!options.brokerUrl)
    throw new Error(`--mqtt-broker ${options.mode} needs --mqtt-broker-url mqtt[s]://USER:PASSWORD@HOST:PORT`);
  const external = {
    agents: options.agents,
    events: options.events,
    work: options.work,
    fleets: options.fleets,
    reports: options.reports,
    brokerUrl: options.brokerUrl,
    brokerPassword: options.brokerPassword,
    publicUrl: options.publicUrl,
    caFile: options.caFile,
    onTaskReport: options.onTaskReport,
    duties: options.duties,
  };
  if (options.mode === 'mosquitto') return (await import('./mosquitto.ts')).startMosquittoBroker(external);
  return (await import('./rabbitmq.ts')).startRabbitmqBroker({
    ...external,
    authHost: options.authHost,
    authPort: options.authPort,
    authSecret: options.authSecret,
    dataDir: options.dataDir,
    throttle: options.throttle,
  });
}
