import type { FastifyInstance } from 'fastify';
import { mkdirSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { adminApp } from './admin-api/app.ts';
import type { DeviceSimulator } from './admin-api/simulate-routes.ts';
import { loadOrCreateAdminToken } from './admin-api/admin-token.ts';
import { buildAgentApp } from './agent-api/app.ts';
import { appLinkSchemeFor } from './deeplink/codec.ts';
import { startBrokerPort } from './broker/start.ts';
import type { MqttBroker } from './broker/port.ts';
import { lanAddresses, resolveOptions, urlHost, type BackendOptions } from './config.ts';
import { lockDataDir, SERVER_FILE, type DataDirLock } from './data-dir-lock.ts';
import { openDatabase } from './db/database.ts';
import { createFileStore } from './files/store.ts';
import { isDiskFull } from './http/disk-full.ts';
import { statusOf } from './invitations/invitations.ts';
import type { MailOptions } from './mail/index.ts';
import { ApiError } from './errors.ts';
import { planSockets, type SocketPlan } from './http/socket-limits.ts';
import { DEFAULT_DOWNLOAD_LIMITS, DownloadLimits } from './files/download-limits.ts';
import { createServices, type Services } from './services.ts';
import { DeploymentService } from './deployments/deployments.ts';
import { mqttTaskReports } from './deployments/mqtt-reports.ts';
import { explainDatabaseError, explainListenError } from './startup-error.ts';

export interface ServerInfo {
  api_url: string;
  deeplink_url: string;
  admin_url: string;
  /** Opens the console signed in, once (a one-time ticket, not the admin token). */
  console_url: string;
  admin_token: string;
  mqtt_port: number;
  mqtt_tls_port: number;
  /** SHA-256 fingerprint of the MQTT TLS certificate (colon-separated hex). */
  mqtt_tls_fingerprint: string | null;
  /** embedded, mosquitto or rabbitmq. */
  mqtt_broker: string;
  /** Where agents connect (the external broker's public host in the external modes). */
  mqtt_host: string;
  public_host: string;
  data_dir: string;
  pid: number;
  started_at: string;
}

export interface RunningBackend {
  info: ServerInfo;
  services: Services;
  deployments: DeploymentService;
  options: BackendOptions;
  broker: MqttBroker;
  close(): Promise<void>;
}

export interface StartOptions extends Partial<BackendOptions> {
  /** Socket and download caps; default: planned from this process's open-file limit. */
  sockets?: Partial<SocketPlan>;
  /** Runs a simulated device against an invitation ("simulate a device"); without it that route answers 501. */
  simulate?: DeviceSimulator;
  /** Mail timing: the retry back-off and the SMTP greeting time-out (tests shorten both). */
  mailTiming?: Pick<MailOptions, 'retryPolicy' | 'greetingTimeoutMs'>;
}

/**
 * Starts the whole backend: SQLite, agent API + deeplink page (LAN), admin API + console
 * (loopback). One server per data dir: it is locked first (a second server gets a StartupError
 * naming the first). DIR/server.json, written once listening and removed on close, says where
 * it is. Problems a user can fix are StartupErrors saying how.
 */
export async function startBackend(partial: StartOptions = {}): Promise<RunningBackend> {
  const options = resolveOptions(partial);
  const infoFile = join(options.dataDir, SERVER_FILE);
  let lock: DataDirLock;
  try {
    // Tokens live in the database: the data dir is the owner's alone.
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    lock = lockDataDir(options.dataDir);
  } catch (error) {
    throw explainDatabaseError(error, join(options.dataDir, 'mdm-console.sqlite'), options.dataDir);
  }
  try {
    // Holding the lock, any server.json is a killed server's: gone, so nobody reads it as ours.
    rmSync(infoFile, { force: true });
    return await startLocked(partial, options, lock, infoFile);
  } catch (error) {
    rmSync(infoFile, { force: true });
    lock.release();
    throw explainListenError(explainDatabaseError(error, join(options.dataDir, 'mdm-console.sqlite'), options.dataDir), options);
  }
}

function writeInfoFile(file: string, content: object): void {
  writeFileSync(file, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

async function startLocked(partial: StartOptions, options: BackendOptions, lock: DataDirLock, infoFile: string): Promise<RunningBackend> {
  const sockets: SocketPlan = { ...planSockets(), ...partial.sockets };
  const db = openDatabase(join(options.dataDir, 'mdm-console.sqlite'));
  let adminToken: string;
  try {
    adminToken = loadOrCreateAdminToken(options.dataDir);
  } catch (error) {
    db.close();
    throw error;
  }

  let apiPort = options.port;
  let broker: MqttBroker | undefined;
  // A LAN address picked in the console ("phones cannot reach this server" → Use …) applies at
  // once, even over a loopback --public-host; the flag applies again at the next start.
  let chosenPublicHost: string | null = null;
  const publicHost = (settings = services.settings.get()) => chosenPublicHost ?? partial.publicHost ?? (settings.public_host || options.publicHost);
  const targets = {
    apiUrl: (settings = services.settings.get()) => `http://${urlHost(publicHost(settings))}:${apiPort}/api`,
    deeplinkBase: (settings = services.settings.get()) =>
      settings.deeplink_base_url.replace(/\/+$/, '') || `http://${urlHost(publicHost(settings))}:${apiPort}`,
    endpoint: (tls: boolean) => broker!.agentEndpoint(tls),
    credentialsIssued: (agentId: number, password: string) => broker!.credentialsIssued(agentId, password),
  };
  let services: Services;
  try {
    services = createServices(db, targets, {
      dataDir: options.dataDir,
      smtpUrl: options.smtpUrl,
      mailFrom: options.mailFrom,
      secretProtector: options.secretProtector,
      ...partial.mailTiming,
    }, { sessions: options.sessionLimits });
    services.sessions.purgeIdle();
  } catch (error) {
    db.close();
    throw error;
  }
  // Agents open a session per download; idle ones are swept hourly, not only at start.
  const sessionSweep = setInterval(() => {
    try {
      services.sessions.purgeIdle();
    } catch (error) {
      if (!isDiskFull(error)) throw error; // a full disk: swept next hour (a DELETE needs log space too)
    }
  }, 60 * 60 * 1000).unref();
  const files = createFileStore(db, options.dataDir, (action, kind, item) =>
    services.events.record(`${kind}.${action}`, `${kind === 'file' ? 'File' : 'Package'} "${item.name}" ${action}`, { entityId: item.entityId }, { id: item.id, name: item.name, size: item.size }),
  );
  const deployments = new DeploymentService({ db, events: services.events, work: services.work, fleets: services.fleets, files });
  // The MQTT broker: embedded (plain + TLS listeners, ports known before any agent record is
  // served) or an external one the backend connects to, retrying in the background.
  broker = await startBrokerPort({
    mode: options.mqttBroker,
    db,
    agents: services.brokerAgents,
    events: services.events,
    work: services.work,
    fleets: services.fleets,
    reports: services.reports,
    dataDir: options.dataDir,
    host: options.host,
    port: options.mqttPort,
    tlsPort: options.mqttTlsPort,
    hosts: [publicHost(), ...lanAddresses()],
    publicHost,
    tlsCertFile: options.mqttTlsCertFile,
    tlsKeyFile: options.mqttTlsKeyFile,
    brokerUrl: options.mqttBrokerUrl,
    publicUrl: options.mqttPublicUrl,
    caFile: options.mqttBrokerCaFile,
    authHost: options.mqttAuthHost,
    authPort: options.mqttAuthPort,
    maxConnections: Math.floor(sockets.mqttConnections / 2),
    throttle: options.mqttThrottle,
    onTaskReport: mqttTaskReports(deployments, services.events),
  }).catch((error: unknown) => {
    deployments.close();
    if (db.open) db.close();
    throw error;
  });
  const startedBroker = broker;
  // Retained messages may be gone (the embedded broker's memory, an external broker restarted): every active policy is published again.
  await deployments.attach(startedBroker.policies);

  const agentApp = await buildAgentApp({
    sessions: services.sessions,
    enrollment: services.enrollment,
    tasks: deployments,
    reports: { agents: services.agents, reports: services.reports, live: broker.liveReports },
    downloads: {
      store: files,
      mayDownload: (session) => {
        services.approval.checkDownload(session);
        // A code's account token is on every printed copy of the code: it enrolls, it never downloads.
        if (services.codes.isCodeAccount(session.userId)) throw new ApiError(403, 'ERROR_RIGHT_MISSING', 'An enrollment code cannot download files; the enrolled device can');
      },
      limits: new DownloadLimits({ maxConcurrent: sockets.agentDownloads, poolBytes: DEFAULT_DOWNLOAD_LIMITS.poolBytes }),
    },
    deeplinkPage: {
      deeplinkBase: () => targets.deeplinkBase(),
      appLinkScheme: () => appLinkSchemeFor(services.settings.get().agent_app, services.settings.get().app_link_scheme),
      invitationState: (token) => {
        const row = /^[0-9a-f]{64}$/.test(token) ? services.invitations.byToken(token) : undefined;
        return row ? { status: statusOf(row), expiresAt: row.expires_at } : null;
      },
    },
    listener: { requestTimeoutMs: sockets.requestTimeoutMs, maxConnections: sockets.agentConnections, maxConnectionsPerAddress: sockets.agentConnectionsPerAddress },
  });

  // What the admin side reports follows the public host as it changes while running.
  const currentInfo = (): ServerInfo => ({ ...info, api_url: targets.apiUrl(), deeplink_url: targets.deeplinkBase(), public_host: publicHost() });
  const { app: admin, auth: adminAuth } = await adminApp({
    services,
    files,
    deployments,
    adminToken,
    info: currentInfo,
    broker,
    simulate: partial.simulate,
    choosePublicHost: (host) => {
      chosenPublicHost = host;
      writeInfoFile(infoFile, currentInfo());
    },
    bindHost: options.adminHost,
    maxConnections: sockets.adminConnections,
    requestTimeoutMs: sockets.requestTimeoutMs,
  });

  let info!: ServerInfo;
  const closeAll = async () => {
    clearInterval(sessionSweep);
    deployments.close();
    await startedBroker.close();
    await Promise.allSettled([agentApp.close(), admin.close()]);
    await services.mail.close();
    if (db.open) db.close();
  };
  try {
    await agentApp.listen({ port: options.port, host: options.host });
    apiPort = (agentApp.server.address() as AddressInfo).port;
    await admin.listen({ port: options.adminPort, host: options.adminHost });
  } catch (error) {
    await closeAll();
    throw error;
  }
  const adminPort = (admin.server.address() as AddressInfo).port;
  const adminUrl = `http://${urlHost(options.adminHost === '0.0.0.0' ? '127.0.0.1' : options.adminHost)}:${adminPort}`;
  info = {
    api_url: targets.apiUrl(),
    deeplink_url: targets.deeplinkBase(),
    admin_url: adminUrl,
    console_url: `${adminUrl}/auth?ticket=${adminAuth.issueTicket()}`,
    admin_token: adminToken,
    mqtt_port: broker.port,
    mqtt_tls_port: broker.tlsPort,
    mqtt_tls_fingerprint: broker.certificate?.fingerprint256 ?? null,
    mqtt_broker: broker.mode,
    mqtt_host: broker.agentEndpoint(false).host,
    public_host: publicHost(),
    data_dir: options.dataDir,
    pid: process.pid,
    started_at: new Date().toISOString(),
  };
  writeInfoFile(infoFile, info);
  services.events.record('server.started', `Server started at ${info.api_url}`);
  // Emails render deeplinks with the port now known; queued ones from the last run go first.
  services.mail.start();

  let closing: Promise<void> | null = null;
  return {
    info,
    services,
    deployments,
    options,
    broker: startedBroker,
    close: () => {
      closing ??= (async () => {
        rmSync(infoFile, { force: true });
        await closeAll();
        lock.release();
      })();
      return closing;
    },
  };
}

export type { FastifyInstance };
