// Secrets in URLs (a webhook's `?token=`, an SMTP URL's password) never reach the audit trail.
import { describe, expect, it } from 'vitest';
import { changedFields, redactValue } from '../../../src-main/backend/audit/redact.ts';

describe('redactValue on URLs', () => {
  it('replaces the password and the values of query parameters named like secrets, and nothing else', () => {
    expect(redactValue('smtp://mailer:pw@smtp.example.com:587')).toBe('smtp://mailer:[redacted]@smtp.example.com:587');
    expect(redactValue('https://hooks.example.com/in?token=abc123&channel=ops&api_key=k9&x=1')).toBe(
      'https://hooks.example.com/in?token=[redacted]&channel=ops&api_key=[redacted]&x=1',
    );
    expect(redactValue('https://hooks.example.com/in?Access_Token=abc')).toBe(
      'https://hooks.example.com/in?Access_Token=[redacted]',
    );
    expect(redactValue('https://example.com/a?page=2&sort=name')).toBe('https://example.com/a?page=2&sort=name');
    // Not a URL: text is kept as it is.
    expect(redactValue('token=abc and more')).toBe('token=abc and more');
  });

  it('in a change, the URL before and after are both redacted', () => {
    expect(changedFields({ url: 'https://h.example/x?secret=one' }, { url: 'https://h.example/x?secret=two' })).toEqual({
      url: { before: 'https://h.example/x?secret=[redacted]', after: 'https://h.example/x?secret=[redacted]' },
    });
  });
});
