import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** What the TLS listener serves and what the console shows about it. */
export interface BrokerCertificate {
  cert: string;
  key: string;
  /** SHA-256 of the DER certificate, colon-separated upper-case hex (as browsers and openssl show it). */
  fingerprint256: string;
  source: 'generated' | 'provided';
  certFile: string;
  keyFile: string;
  subject: string;
  altNames: string[];
  validFrom: string;
  validTo: string;
  /** What happened at this start: a new certificate, a renewed one (same key), or none. */
  change: 'created' | 'renewed' | null;
}

export interface CertificateOptions {
  dataDir: string;
  /** An admin-provided certificate and key (PEM); both or neither. */
  certFile?: string | undefined;
  keyFile?: string | undefined;
  /** Names agents may use to reach the broker; loopback and this machine's name are always added. */
  hosts: string[];
  now?: Date;
}

/** Generated certificates live 825 days (the longest Apple clients accept) and are renewed 30 days before. */
export const GENERATED_DAYS = 825;
const RENEW_BEFORE_MS = 30 * 86_400_000;

export class CertificateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CertificateError';
  }
}

/**
 * The broker's TLS certificate: the admin's own when given, else the one generated on first start
 * in DIR/mqtt-tls/ (key 0600). A generated certificate close to expiry is renewed with the same key.
 */
export async function loadBrokerCertificate(options: CertificateOptions): Promise<BrokerCertificate> {
  if (options.certFile || options.keyFile) {
    if (!options.certFile || !options.keyFile)
      throw new CertificateError('An MQTT TLS certificate needs both its certificate and its key file');
    const cert = readPem(options.certFile, 'certificate');
    const key = readPem(options.keyFile, 'key');
    return describe(cert, key, 'provided', options.certFile, options.keyFile, null);
  }

  const dir = join(options.dataDir, 'mqtt-tls');
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  const now = options.now ?? new Date();
  let keyPem: string | undefined;
  if (existsSync(certFile) && existsSync(keyFile)) {
    const cert = readPem(certFile, 'certificate');
    const key = readPem(keyFile, 'key');
    const current = describe(cert, key, 'generated', certFile, keyFile, null);
    if (new Date(current.validTo).getTime() - now.getTime() > RENEW_BEFORE_MS) return current;
    keyPem = key;
  }

  const hosts = ['localhost', '127.0.0.1', '::1', hostname(), ...options.hosts];
  const { generateSelfSigned } = await import('./tls-generate.ts');
  const generated = await generateSelfSigned({ commonName: options.hosts[0] ?? hostname(), hosts, days: GENERATED_DAYS, keyPem });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(keyFile, generated.key, { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  writeFileSync(certFile, generated.cert, { mode: 0o644 });
  return describe(generated.cert, generated.key, 'generated', certFile, keyFile, keyPem ? 'renewed' : 'created');
}

function readPem(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new CertificateError(`Cannot read the MQTT TLS ${what} ${file}: ${(error as Error).message}`);
  }
}

function describe(
  cert: string,
  key: string,
  source: BrokerCertificate['source'],
  certFile: string,
  keyFile: string,
  change: BrokerCertificate['change'],
): BrokerCertificate {
  let parsed: X509Certificate;
  try {
    parsed = new X509Certificate(cert);
  } catch (error) {
    throw new CertificateError(`${certFile} is not a PEM certificate: ${(error as Error).message}`);
  }
  let matches: boolean;
  try {
    matches = parsed.checkPrivateKey(createPrivateKey(key));
  } catch (error) {
    throw new CertificateError(`${keyFile} is not a PEM private key: ${(error as Error).message}`);
  }
  if (!matches) throw new CertificateError(`${keyFile} is not the private key of ${certFile}`);
  return {
    cert,
    key,
    fingerprint256: parsed.fingerprint256,
    source,
    certFile,
    keyFile,
    subject: parsed.subject.replace(/\n/g, ', '),
    altNames: (parsed.subjectAltName ?? '').split(', ').filter(Boolean),
    validFrom: new Date(parsed.validFrom).toISOString(),
    validTo: new Date(parsed.validTo).toISOString(),
    change,
  };
}
