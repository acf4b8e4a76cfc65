import { homedir, hostname, networkInterfaces, platform } from 'node:os';
import { join } from 'node:path';
import type { ThrottleOptions } from './broker/auth-throttle.ts';
import type { BrokerMode } from './broker/port.ts';
import type { SecretProtector } from './mail/secrets.ts';
import { parseTrustProxy } from './trust-proxy.ts';
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from './sessions/sessions.ts';
import { isLoopback as isLoopbackHost } from '../../src-shared/contract/rules.ts';

/** Where everything lives unless told otherwise; the CLI and the desktop app share it. */
export function defaultDataDir(): string {
  if (process.env.MDM_CONSOLE_DATA_DIR) return process.env.MDM_CONSOLE_DATA_DIR;
  const home = homedir();
  const os = platform();
  if (os === 'darwin') return join(home, 'Library', 'Application Support', 'mdm-console');
  if (os === 'win32') return join(process.env.APPDATA ?? join(home, 'AppData', 'Roaming'), 'mdm-console');
  // Linux and every other Unix: the XDG base directory.
  return join(process.env.XDG_DATA_HOME ?? join(home, '.local', 'share'), 'mdm-console');
}

/** This machine's IPv4 addresses other than loopback, in interface order. */
export function lanAddresses(): string[] {
  const found: string[] = [];
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) found.push(address.address);
    }
  }
  return found;
}

/** The address phones use to reach us: the first LAN IPv4, or loopback when there is none. */
export function defaultPublicHost(): string {
  return lanAddresses()[0] ?? '127.0.0.1';
}

// The loopback rule is the contract's: the console warns by the same one.
export { isLoopbackHost };

export interface BackendOptions {
  dataDir: string;
  /**
   * postgres://USER:PASSWORD@HOST:PORT/DATABASE: the database on PostgreSQL instead of the data
   * dir's SQLite file (which then is not made). The data dir still holds server.json, the
   * certificates and the files. Env: MDM_CONSOLE_DATABASE_URL.
   */
  databaseUrl?: string;
  /**
   * This node's name among the nodes of one database (the node registry, cluster/nodes.ts): unique
   * among the running ones. Env MDM_CONSOLE_NODE_NAME; default: the host name.
   */
  nodeName: string;
  /**
   * Where stored files and packages live: a directory every node of one database mounts (NFS, say).
   * Default: DATA_DIR/files.
   */
  filesDir: string;
  /** Agent API + deeplink page; 0 = any free port. */
  port: number;
  /** Address the agent API listens on (LAN). */
  host: string;
  /** Admin API + console; bound to loopback by default. */
  adminPort: number;
  /** Address the admin listener binds to (`--admin-host`, $MDM_CONSOLE_ADMIN_HOST); 127.0.0.1 by default. */
  adminHost: string;
  /**
   * The origin a load balancer serves the console at (`--admin-origin https://admin.example`,
   * $MDM_CONSOLE_ADMIN_ORIGIN): the admin listener also answers to that Host name.
   */
  adminOrigin?: string;
  mqttPort: number;
  mqttTlsPort: number;
  /** PEM certificate and key for the MQTT TLS listener; default: one generated in DIR/mqtt-tls/. */
  mqttTlsCertFile?: string;
  mqttTlsKeyFile?: string;
  /** Host name or address put into deeplinks, links and agent records. */
  publicHost: string;
  /**
   * The port put into links, deeplinks, QR codes and agent records, when devices reach the agent
   * API on another port than the listener's (a balancer in front); absent: the agent listener's.
   */
  publicPort?: number | undefined;
  /**
   * Balancers whose X-Forwarded-For is believed on the agent and admin listeners (addresses and
   * CIDR ranges; trust-proxy.ts): `request.ip` is then the forwarded client. Env
   * MDM_CONSOLE_TRUST_PROXY applies when absent; empty: none (the socket's address, as always).
   */
  trustProxy: string[];
  /** Where agents' MQTT connections live: the embedded aedes broker (default) or an external one. */
  mqttBroker: BrokerMode;
  /** mqtt[s]://USER:PASSWORD@HOST:PORT[,HOST:PORT…]: the external broker and the backend's account on it. */
  mqttBrokerUrl?: string;
  /** The broker account's password, apart from the URL (serve: --mqtt-broker-password-file, MDM_CONSOLE_MQTT_BROKER_PASSWORD). */
  mqttBrokerPassword?: string;
  /** rabbitmq: the secret the nodes present to the auth endpoints (default: DIR/rabbitmq-auth-secret, made on first use). */
  mqttAuthSecret?: string;
  /** mqtt[s]://HOST:PORT agents are told, when they reach the external broker by another name. */
  mqttPublicUrl?: string;
  /** CA certificate (PEM) the backend trusts for an mqtts:// broker URL; default: the system's. */
  mqttBrokerCaFile?: string;
  /** rabbitmq: the HTTP auth backend's listener, reached by the brokers only (default 127.0.0.1:8083). */
  mqttAuthHost: string;
  mqttAuthPort: number;
  /** smtp(s)://user:pass@host:port; replaces the SMTP settings while running. Env: MDM_CONSOLE_SMTP_URL. */
  smtpUrl?: string;
  /** Sender of invitation emails ("Name <address>"). Env: MDM_CONSOLE_MAIL_FROM. */
  mailFrom?: string;
  /** Protects secrets at rest: the desktop shell passes the OS keychain (mail/secrets.ts keychainProtector); default, as headless: a 0600 file. */
  secretProtector?: SecretProtector;
  /**
   * PostgreSQL only: the cluster key that seals the secrets kept in the database (the SMTP
   * password), the same on every node: 32 random bytes in base64 (`openssl rand -base64 32`).
   * Env: MDM_CONSOLE_SECRET_KEY. Default: DATA_DIR/secret-key, made by the first node.
   */
  secretKey?: string;
  /** A file holding the cluster key (serve --secret-key-file); stronger than `secretKey`. */
  secretKeyFile?: string;
  /** Bounds on agent-API sessions (sessions/sessions.ts); env MDM_CONSOLE_SESSION_RATE_PER_ADDRESS sets perAddress (unknown tokens). */
  sessionLimits?: Partial<SessionLimits>;
  /** Slowing down of refused MQTT logins (broker/auth-throttle.ts). */
  mqttThrottle?: Partial<ThrottleOptions>;
}

