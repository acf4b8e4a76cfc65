import { hash, verify, type Algorithm } from '@node-rs/argon2';

/** Algorithm.Argon2id (a const enum in the typings: its value is written here). */
const ARGON2ID = 2 as Algorithm;

/**
 * Passwords are hashed with Argon2id (@node-rs/argon2: the Rust argon2 crate as an N-API binary
 * shipped in per-platform npm packages, no install script), at OWASP's minimum cost (19 MiB, two
 * passes, one lane). Hashing runs on libuv's thread pool: a flood of sign-ins never stalls the
 * event loop that serves agents.
 */
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

/** False (never a throw) for a wrong password or a hash that is not one of ours. */
export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

/** Verified against when the email is unknown, so the answer takes as long either way. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword('decoy password, never an account’s');
  return decoy;
}
