import { describe, expect, it } from 'vitest';
import { checkWhere, parseWhere, versionKey, WhereError, whereUsesTime } from '../../../src-shared/contract/where.ts';

const errorOf = (text: string): WhereError => {
  const result = checkWhere(text);
  if (result.ok) throw new Error(`"${text}" parsed`);
  return result.error;
};

describe('the --where language', () => {
  it('parses the example of the manual into an AND of normalised comparisons and text', () => {
    const node = parseWhere(
      'os<10 last_contact>7d fleet=Warehouse online=no status=enrolled compliance=failed app=com.example.scanner app_version<2.3 model~"Galaxy" "free text"',
    );
    expect(node.kind).toBe('and');
    if (node.kind !== 'and') return;
    expect(node.terms.map((t) => (t.kind === 'cmp' ? `${t.field}${t.op}` : t.kind))).toEqual([
      'os<',
      'last_contact>',
      'fleet=',
      'online=',
      'status=',
      'compliance=',
      'app=',
      'model~',
      'text',
    ]);
    expect(node.terms[1]).toMatchObject({ seconds: 7 * 86400 });
    expect(node.terms[3]).toMatchObject({ value: false });
    expect(node.terms[6]).toMatchObject({ value: 'com.example.scanner', versions: [{ op: '<', value: '2.3' }] });
    expect(node.terms[7]).toMatchObject({ value: 'Galaxy' });
    expect(node.terms[8]).toMatchObject({ kind: 'text', value: 'free text' });
  });

  it('OR binds looser than AND; parentheses group; AND may be spelt out; spaces around operators', () => {
    expect(parseWhere('os<10 OR model~Pixel type=android')).toMatchObject({
      kind: 'or',
      terms: [{ field: 'os' }, { kind: 'and', terms: [{ field: 'model' }, { field: 'type' }] }],
    });
    expect(parseWhere('(os < 10 OR os >= 13) AND online=yes')).toMatchObject({
      kind: 'and',
      terms: [{ kind: 'or' }, { field: 'online', value: true }],
    });
    expect(parseWhere('')).toEqual({ kind: 'and', terms: [] });
    expect(parseWhere('   ')).toEqual({ kind: 'and', terms: [] });
  });

  it('compares versions as versions: 9 < 10 < 10.1, 10.0 = 10', () => {
    const keys = ['10.1', '9', '10', '2.3.10', '2.3.9', '10.0.0'].map((v) => [v, versionKey(v)!] as const);
    const sorted = [...keys].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)).map(([v]) => v);
    expect(sorted).toEqual(['2.3.9', '2.3.10', '9', '10', '10.0.0', '10.1']);
    expect(versionKey('10.0')).toBe(versionKey('10'));
    expect(versionKey('8.1.0_r3')).toBe(versionKey('8.1'));
    expect(versionKey('iOS 17.2')).toBe(versionKey('17.2'));
    expect(versionKey('unknown')).toBeNull();
  });

  it('names the position and what was expected', () => {
    expect(errorOf('osv<10').message).toBe(
      'at column 1: unknown field "osv" (did you mean os?): expected one of fleet, type, model, os, last_contact, online, status, compliance, app, app_version, name, serial, email',
    );
    expect(errorOf('online=maybe').message).toBe('at column 8: online: expected yes or no, not "maybe"');
    expect(errorOf('os<ten').message).toBe('at column 4: os: expected an OS version like 10 or 10.1, not "ten"');
    expect(errorOf('os~10').message).toBe('at column 3: os takes = != < <= > >=, not ~');
    expect(errorOf('fleet=').message).toBe('at column 7: expected a fleet name or id after fleet=');
    expect(errorOf('last_contact>7 days').message).toBe(
      'at column 14: last_contact: expected a duration like 7d, 12h or 30m (or never), not "7"',
    );
    expect(errorOf('model~"Galaxy').message).toBe('at column 7: this quote is never closed: expected a closing "');
    expect(errorOf('(os<10 OR os>12').message).toBe('at column 16: expected ")" to close the "(" at column 1');
    expect(errorOf('os<10)').message).toBe('at column 6: unexpected ")" (no "(" to close)');
    expect(errorOf('os<10 OR').message).toBe('at column 9: expected a term after OR');
    expect(errorOf('OR os<10').message).toBe('at column 1: expected a term before OR');
    expect(errorOf('<10').message).toMatch(/^at column 1: expected a field before "<"/);
    expect(errorOf('app_version<2.3').message).toMatch(/^at column 1: app_version needs an app=PACKAGE term before it/);
    expect(errorOf('status=gone').position).toBe(7);
    expect(errorOf('compliance=ok').message).toBe('at column 12: compliance: expected done, pending, failed or none, not "ok"');
    expect(errorOf('x'.repeat(2001)).message).toMatch(/too long/);
  });

  it('accepts the synonyms an admin types and knows which expressions depend on the clock', () => {
    expect(parseWhere('status=pending')).toMatchObject({ value: 'pending_approval' });
    expect(parseWhere('compliance=failing')).toMatchObject({ value: 'failed' });
    expect(parseWhere('TYPE=Android')).toMatchObject({ field: 'type', value: 'android' });
    expect(parseWhere('last_contact=never')).toMatchObject({ seconds: null });
    expect(whereUsesTime(parseWhere('os<10 OR last_contact>2h'))).toBe(true);
    expect(whereUsesTime(parseWhere('os<10 model~x'))).toBe(false);
  });
});