export const DEFAULT_PORTS = { port: 8080, adminPort: 8081, mqttPort: 1883, mqttTlsPort: 8883, mqttAuthPort: 8083 } as const;

export function resolveOptions(partial: Partial<BackendOptions> = {}): BackendOptions {
  const dataDir = partial.dataDir ?? defaultDataDir();
  return {
    dataDir,
    databaseUrl: partial.databaseUrl ?? (process.env.MDM_CONSOLE_DATABASE_URL || undefined),
    nodeName: partial.nodeName ?? (process.env.MDM_CONSOLE_NODE_NAME || defaultNodeName()),
    filesDir: partial.filesDir ?? join(dataDir, 'files'),
    port: partial.port ?? DEFAULT_PORTS.port,
    host: partial.host ?? '0.0.0.0',
    adminPort: partial.adminPort ?? DEFAULT_PORTS.adminPort,
    adminHost: partial.adminHost ?? (process.env.MDM_CONSOLE_ADMIN_HOST || '127.0.0.1'),
    adminOrigin: partial.adminOrigin ?? (process.env.MDM_CONSOLE_ADMIN_ORIGIN || undefined),
    mqttPort: partial.mqttPort ?? DEFAULT_PORTS.mqttPort,
    mqttTlsPort: partial.mqttTlsPort ?? DEFAULT_PORTS.mqttTlsPort,
    mqttTlsCertFile: partial.mqttTlsCertFile,
    mqttTlsKeyFile: partial.mqttTlsKeyFile,
    publicHost: partial.publicHost ?? defaultPublicHost(),
    publicPort: partial.publicPort,
    trustProxy: partial.trustProxy ?? parseTrustProxy(process.env.MDM_CONSOLE_TRUST_PROXY ?? '', 'MDM_CONSOLE_TRUST_PROXY'),
    mqttBroker: partial.mqttBroker ?? 'embedded',
    mqttBrokerUrl: partial.mqttBrokerUrl,
    mqttBrokerPassword: partial.mqttBrokerPassword,
    mqttAuthSecret: partial.mqttAuthSecret,
    mqttPublicUrl: partial.mqttPublicUrl,
    mqttBrokerCaFile: partial.mqttBrokerCaFile,
    mqttAuthHost: partial.mqttAuthHost ?? '127.0.0.1',
    mqttAuthPort: partial.mqttAuthPort ?? DEFAULT_PORTS.mqttAuthPort,
    smtpUrl: partial.smtpUrl ?? (process.env.MDM_CONSOLE_SMTP_URL || undefined),
    mailFrom: partial.mailFrom ?? (process.env.MDM_CONSOLE_MAIL_FROM || undefined),
    secretProtector: partial.secretProtector,
    secretKey: partial.secretKey ?? (process.env.MDM_CONSOLE_SECRET_KEY || undefined),
    secretKeyFile: partial.secretKeyFile,
    sessionLimits: { ...addressRateFromEnv(), ...partial.sessionLimits },
    mqttThrottle: partial.mqttThrottle,
  };
}

/** A node's name: letters, digits, dots, dashes and underscores, starting with a letter or digit (a host name fits). */
export const NODE_NAME_PATTERN = /^[\p{L}\p{N}][\p{L}\p{N}._-]{0,99}$/u;

/** The host name, as a node name (its characters outside NODE_NAME_PATTERN become "-"); "node" when there is none. */
export function defaultNodeName(): string {
  let name = '';
  try {
    name = hostname();
  } catch {
    // no host name: the fallback below
  }
  const cleaned = name
    .replace(/[^\p{L}\p{N}._-]/gu, '-')
    .replace(/^[._-]+/, '')
    .slice(0, 100);
  return cleaned || 'node';
}

/** Formats a host for a URL (brackets around IPv6). */
export function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/**
 * MDM_CONSOLE_SESSION_RATE_PER_ADDRESS=N: initSession with an unknown user token per client address
 * and minute (burst N), 0 for none. Valid tokens are never limited per address.
 */
function addressRateFromEnv(): Partial<SessionLimits> {
  const raw = process.env.MDM_CONSOLE_SESSION_RATE_PER_ADDRESS;
  if (raw === undefined || raw.trim() === '') return {};
  const perMinute = Number(raw);
  if (!Number.isInteger(perMinute) || perMinute < 0) {
    throw new Error(
      `MDM_CONSOLE_SESSION_RATE_PER_ADDRESS must be a whole number of unknown tokens a minute (0 = no limit), not "${raw}"`,
    );
  }
  return { perAddress: { burst: perMinute || DEFAULT_SESSION_LIMITS.perAddress.burst, perMinute } };
}
