import { describe, expect, it } from 'vitest';
import { DeeplinkError, decodeDeeplink, encodeDeeplinkData } from '../../../src-main/device/deeplink.ts';
import type { DeeplinkFields } from '../../../src-main/device/deeplink.ts';

const full: DeeplinkFields = {
  backendUrl: 'https://mdm.example.org/api',
  userToken: 'a'.repeat(40),
  invitationToken: '0123456789abcdef'.repeat(4),
  helpdeskName: 'ACME IT',
  helpdeskPhone: '+33 1 23 45 67 89',
  helpdeskWebsite: 'https://help.example.org',
  helpdeskEmail: 'help@example.org',
};

const minimal = { backendUrl: 'http://192.168.1.20:8080/api', userToken: 'usertok', invitationToken: 'invtok' };

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const toBase64Url = (base64: string): string => base64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
/** Fields whose base64 contains '+', '/' and padding, to exercise URL mangling. */
function dataWithPlusAndSlash(): { fields: DeeplinkFields; data: string } {
  const fields = { ...full, helpdeskName: 'Help ~~~???>>>' };
  const data = encodeDeeplinkData(fields);
  expect(data).toMatch(/\+.*\/|\/.*\+/);
  expect(data).toMatch(/=$/);
  return { fields, data };
}

describe('deeplink round trips', () => {
  it('decodes all seven fields', () => {
    expect(decodeDeeplink(encodeDeeplinkData(full))).toEqual({ ...full, format: 'csv' });
  });

  it('keeps empty optional fields empty', () => {
    const data = encodeDeeplinkData(minimal);
    expect(Buffer.from(data, 'base64').toString()).toBe('http://192.168.1.20:8080/api;usertok;invtok;;;;');
    expect(decodeDeeplink(data)).toEqual({
      ...minimal,
      helpdeskName: '',
      helpdeskPhone: '',
      helpdeskWebsite: '',
      helpdeskEmail: '',
      format: 'csv',
    });
  });

  it('quotes fields that contain ; or " and reads them back', () => {
    const fields = { ...full, helpdeskName: 'Support; "Level 2"', helpdeskWebsite: '"quoted"', helpdeskPhone: ';' };
    const text = Buffer.from(encodeDeeplinkData(fields), 'base64').toString();
    expect(text).toContain('"Support; ""Level 2"""');
    expect(decodeDeeplink(encodeDeeplinkData(fields))).toEqual({ ...fields, format: 'csv' });
  });

  it('keeps unicode intact', () => {
    const fields = { ...full, helpdeskName: 'Société Générale — 技术支持 🛠', helpdeskEmail: 'aide@exemple.fr' };
    expect(decodeDeeplink(encodeDeeplinkData(fields))).toEqual({ ...fields, format: 'csv' });
  });

  it('round-trips backslashes, including one at the end of a field', () => {
    const fields = { ...full, helpdeskName: 'C:\\support\\', helpdeskPhone: 'a\\;b' };
    expect(decodeDeeplink(encodeDeeplinkData(fields))).toEqual({ ...fields, format: 'csv' });
  });

  it('reads an unquoted field ending in a backslash as CSV, not legacy', () => {
    const text = `${full.backendUrl};${full.userToken};${full.invitationToken};Desk\\;;;`;
    expect(decodeDeeplink(b64(text))).toMatchObject({ helpdeskName: 'Desk\\', helpdeskEmail: '', format: 'csv' });
  });

  it('accepts the reference agent legacy \\; separators', () => {
    const text = [full.backendUrl, full.userToken, full.invitationToken, 'Desk; with semicolon', '', 'https://h', ''].join('\\;');
    expect(decodeDeeplink(b64(text))).toEqual({
      ...full,
      helpdeskName: 'Desk; with semicolon',
      helpdeskPhone: '',
      helpdeskWebsite: 'https://h',
      helpdeskEmail: '',
      format: 'legacy',
    });
  });

  it('accepts legacy data with only the three required fields', () => {
    const text = `${minimal.backendUrl}\\;${minimal.userToken}\\;${minimal.invitationToken}`;
    expect(decodeDeeplink(b64(text))).toMatchObject({ ...minimal, helpdeskName: '', format: 'legacy' });
  });

  it('accepts base64url and missing padding', () => {
    const { fields, data } = dataWithPlusAndSlash();
    expect(decodeDeeplink(toBase64Url(data))).toEqual({ ...fields, format: 'csv' });
    expect(decodeDeeplink(data.replace(/=+$/, ''))).toEqual({ ...fields, format: 'csv' });
  });

  it("restores a '+' that a query string turned into a space", () => {
    const { fields, data } = dataWithPlusAndSlash();
    // Unencoded '+' in the query: URLSearchParams reads it as a space.
    expect(decodeDeeplink(`https://links.example.org/deeplink/?data=${data}`)).toEqual({ ...fields, format: 'csv' });
    // Already turned into spaces before reaching us.
    expect(decodeDeeplink(data.replace(/\+/g, ' '))).toEqual({ ...fields, format: 'csv' });
  });

  it('decodes the full page URL with percent-encoded data', () => {
    const { fields, data } = dataWithPlusAndSlash();
    const url = `https://links.example.org/deeplink/?data=${encodeURIComponent(data)}`;
    expect(url).toContain('%2B');
    expect(decodeDeeplink(url)).toEqual({ ...fields, format: 'csv' });
    expect(decodeDeeplink(`https://links.example.org/deeplink?lang=fr&data=${encodeURIComponent(data)}#top`)).toEqual({
      ...fields,
      format: 'csv',
    });
  });

  it('decodes an app link', () => {
    const { fields, data } = dataWithPlusAndSlash();
    expect(decodeDeeplink(`mdmagent://register?data=${encodeURIComponent(data)}`)).toEqual({ ...fields, format: 'csv' });
  });

  it('decodes bare data, percent-encoded bare data and a data= query', () => {
    const { fields, data } = dataWithPlusAndSlash();
    expect(decodeDeeplink(data)).toEqual({ ...fields, format: 'csv' });
    expect(decodeDeeplink(`  ${encodeURIComponent(data)}\n`)).toEqual({ ...fields, format: 'csv' });
    expect(decodeDeeplink(`data=${encodeURIComponent(data)}`)).toEqual({ ...fields, format: 'csv' });
  });

  it('accepts line-wrapped base64', () => {
    const data = encodeDeeplinkData(full);
    const wrapped = data.replace(/(.{20})/g, '$1\n');
    expect(decodeDeeplink(wrapped)).toEqual({ ...full, format: 'csv' });
  });
});

