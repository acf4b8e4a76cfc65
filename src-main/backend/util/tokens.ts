import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** `bytes` random bytes as lower-case hex. */
export function randomHex(bytes = 32): string {
  return randomBytes(bytes).toString('hex');
}

/** A random password of `length` characters from an unambiguous alphabet. */
export function randomPassword(length = 40): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[bytes[i]! % alphabet.length];
  return out;
}

/**
 * Hash for machine-drawn secrets (≥ 32 random characters, ~230 bits). A slow KDF buys nothing at
 * that entropy and would cap how fast agents can (re)connect, so a salted SHA-256 is used.
 */
export function hashSecret(secret: string): string {
  const salt = randomBytes(16).toString('hex');
  return `sha256$${salt}$${createHash('sha256').update(salt).update(secret).digest('hex')}`;
}

export function verifySecret(secret: string, stored: string | null | undefined): boolean {
  if (!stored) return false;
  const [scheme, salt, digest] = stored.split('$');
  if (scheme !== 'sha256' || !salt || !digest) return false;
  const actual = createHash('sha256').update(salt).update(secret).digest();
  const expected = Buffer.from(digest, 'hex');
  return expected.length === actual.length && timingSafeEqual(actual, expected);
}
