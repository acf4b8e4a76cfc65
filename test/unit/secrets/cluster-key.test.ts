// The cluster key's sealing (AES-256-GCM, node:crypto): a value opens only with the key it was
// sealed by, under the name it was sealed for, unchanged; the key check tells keys apart.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ClusterKey,
  ClusterKeyError,
  keyIdOf,
  parseClusterKey,
  SealedValueError,
} from '../../../src-main/backend/secrets/cluster-key.ts';

const raw = randomBytes(32);
const key = new ClusterKey(raw, 'test');

describe('the cluster key', () => {
  it('seals a value that only it opens, under its name, unchanged', () => {
    const sealed = key.seal('smtp_password', 'hunter2 é ✓');
    expect(sealed).not.toContain('hunter2');
    expect(key.open('smtp_password', sealed)).toBe('hunter2 é ✓');
    // A fresh IV each time: the same value never seals the same.
    expect(key.seal('smtp_password', 'hunter2 é ✓')).not.toBe(sealed);
    expect(keyIdOf(sealed)).toBe(key.id);
    expect(() => new ClusterKey(randomBytes(32), 'other').open('smtp_password', sealed)).toThrow(SealedValueError);
    expect(() => key.open('webhook_secret', sealed)).toThrow(SealedValueError);
    const parts = sealed.split('.');
    const data = Buffer.from(parts[4]!, 'base64');
    data[0]! ^= 1;
    parts[4] = data.toString('base64');
    expect(() => key.open('smtp_password', parts.join('.'))).toThrow(SealedValueError);
    expect(() => key.open('smtp_password', 'plain text')).toThrow(SealedValueError);
  });

  it('is read from base64 (openssl rand -base64 32) or hex, the same key either way; anything else is refused', () => {
    expect(parseClusterKey(`${raw.toString('base64')}\n`, 'env').id).toBe(key.id);
    expect(parseClusterKey(raw.toString('hex'), 'env').id).toBe(key.id);
    expect(parseClusterKey(raw.toString('base64url'), 'env').id).toBe(key.id);
    expect(new ClusterKey(randomBytes(32), 'x').id).not.toBe(key.id);
    for (const bad of ['', 'short', randomBytes(16).toString('base64'), randomBytes(48).toString('base64'), 'é'.repeat(44)])
      expect(() => parseClusterKey(bad, 'MDM_CONSOLE_SECRET_KEY')).toThrow(ClusterKeyError);
  });
});
