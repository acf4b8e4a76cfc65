import type { FastifyInstance, RouteOptions } from 'fastify';
import { mkdirSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { adminApp } from './admin-api/app.ts';
import { AdminAuth } from './admin-api/auth.ts';
import type { AdminSessionLimits } from './admin-sessions/admin-sessions.ts';
import type { StreamCaps } from './admin-api/events-stream.ts';
import type { BackoffOptions } from './admin-sessions/backoff.ts';
import type { DeviceSimulator } from './admin-api/simulate-routes.ts';
import { sharedAdminToken } from './admin-api/admin-token.ts';
import { ClusterMembership } from './cluster/membership.ts';
import type { NodeTiming } from './cluster/nodes.ts';
import { SharedSecretRepository } from './cluster/repository.ts';
import { movedNote, MOVED_FILE } from './db/migrate-to-postgres.ts';
import { buildAgentApp } from './agent-api/app.ts';
import { appLinkSchemeFor } from './deeplink/codec.ts';
import { startBrokerPort } from './broker/start.ts';
import type { MqttBroker } from './broker/port.ts';
import { lanAddresses, NODE_NAME_PATTERN, resolveOptions, urlHost, type BackendOptions } from './config.ts';
import { lockDataDir, SERVER_FILE, type DataDirLock } from './db/data-dir-lock.ts';
import { openDatabase } from './db/database.ts';
import { SqliteSql } from './db/sqlite-sql.ts';
import { openPostgresDatabase } from './db/postgres-database.ts';
import type { Sql } from './db/sql.ts';
import { createFileStore, type FileStore } from './files/store.ts';
import { isDiskFull } from './db/disk-full.ts';
import { Listener } from './http/listener.ts';
import { statusOf } from './invitations/invitations.ts';
import type { MailOptions } from './mail/index.ts';
import { ApiError } from './errors.ts';
import { planSockets, shareDescriptors, type SocketPlan } from './http/socket-limits.ts';
import { DEFAULT_DOWNLOAD_LIMITS, DownloadLimits } from './files/download-limits.ts';
import type { ServerInfo } from './server-info.ts';
import { createServices, withEnrollment, type Services } from './services.ts';
import { PolicyService } from './policies/service.ts';
import { JobService } from './jobs/jobs.ts';
import { SqliteJobRepository } from './jobs/repository.ts';
import { mqttTaskReports } from './policies/mqtt-reports.ts';
import { InstallVerification } from './policies/verification.ts';
import { explainDatabaseError, explainListenError, StartupError } from './startup-error.ts';
import { createAlerts, type AlertOptions, type Alerts } from './alerts/index.ts';
import type { Duties, DutyTiming } from './cluster/duties.ts';
import type { PostgresFeedOptions } from './cluster/feed.ts';
import { DatabaseSecretStore, openClusterSecrets } from './secrets/database-secrets.ts';
import { SecretRepository } from './secrets/repository.ts';
import { isServerEvent } from '../../src-shared/contract/event-stream.ts';

export interface RunningBackend {
  info: ServerInfo;
  /** The leases of the work this node does alone among several (cluster/duties.ts). */
  duties: Duties;
  services: Services;
  deployments: PolicyService;
  /** Alert rules, incidents, webhooks and their worker. */
  alerts: Alerts;
  /** Bulk jobs (`idle()` resolves once the running ones have acted on every device). */
  jobs: JobService;
  options: BackendOptions;
  broker: MqttBroker;
  /** What the person starting it should be told once (serve prints them): a cluster key it made. */
  notices: string[];
  /** A fresh one-time link that opens the console signed in (the desktop window uses one per window). */
  consoleUrl(): Promise<string>;
  close(): Promise<void>;
}

export interface StartOptions extends Partial<BackendOptions> {
  /** Socket and download caps; default: planned from this process's open-file limit. */
  sockets?: Partial<SocketPlan>;
  /** Runs a simulated device against an invitation ("simulate a device"); without it that route answers 501. */
  simulate?: DeviceSimulator;
  /** Mail timing: the retry back-off and the SMTP greeting time-out (tests shorten both). */
  mailTiming?: Pick<MailOptions, 'retryPolicy' | 'greetingTimeoutMs' | 'claimTtlMs' | 'pollMs'>;
  /** How long console sessions last on the server, over the owner's sign-in settings (admin-sessions/admin-sessions.ts). */
  adminSessions?: Partial<AdminSessionLimits>;
  /** Failed console sign-ins allowed per address and per account before the growing delays (admin-sessions/backoff.ts). */
  signInFailures?: Partial<BackoffOptions>;
  /** The clock of console sessions, sign-in throttles, two-factor codes and the reports' days (tests drive it); default the real one. */
  now?: () => number;
  /** How often the reports sample the devices (online, compliance, OS versions, models); default 5 minutes. */
  reportSampleEveryMs?: number;
  /** Open admin event streams per signed-in client and in all (admin-api/events-stream.ts). */
  streamCaps?: Partial<StreamCaps>;
  /** The owner's display name when the first start creates the owner; default: this machine's user name. */
  ownerName?: string;
  /** The alert clock, evaluation interval and webhook timing (tests drive and shorten them). */
  alerts?: AlertOptions;
  /** Told of every route each listener registers (the route-table test, the agent API's OpenAPI document). */
  onRoute?: (side: 'admin' | 'agent', route: RouteOptions) => void;
  /** How long a bulk job awaits its devices' answers (jobs/jobs.ts; default 15 minutes). */
  jobAnswerWindowMs?: number;
  /** The node registry's heartbeat and liveness window (cluster/nodes.ts; tests shorten them). */
  nodeTiming?: Partial<NodeTiming>;
  /**
   * Tests only (several nodes on one database, each with its own embedded broker):
   * no refusal of the embedded broker beside other nodes (cluster/nodes.ts). `serve` never sets it.
   */
  embeddedBrokerPerNode?: boolean;
  /** How long the duties' leases last and how often they are renewed (cluster/duties.ts; default 8 s and 2 s). */
  dutyTiming?: Partial<DutyTiming>;
  /** How often the duty `jobs-sweeper` looks for jobs of dead nodes; default 10 s. */
  jobSweepEveryMs?: number;
  /** The event feed's listening connection on PostgreSQL (cluster/feed.ts): reconnection waits, check interval. */
  feed?: PostgresFeedOptions;
}

/** How often the sessions of agents and consoles are swept. */
const SESSION_SWEEP_MS = 60 * 60 * 1000;
const JOB_SWEEP_MS = 10_000;

/**
 * Starts the whole backend: SQLite, agent API + deeplink page (LAN), admin API + console
 * (loopback). One server per data dir: it is locked first (a second server gets a StartupError
 * naming the first). DIR/server.json, written once listening and removed on close, says where
 * it is. Problems a user can fix are StartupErrors saying how.
 */
export async function startBackend(partial: StartOptions = {}): Promise<RunningBackend> {
  const options = resolveOptions(partial);
  if (!NODE_NAME_PATTERN.test(options.nodeName)) {
    throw new StartupError(
      `The node name "${options.nodeName.slice(0, 100)}" is not one: use letters, digits, ".", "_" and "-" (at most 100, starting with a letter or digit), e.g. --node-name node-a.`,
      { code: 'ENODENAME', option: 'nodeName' },
    );
  }
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
    refuseMovedDataDir(options);
    return await startLocked(partial, options, lock, infoFile);
  } catch (error) {
    rmSync(infoFile, { force: true });
    lock.release();
    throw explainListenError(explainDatabaseError(error, join(options.dataDir, 'mdm-console.sqlite'), options.dataDir), options);
  }
}

