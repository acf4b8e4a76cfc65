import { describe, expect, it } from 'vitest';
import {
  canonicalBase64,
  decodeDeeplinkData,
  DeeplinkDataError,
  deeplinkPageUrl,
  encodeDeeplinkData,
  type DeeplinkFields,
} from '../../../src-main/backend/deeplink/codec.ts';

const fields = (over: Partial<DeeplinkFields> = {}): DeeplinkFields => ({
  backendUrl: 'http://192.168.1.20:8080/api',
  userToken: 'a'.repeat(40),
  invitationToken: 'b'.repeat(64),
  helpdeskName: 'IT Desk',
  helpdeskPhone: '+33 1 23 45 67 89',
  helpdeskWebsite: 'https://help.example.com',
  helpdeskEmail: 'help@example.com',
  ...over,
});

describe('deeplink data', () => {
  it.each([
    ['all fields', fields()],
    ['empty optional fields', fields({ helpdeskName: '', helpdeskPhone: '', helpdeskWebsite: '', helpdeskEmail: '' })],
    ['; and " inside fields', fields({ helpdeskName: 'Desk; "North" wing', helpdeskWebsite: 'https://x.example/?a=1;b=2' })],
    ['unicode', fields({ helpdeskName: 'Service informatique — Zoë 🛠', helpdeskPhone: '٠١٢٣' })],
    ['a field that is only a quote', fields({ helpdeskName: '"' })],
  ])('round-trips %s', (_name, value) => {
    expect(decodeDeeplinkData(encodeDeeplinkData(value))).toEqual(value);
  });

  it('joins plain fields with ; exactly as the spec shows', () => {
    const text = Buffer.from(encodeDeeplinkData(fields({ helpdeskEmail: '' })), 'base64').toString();
    expect(text).toBe(
      `http://192.168.1.20:8080/api;${'a'.repeat(40)};${'b'.repeat(64)};IT Desk;+33 1 23 45 67 89;https://help.example.com;`,
    );
  });

  it('reads the legacy \\; separators of the reference implementation', () => {
    const legacy = Buffer.from(['http://h/api', 'ut', 'it', 'Desk', '', 'https://w', 'e@x'].join('\\;')).toString('base64');
    expect(decodeDeeplinkData(legacy)).toEqual({
      backendUrl: 'http://h/api',
      userToken: 'ut',
      invitationToken: 'it',
      helpdeskName: 'Desk',
      helpdeskPhone: '',
      helpdeskWebsite: 'https://w',
      helpdeskEmail: 'e@x',
    });
  });

  it('reads base64url, missing padding and + turned into a space', () => {
    const value = fields({ helpdeskName: '>>>???~~~' });
    const standard = encodeDeeplinkData(value);
    expect(standard).toMatch(/[+/]/);
    const url = standard.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    expect(decodeDeeplinkData(url)).toEqual(value);
    expect(decodeDeeplinkData(standard.replace(/\+/g, ' '))).toEqual(value);
    expect(canonicalBase64(url)).toBe(standard);
  });

  it('survives the trip through a URL query', () => {
    const data = encodeDeeplinkData(fields({ helpdeskName: '>>>???' }));
    const url = new URL(deeplinkPageUrl('http://h:1/', data));
    expect(url.pathname).toBe('/deeplink/');
    expect(decodeDeeplinkData(url.searchParams.get('data'))).toEqual(fields({ helpdeskName: '>>>???' }));
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['not base64', '%%%'],
    ['impossible length', 'abcde'],
    ['not UTF-8', Buffer.from([0xff, 0xfe, 0xfd]).toString('base64')],
    ['too few fields', Buffer.from('http://h;tok').toString('base64')],
    ['too many fields', Buffer.from('a;b;c;d;e;f;g;h').toString('base64')],
    ['empty token', Buffer.from('http://h;;it;;;;').toString('base64')],
    ['unterminated quote', Buffer.from('http://h;ut;it;"desk;;;').toString('base64')],
  ])('refuses %s data clearly', (_name, data) => {
    expect(() => decodeDeeplinkData(data)).toThrow(DeeplinkDataError);
  });
});
