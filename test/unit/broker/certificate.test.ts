// The broker's TLS certificate: generated once, reused, renewed before expiry with the same key.
import { X509Certificate, createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CertificateError, GENERATED_DAYS, loadBrokerCertificate } from '../../../src-main/backend/broker/tls-certificate.ts';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'mdm-cert-'));
});
afterEach(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

describe('loadBrokerCertificate', () => {
  it('generates a server certificate for the given hosts once, then reuses it', async () => {
    const first = await loadBrokerCertificate({ dataDir, hosts: ['192.0.2.10', 'mdm.local'] });
    expect(first).toMatchObject({ source: 'generated', change: 'created' });
    const cert = new X509Certificate(first.cert);
    expect(cert.subjectAltName).toContain('IP Address:192.0.2.10');
    expect(cert.subjectAltName).toContain('DNS:mdm.local');
    expect(cert.subjectAltName).toContain('DNS:localhost');
    expect(cert.ca).toBe(false);
    expect(first.fingerprint256).toBe(cert.fingerprint256);
    const days = (Date.parse(first.validTo) - Date.now()) / 86_400_000;
    expect(Math.round(days)).toBe(GENERATED_DAYS);

    const again = await loadBrokerCertificate({ dataDir, hosts: ['192.0.2.10'] });
    expect(again).toMatchObject({ change: null, fingerprint256: first.fingerprint256 });
  });

  it('renews a certificate close to its end with the same key', async () => {
    const first = await loadBrokerCertificate({ dataDir, hosts: [] });
    const later = new Date(Date.parse(first.validTo) - 10 * 86_400_000);
    const renewed = await loadBrokerCertificate({ dataDir, hosts: [], now: later });
    expect(renewed.change).toBe('renewed');
    expect(renewed.fingerprint256).not.toBe(first.fingerprint256);
    const publicKey = (pem: string) => createPublicKey(pem).export({ type: 'spki', format: 'der' }).toString('base64');
    expect(publicKey(renewed.cert)).toBe(publicKey(first.cert));
    expect(readFileSync(join(dataDir, 'mqtt-tls', 'cert.pem'), 'utf8')).toBe(renewed.cert);
  });

  it('checks a provided certificate and key', async () => {
    const own = await loadBrokerCertificate({ dataDir, hosts: [] });
    const certFile = join(dataDir, 'own.pem');
    writeFileSync(certFile, own.cert);
    await expect(loadBrokerCertificate({ dataDir, hosts: [], certFile, keyFile: own.keyFile })).resolves.toMatchObject({
      source: 'provided',
      change: null,
    });
    await expect(loadBrokerCertificate({ dataDir, hosts: [], certFile })).rejects.toBeInstanceOf(CertificateError);
    await expect(loadBrokerCertificate({ dataDir, hosts: [], certFile: own.keyFile, keyFile: own.keyFile })).rejects.toThrow(
      /not a PEM certificate/,
    );
    await expect(loadBrokerCertificate({ dataDir, hosts: [], certFile, keyFile: join(dataDir, 'missing.pem') })).rejects.toThrow(
      /Cannot read/,
    );
  });
});