/**
 * A data dir whose data `migrate-db` moved to PostgreSQL: its SQLite file is the data as it was
 * then, so a server without the database URL would serve an old copy (and the move's later
 * changes would split in two).
 */
function refuseMovedDataDir(options: BackendOptions): void {
  if (options.databaseUrl) return;
  const moved = movedNote(options.dataDir);
  if (!moved) return;
  throw new StartupError(
    `The data of ${options.dataDir} was moved to PostgreSQL${moved.database ? ` (${moved.database})` : ''} by migrate-db${moved.moved_at ? ` on ${moved.moved_at}` : ''}: start with --database-url postgres://USER:PASSWORD@HOST:PORT/DB (or MDM_CONSOLE_DATABASE_URL). To go back to the SQLite file as it was before the move, giving up what was written on PostgreSQL since, remove ${join(options.dataDir, MOVED_FILE)}.`,
    { code: 'EMOVEDTOPOSTGRES', option: 'databaseUrl' },
  );
}

function writeInfoFile(file: string, content: object): void {
  writeFileSync(file, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

async function startLocked(
  partial: StartOptions,
  options: BackendOptions,
  lock: DataDirLock,
  infoFile: string,
): Promise<RunningBackend> {
  // Everything opened is closed in reverse order, on a failed start as on close().
  const closers: Array<() => unknown> = [];
  const closeAll = async () => {
    let failure: unknown;
    for (const close of closers.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  };
  try {
    const running = await startServing(partial, options, infoFile, (close) => closers.push(close));
    let closing: Promise<void> | null = null;
    return {
      ...running,
      close: () => {
        closing ??= (async () => {
          rmSync(infoFile, { force: true });
          try {
            await closeAll();
          } finally {
            lock.release();
          }
        })();
        return closing;
      },
    };
  } catch (error) {
    await closeAll().catch(() => {}); // the start's own error is the one to report
    throw error;
  }
}

/**
 * The start, in the order things depend on each other: database, listeners (their ports go into
 * links and records), services, broker, the apps on the listeners, and only then server.json.
 */
async function startServing(
  partial: StartOptions,
  options: BackendOptions,
  infoFile: string,
  onClose: (close: () => unknown) => void,
): Promise<Omit<RunningBackend, 'close'>> {
  const sockets: SocketPlan = { ...planSockets(), ...partial.sockets };
  // One budget of descriptors, shared by need: MQTT takes what the HTTP listeners leave (their reserves kept).
  const descriptors = shareDescriptors(sockets);
  // PostgreSQL when a database URL is given (the data dir's SQLite file is then not made), else SQLite.
  const db: Sql = options.databaseUrl
    ? await openPostgresDatabase(options.databaseUrl)
    : new SqliteSql(openDatabase(join(options.dataDir, 'mdm-console.sqlite')));
  let open = true;
  onClose(() => {
    open = false;
    return db.close();
  });
  // This node among the database's (cluster/membership.ts): the registry of who runs, and the work
  // one node does at a time among several (on SQLite, the one node always wins every duty).
  const cluster = new ClusterMembership(db, {
    nodeName: options.nodeName,
    brokerMode: options.mqttBroker,
    dutyTiming: partial.dutyTiming,
    nodeTiming: partial.nodeTiming,
    embeddedBrokerPerNode: partial.embeddedBrokerPerNode,
  });
  const { duties } = cluster;
  const periodicDuty = cluster.periodicDuty.bind(cluster);
  // PostgreSQL: the secrets (the SMTP password) in the database, sealed by the cluster key every
  // node is given; opened once this node has joined (a node refused for its name or broker is told that first).
  const databaseSecrets = db.engine === 'postgres' ? new DatabaseSecretStore(new SecretRepository(db)) : null;

  // The LAN side never waits forever for a slow or stalled request (Fastify's default is 0).
  // A fleet told to download connects at once: with Node's 511, 1,000 devices overflowed the accept
  // queue of a busy server and the kernel dropped SYNs (clients waited 1, 3, 7 s… and timed out).
  // The kernel caps it at net.core.somaxconn (4,096 on current Linux).
  const agentListener = await Listener.bind(options.port, options.host, {
    requestTimeout: sockets.requestTimeoutMs,
    backlog: 4096,
  });
  onClose(() => agentListener.close());
  const adminListener = await Listener.bind(options.adminPort, options.adminHost);
  onClose(() => adminListener.close());

  const adminUrl = `http://${urlHost(options.adminHost === '0.0.0.0' ? '127.0.0.1' : options.adminHost)}:${adminListener.port}`;
  const domain = await createServices(db, {
    isOpen: () => open,
    adminUrl,
    adminSessionLimits: partial.adminSessions,
    // Behind a balancer on another port (--public-port), links name the balancer's port.
    agentPort: options.publicPort ?? agentListener.port,
    publicHost: { flag: partial.publicHost, fallback: options.publicHost },
    mail: {
      dataDir: options.dataDir,
      smtpUrl: options.smtpUrl,
      mailFrom: options.mailFrom,
      secretProtector: options.secretProtector,
      ...(databaseSecrets ? { secrets: databaseSecrets } : {}),
      nodeName: duties.nodeName,
      // Other nodes may queue mail only on PostgreSQL: on SQLite (one node) every queueing wakes the worker itself.
      ...(db.engine === 'sqlite' ? { pollMs: 0 } : {}),
      ...partial.mailTiming,
    },
    sessionLimits: options.sessionLimits,
    now: partial.now,
    reportSampleEveryMs: partial.reportSampleEveryMs,
    feed: partial.feed,
    nodeName: duties.nodeName,
  });
  // Every node's events (PostgreSQL: LISTEN on a connection of its own); closed before the database.
  await domain.feed.start();
  onClose(() => domain.feed.close());
  onClose(() => domain.mail.worker.close());
  // A refusal here (its name, its broker), before anything is written or served, is a StartupError.
  await cluster.join({ adminUrl, agentUrl: domain.links.apiUrl() });
  onClose(() => cluster.leave());
  // A node with another key, or none while the database has one, stops here (one line saying what to do).
  const clusterSecrets = databaseSecrets
    ? await openClusterSecrets(databaseSecrets, {
        secretKey: options.secretKey,
        secretKeyFile: options.secretKeyFile,
        dataDir: options.dataDir,
      })
    : null;
  // The admin token is the database's (every node's), with a copy in this node's data dir for the CLI.
  const adminToken = await sharedAdminToken(options.dataDir, new SharedSecretRepository(db));
  // First start: the owner account, whose API token the data dir's admin token is.
  await domain.accounts.ensureOwner(partial.ownerName ?? machineUser());
  await domain.accounts.adoptDataDirToken(adminToken);
  const { adminSessions } = domain;
  const adminAuth = new AdminAuth(adminToken, {
    sessions: adminSessions,
    signIns: domain.signIns,
    accounts: domain.accounts,
    audit: domain.audit,
    events: domain.events,
    work: domain.work,
    failures: partial.signInFailures,
    requireTwoFactor: () => domain.signInSettings.get().require_two_factor,
    now: partial.now,
  });
  const sweepAll = async () => {
    await domain.sessions.purgeIdle();
    await adminSessions.purgeExpired();
    await domain.sessions.sweepRateLimits();
    await adminAuth.sweep();
  };
  // What no longer counts: idle sessions (agents open one per download), rate-limit buckets full
  // again, sign-in failures forgotten, tickets and challenges expired: swept at start and hourly, by
  // one node (the duty `session-sweep`; each DELETE removes only rows nothing can use any more).
  periodicDuty('session-sweep', SESSION_SWEEP_MS, async () => {
    try {
      await sweepAll();
    } catch (error) {
      if (!isDiskFull(error)) throw error; // a full disk: swept next hour (a DELETE needs log space too)
    }
  });
  // Each change is recorded (event and audit entry) in its own transaction: if that fails, it is undone.
  const files = await createFileStore(
    db,
    options.dataDir,
    async (action, kind, item, before) => {
      const label = `${kind === 'file' ? 'File' : 'Package'} "${item.name}"`;
      // What the audit trail shows of an item (the package's icon is left out: an image).
      const view = (it: typeof item) => {
        const { icon: _icon, ...described } = it.packageInfo ?? {};
        return { name: it.name, size: it.size, ...described };
      };
      if (action === 'updated') {
        await domain.events.record(
          'package.updated',
          `${label} described`,
          { entityId: item.entityId },
          { id: item.id, name: item.name, size: item.size, before: before ? view(before) : null, after: view(item) },
        );
      } else {
        await domain.events.record(
          `${kind}.${action}`,
          `${label} ${action}`,
          { entityId: item.entityId },
          {
            id: item.id,
            name: item.name,
            size: item.size,
            before: action === 'removed' ? view(item) : null,
            after: action === 'added' ? view(item) : null,
          },
        );
      }
    },
    { transact: (work) => domain.work.run(work), filesDir: options.filesDir },
  );
  // Package installs checked against each inventory a device sends afterwards.
  const verification = new InstallVerification({
    db,
    events: domain.events,
    work: domain.work,
    files,
    inventories: domain.reports,
  });
  onClose(() => verification.close());
  const deployments = new PolicyService({
    db,
    events: domain.events,
    work: domain.work,
    fleets: domain.fleets,
    files,
    verification,
    views: domain.views,
  });
  onClose(() => deployments.close());
  // Views evaluated again each minute for their terms of time: one node's duty.
  duties.whileHeld(
    'view-sync',
    () => deployments.startViewSync(),
    () => deployments.stopViewSync(),
  );
  // The reports' daily figures: backfilled on the first start, then kept by one node (the duty):
  // every node's events counted as they commit (the feed), and the devices sampled on a timer.
  await domain.figures.start();
  onClose(() => domain.figures.close());
  duties.whileHeld(
    'reports-sampler',
    async () => {
      await domain.figures.startCounting();
      await domain.figures.startSampling();
    },
    async () => {
      await domain.figures.stopSampling();
      await domain.figures.stopCounting();
    },
  );

  // The MQTT broker: embedded (plain + TLS listeners, ports known before any agent record is
  // served) or an external one the backend connects to, retrying in the background.
  const publicHost = () => domain.links.host();
  const broker = await startBrokerPort({
    mode: options.mqttBroker,
    db,
    duties,
    agents: domain.brokerAgents,
    events: domain.events,
    work: domain.work,
    fleets: domain.fleets,
    reports: domain.reports,
    dataDir: options.dataDir,
    host: options.host,
    port: options.mqttPort,
    tlsPort: options.mqttTlsPort,
    hosts: [publicHost(), ...lanAddresses()],
    publicHost,
    tlsCertFile: options.mqttTlsCertFile,
    tlsKeyFile: options.mqttTlsKeyFile,
    brokerUrl: options.mqttBrokerUrl,
    brokerPassword: options.mqttBrokerPassword,
    authSecret: options.mqttAuthSecret,
    publicUrl: options.mqttPublicUrl,
    caFile: options.mqttBrokerCaFile,
    authHost: options.mqttAuthHost,
    authPort: options.mqttAuthPort,
    maxConnections: sockets.mqttConnections,
    connectionShare: descriptors.mqtt,
    throttle: options.mqttThrottle,
    onTaskReport: mqttTaskReports(deployments, domain.events),
  });
  // Closed before the deployments it reports to (closers run in reverse).
  onClose(() => broker.close());
  // A ping sent by another node may be answered to this one: its reply is recorded as such here.
  const followPings = domain.feed.subscribe((event, origin) => {
    if (origin !== 'elsewhere' || event.agent_id === null) return;
    if (isServerEvent(event, 'agent.command') && event.data?.command === 'ping')
      broker.commands.pingSentElsewhere(event.agent_id, Date.parse(event.at));
    if (event.type === 'agent.ping_reply') broker.commands.pingAnsweredElsewhere(event.agent_id);
  });
  onClose(followPings);
  // Each node publishes the policy changes it makes. Retained messages may be gone (the embedded
  // broker's memory, an external broker restarted): every active policy is published again by the
  // node that takes the duty (at start on a single node), not by every node.
  deployments.attach(broker.policies);
  // After an external broker's restart, the holder of that duty publishes them again from the
  // database, not each node what it remembers (a policy another node removed would come back).
  broker.policies.restoreFrom?.(async () => (duties.holds('policy-republish') ? deployments.activePolicies() : null));
  duties.whileHeld(
    'policy-republish',
    () => deployments.republishAll(),
    () => {},
  );
  const services = withEnrollment(domain, broker);
  // Bulk jobs: closed before the broker they publish through (closers run in reverse).
  const jobs = new JobService({
    store: new SqliteJobRepository(db),
    agents: domain.agents,
    fleets: domain.fleets,
    events: domain.events,
    feed: domain.feed,
    work: domain.work,
    commands: broker.commands,
    policies: deployments,
    views: domain.views,
    answerWindowMs: partial.jobAnswerWindowMs,
    nodeName: duties.nodeName,
    sole: db.engine === 'sqlite',
  });
  onClose(() => jobs.close());
  // A job whose node died (stopped, or its heartbeat stale; never this node) is marked interrupted, by one node.
  if (db.engine !== 'sqlite')
    periodicDuty('jobs-sweeper', partial.jobSweepEveryMs ?? JOB_SWEEP_MS, async () =>
      jobs.interruptOrphans(await cluster.runningNames()),
    );

  // Alerts: rules evaluated each minute and on events, notices by email (the mail worker) and webhooks.
  const alerts = createAlerts(
    {
      db,
      isOpen: () => open,
      events: domain.events,
      feed: domain.feed,
      work: domain.work,
      mail: domain.mail.queue,
      fleetName: async (id) => (await domain.fleets.get(id)).name,
      brokerProblem: () => {
        const status = broker.status();
        return status.connected ? null : (status.problem ?? 'not connected to the broker');
      },
      smtpEndpoint: () => {
        try {
          const target = domain.mail.settings.target();
          return target.kind === 'smtp' ? { host: target.smtp.host, port: target.smtp.port } : null;
        } catch {
          return null; // a broken SMTP URL is the mail page's warning, not unreachability
        }
      },
      consoleUrl: () => `${adminUrl}/alerts`,
      nodeName: duties.nodeName,
    },
    db.engine === 'sqlite' ? { ...partial.alerts, webhooks: { pollMs: 0, ...partial.alerts?.webhooks } } : partial.alerts,
  );
  onClose(() => alerts.close());
  // The rules evaluated each minute and after events: one node's duty (any node evaluates after a rule change).
  duties.whileHeld(
    'alert-evaluation',
    () => alerts.engine.start(),
    () => alerts.engine.stop(),
  );

  const setupUrl = async () => {
    const secret = await domain.accounts.setupSecret();
    return secret === null ? null : `${adminUrl}/setup?token=${secret}`;
  };
  const info: ServerInfo = {
    api_url: services.links.apiUrl(),
    deeplink_url: services.links.deeplinkBase(),
    admin_url: adminUrl,
    console_url: `${adminUrl}/auth?ticket=${await adminAuth.issueTicket()}`,
    admin_token: adminToken,
    setup_url: await setupUrl(),
    mqtt_port: broker.port,
    mqtt_tls_port: broker.tlsPort,
    mqtt_tls_fingerprint: broker.certificate?.fingerprint256 ?? null,
    mqtt_broker: broker.mode,
    mqtt_host: broker.agentEndpoint(false).host,
    public_host: publicHost(),
    data_dir: options.dataDir,
    node_name: options.nodeName,
    files_dir: options.filesDir,
    pid: process.pid,
    started_at: new Date().toISOString(),
  };
  // What the admin side reports follows the public host as it changes while running.
  const currentInfo = async (): Promise<ServerInfo> => ({
    ...info,
    api_url: services.links.apiUrl(),
    deeplink_url: services.links.deeplinkBase(),
    public_host: publicHost(),
    setup_url: await setupUrl(),
  });

  const agentApp = await agentHttpApp(
    agentListener,
    sockets,
    descriptors,
    services,
    files,
    deployments,
    broker,
    partial.onRoute,
    options.trustProxy,
  );
  // Connections go first (an event stream never ends by itself), then the app's own close hooks.
  onClose(async () => {
    await agentListener.close();
    await agentApp.close();
  });
  const admin = await adminApp({
    listener: adminListener,
    trustProxy: options.trustProxy,
    services,
    files,
    deployments,
    alerts,
    jobs,
    auth: adminAuth,
    info: currentInfo,
    nodes: () => cluster.nodes(),
    broker,
    simulate: partial.simulate,
    choosePublicHost: async (host) => {
      services.links.choose(host);
      writeInfoFile(infoFile, await currentInfo());
    },
    bindHost: options.adminHost,
    extraHosts: options.adminOrigin === undefined ? [] : [hostNameOfOrigin(options.adminOrigin)],
    maxConnections: sockets.adminConnections,
    descriptors: descriptors.admin,
    requestTimeoutMs: sockets.requestTimeoutMs,
    streamCaps: partial.streamCaps,
    onRoute: partial.onRoute && ((route) => partial.onRoute?.('admin', route)),
  });
  onClose(async () => {
    await adminListener.close();
    await admin.close();
  });
  // The duties' work stops first on close (closers run in reverse), and their leases go to another node.
  onClose(() => cluster.closeDuties());
  await cluster.startDuties();
  agentListener.serve();
  adminListener.serve();

  writeInfoFile(infoFile, info);
  // Another node's settings change (the public host chosen there, the deeplink base) shows in this
  // node's server.json too; the settings store has reloaded by then (the feed awaits in order).
  const followSettings = domain.feed.subscribe(async (event, origin) => {
    if (origin === 'elsewhere' && event.type === 'settings.updated') writeInfoFile(infoFile, await currentInfo());
  });
  onClose(followSettings);
  await services.events.record('server.started', `Server started at ${info.api_url}`);
  // Queued emails from the last run go first, their deeplinks naming the ports now bound.
  await services.mail.worker.start();
  await alerts.start();
  return {
    info,
    duties,
    services,
    deployments,
    alerts,
    jobs,
    options,
    broker,
    notices: clusterSecrets?.notice ? [clusterSecrets.notice] : [],
    consoleUrl: async () => `${adminUrl}/auth?ticket=${await adminAuth.issueTicket()}`,
  };
}

/** The agent API, downloads and the deeplink page: the LAN side. */
async function agentHttpApp(
  listener: Listener,
  sockets: SocketPlan,
  descriptors: ReturnType<typeof shareDescriptors>,
  services: Services,
  files: FileStore,
  deployments: PolicyService,
  broker: MqttBroker,
  onRoute: StartOptions['onRoute'],
  trustProxy: string[],
): Promise<FastifyInstance> {
  const agentApp = await buildAgentApp({
    onRoute: onRoute && ((route) => onRoute('agent', route)),
    serverFactory: listener.serverFactory,
    trustProxy,
    sessions: services.sessions,
    approval: services.approval,
    enrollment: services.enrollment,
    tasks: deployments,
    reports: { agents: services.agents, reports: services.reports, live: broker.liveReports },
    downloads: {
      store: files,
      mayDownload: async (session) => {
        // A code's account token is on every printed copy of the code: it enrolls, it never downloads.
        if (await services.codes.isCodeAccount(session.userId))
          throw new ApiError(403, 'ERROR_RIGHT_MISSING', 'An enrollment code cannot download files; the enrolled device can');
      },
      // "downloaded, not confirmed" on the device's open tasks of that item.
      onDownloaded: (session, item) => deployments.downloaded(session, item.kind, item.id),
      limits: new DownloadLimits({
        maxConcurrent: sockets.agentDownloads,
        poolBytes: DEFAULT_DOWNLOAD_LIMITS.poolBytes,
        descriptors: descriptors.downloads,
      }),
    },
    deeplinkPage: {
      deeplinkBase: () => services.links.deeplinkBase(),
      appLinkScheme: () => appLinkSchemeFor(services.settings.get().agent_app, services.settings.get().app_link_scheme),
      invitationState: async (token) => {
        const row = /^[0-9a-f]{64}$/.test(token) ? await services.invitations.byToken(token) : undefined;
        return row ? { status: statusOf(row), expiresAt: row.expires_at } : null;
      },
    },
    listener: {
      requestTimeoutMs: sockets.requestTimeoutMs,
      maxConnections: sockets.agentConnections,
      maxConnectionsPerAddress: sockets.agentConnectionsPerAddress,
      descriptors: descriptors.agent,
    },
  });
  await agentApp.ready();
  return agentApp;
}

export type { FastifyInstance };

/** The name of the machine's user (the desktop app's owner); 'Owner' when the OS gives none. */
function machineUser(): string {
  try {
    return userInfo().username || 'Owner';
  } catch {
    return 'Owner';
  }
}

/** The Host name an `--admin-origin` URL is served under; the whole value when it is not a URL. */
function hostNameOfOrigin(origin: string): string {
  return URL.canParse(origin) ? new URL(origin).hostname.replace(/^\[|\]$/g, '') : origin;
}
