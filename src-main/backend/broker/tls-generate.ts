// Self-signed X.509 generation for the broker's TLS listener. Loaded lazily (first start or
// renewal only): @peculiar/x509 2.x needs the reflect-metadata polyfill, imported first.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPrivateKey, createPublicKey, KeyObject, randomBytes, webcrypto } from 'node:crypto';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
import { isIP } from 'node:net';

const RSA = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
} as const;

export interface GeneratedCertificate {
  cert: string;
  key: string;
}

/**
 * A server certificate for `hosts` (DNS names and IP addresses in subjectAltName), signed by its
 * own key. RSA 2048 + SHA-256 because every MQTT client in the field speaks it. With `keyPem`
 * the existing key is kept, so a renewal keeps the public key the agents may have pinned.
 */
export async function generateSelfSigned(options: {
  commonName: string;
  hosts: string[];
  days: number;
  keyPem?: string;
}): Promise<GeneratedCertificate> {
  const subtle = webcrypto.subtle;
  let keys: CryptoKeyPair;
  if (options.keyPem) {
    const privateKey = createPrivateKey(options.keyPem);
    keys = {
      privateKey: privateKey.toCryptoKey(RSA, true, ['sign']) as CryptoKey,
      publicKey: createPublicKey(privateKey).toCryptoKey(RSA, true, ['verify']) as CryptoKey,
    };
  } else {
    keys = (await subtle.generateKey(RSA, true, ['sign', 'verify'])) as CryptoKeyPair;
  }
  const names: { type: 'dns' | 'ip'; value: string }[] = [];
  for (const host of new Set(options.hosts.map((h) => h.replace(/^\[|\]$/g, '')).filter(Boolean))) {
    names.push({ type: isIP(host) ? 'ip' : 'dns', value: host });
  }
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f; // positive INTEGER
  const notBefore = new Date(Date.now() - 5 * 60_000); // tolerate clients whose clock is a little behind
  const notAfter = new Date(Date.now() + options.days * 86_400_000);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString('hex'),
    name: `CN=${options.commonName.replace(/[,+="<>#;\\]/g, '_')}, O=MDM Console`,
    notBefore,
    notAfter,
    keys,
    signingAlgorithm: RSA,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const key = options.keyPem ?? (KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }) as string);
  return { cert: certificate.toString('pem'), key };
}