describe('deeplink errors', () => {
  const fails = (input: string, message: RegExp): void => {
    let caught: unknown;
    try {
      decodeDeeplink(input);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(DeeplinkError);
    expect((caught as Error).message).toMatch(message);
  };

  it('rejects empty input and a URL without data', () => {
    fails('', /empty/);
    fails('   ', /empty/);
    fails('https://links.example.org/deeplink/', /no \?data= parameter/);
    fails('https://links.example.org/deeplink/?lang=fr', /no data parameter/);
    fails('https://links.example.org/deeplink/?data=', /empty/);
  });

  it('rejects text that is not base64', () => {
    fails('not*base64!', /not base64.*"\*"/);
    fails('https://x/deeplink/?data=%%%', /not base64/);
    fails('abcde', /truncated/);
  });

  it('rejects bytes that are not text', () => {
    fails(Buffer.from([0xff, 0xfe, 0xfd, 0x00, 0x80]).toString('base64'), /UTF-8/);
    fails(Buffer.from([0x01, 0x02, 0x03, 0x41]).toString('base64'), /binary/);
  });

  it('requires the URL, user token and invitation token', () => {
    fails(b64('hello world'), /lacks the user API token, invitation token/);
    fails(b64('https://x/api;;inv;;;;'), /lacks the user API token\b/);
    fails(b64('https://x/api;tok;  ;;;;'), /lacks the invitation token/);
    fails(b64(';;;;;;'), /backend URL, user API token, invitation token/);
  });

  it('rejects a backend URL that is not http(s)', () => {
    fails(b64('not a url;tok;inv'), /backend URL is not a URL/);
    fails(b64('ftp://x;tok;inv'), /must be http\(s\)/);
  });

  it('rejects too many fields and broken quoting', () => {
    fails(b64('https://x;t;i;a;b;c;d;e'), /8 fields, expected at most 7/);
    fails(b64('https://x;t;i;"unterminated;;;'), /unterminated quote/);
    fails(b64('https://x;t;i;"a"b;;;'), /text after its closing quote/);
  });
});
