import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_DELAYS_MS, isTransientSmtpError, nextRetryAt } from '../../../src-main/backend/mail/retry-policy.ts';

describe('mail retry policy', () => {
  it('retries 4xx replies, time-outs and connection errors; never a 5xx or a configuration error', () => {
    expect(isTransientSmtpError({ code: 'EENVELOPE', responseCode: 451 })).toBe(true);
    expect(isTransientSmtpError({ code: 'EAUTH', responseCode: 454 })).toBe(true);
    expect(isTransientSmtpError({ code: 'ETIMEDOUT', message: 'Greeting never received' })).toBe(true);
    expect(isTransientSmtpError({ code: 'ESOCKET', message: 'connect ECONNREFUSED 127.0.0.1:25' })).toBe(true);
    expect(isTransientSmtpError({ code: 'ECONNECTION', message: 'Connection closed unexpectedly' })).toBe(true);
    expect(isTransientSmtpError({ code: 'EENVELOPE', responseCode: 550 })).toBe(false);
    expect(isTransientSmtpError({ code: 'EAUTH', responseCode: 535 })).toBe(false);
    expect(isTransientSmtpError({ code: 'ESOCKET', message: 'self-signed certificate' })).toBe(false);
    expect(isTransientSmtpError({ code: 'ETLS' })).toBe(false);
    expect(isTransientSmtpError(new Error('template'))).toBe(false);
  });

  it('the first retry comes within 2 minutes, and the retries are bounded', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const first = nextRetryAt(1, now, { delaysMs: DEFAULT_RETRY_DELAYS_MS });
    expect(first!.getTime() - now.getTime()).toBeGreaterThan(0);
    expect(first!.getTime() - now.getTime()).toBeLessThanOrEqual(120_000);
    expect(nextRetryAt(DEFAULT_RETRY_DELAYS_MS.length + 1, now, { delaysMs: DEFAULT_RETRY_DELAYS_MS })).toBeNull();
    // Never scheduled past the invitation's expiry.
    expect(nextRetryAt(1, now, { delaysMs: [3_600_000] }, '2026-01-01T00:30:00Z')).toBeNull();
  });
});
