import { describe, expect, it } from 'vitest';
import { emailDomainAllowed, statusOfCode } from '../../../src-main/backend/codes/codes.ts';

describe('enrollment code rules', () => {
  const base = { revoked_at: null, expires_at: null, max_uses: null, uses: 0 };
  const now = Date.parse('2026-01-10T00:00:00Z');

  it('derives the status: revoked before expired before used up', () => {
    expect(statusOfCode(base, now)).toBe('active');
    expect(statusOfCode({ ...base, max_uses: 3, uses: 2 }, now)).toBe('active');
    expect(statusOfCode({ ...base, max_uses: 3, uses: 3 }, now)).toBe('used_up');
    expect(statusOfCode({ ...base, expires_at: '2026-01-09T23:59:59Z', max_uses: 3, uses: 3 }, now)).toBe('expired');
    expect(statusOfCode({ ...base, expires_at: '2026-01-10T00:00:00Z' }, now)).toBe('expired');
    expect(statusOfCode({ ...base, expires_at: '2026-01-10T00:00:01Z' }, now)).toBe('active');
    expect(statusOfCode({ ...base, revoked_at: '2026-01-01T00:00:00Z', expires_at: '2026-01-02T00:00:00Z' }, now)).toBe(
      'revoked',
    );
  });

  it('matches email domains exactly, case-insensitively; no domains allows any address', () => {
    expect(emailDomainAllowed('a@example.com', [])).toBe(true);
    expect(emailDomainAllowed('a@Example.COM', ['example.com'])).toBe(true);
    expect(emailDomainAllowed('a@sub.example.com', ['example.com'])).toBe(false);
    expect(emailDomainAllowed('a@badexample.com', ['example.com'])).toBe(false);
    expect(emailDomainAllowed('"a@example.com"@evil.test', ['example.com'])).toBe(false);
    expect(emailDomainAllowed('a@example.org', ['example.com', 'example.org'])).toBe(true);
  });
});
