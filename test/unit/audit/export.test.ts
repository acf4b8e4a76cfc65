// The audit export's CSV (RFC 4180 quoting, CSV injection), on the one exporter every list uses, and the one redaction rule.
import { describe, expect, it } from 'vitest';
import { AUDIT_EXPORT } from '../../../src-main/backend/exports/columns.ts';
import { csvCell, exportChunks } from '../../../src-main/backend/exports/format.ts';
import { changedFields, isSecretField, redactFields } from '../../../src-main/backend/audit/redact.ts';
import type { AuditRow } from '../../../src-main/backend/audit/repository.ts';

async function collect(chunks: AsyncIterable<string>): Promise<string[]> {
  const all: string[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return all;
}

async function* pagesOf<T>(...pages: T[][]): AsyncGenerator<T[]> {
  for (const page of pages) yield await Promise.resolve(page);
}

describe('csvCell', () => {
  it('quotes commas, quotes and line breaks, doubling quotes', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a, b')).toBe('"a, b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('cr\rlf')).toBe('"cr\rlf"');
    expect(csvCell(null)).toBe('');
    expect(csvCell(42)).toBe('42');
    expect(csvCell({ a: { before: 1, after: 'x,y' } })).toBe('"{""a"":{""before"":1,""after"":""x,y""}}"');
  });

  it('prefixes a text starting with = + - @ tab or CR with an apostrophe (no formula runs in a spreadsheet)', () => {
    expect(csvCell('=HYPERLINK("http://evil","x")')).toBe(`"'=HYPERLINK(""http://evil"",""x"")"`);
    expect(csvCell('+1+2')).toBe("'+1+2");
    expect(csvCell('-2+3')).toBe("'-2+3");
    expect(csvCell('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvCell('\tx')).toBe("'\tx");
    expect(csvCell('a=b')).toBe('a=b');
    expect(csvCell(-1)).toBe('-1');
  });

  it('writes a header and one line per entry; JSON lines one object per line', async () => {
    const row: AuditRow = {
      id: 7,
      at: '2026-05-01T09:00:00.000Z',
      account_id: 1,
      actor: 'Ana, "the owner"',
      token_id: null,
      token_name: null,
      role: 'owner',
      address: '127.0.0.1',
      action: 'fleet.renamed',
      target_kind: 'fleet',
      target_id: 3,
      target_name: '=cmd',
      message: 'Fleet "A" renamed\nto "B"',
      changes: { name: { before: 'A', after: 'B' } },
    };
    const csv = await collect(exportChunks(pagesOf([row]), 'csv', AUDIT_EXPORT));
    expect(csv[0]).toBe(
      'id,at,actor,account_id,token_name,role,address,action,target_kind,target_id,target_name,message,changes\r\n',
    );
    expect(csv[1]).toBe(
      `7,2026-05-01T09:00:00.000Z,"Ana, ""the owner""",1,,owner,127.0.0.1,fleet.renamed,fleet,3,'=cmd,"Fleet ""A"" renamed\nto ""B""","{""name"":{""before"":""A"",""after"":""B""}}"\r\n`,
    );
    // One chunk per page: two pages, three entries, each a line of its own.
    const chunks = await collect(exportChunks(pagesOf([row, { ...row, id: 8 }], [{ ...row, id: 9 }]), 'jsonl', AUDIT_EXPORT));
    expect(chunks).toHaveLength(2);
    const jsonl = chunks.join('').split(/(?<=\n)/);
    expect(jsonl.map((line) => JSON.parse(line) as AuditRow)).toEqual([row, { ...row, id: 8 }, { ...row, id: 9 }]);
    expect(jsonl.every((line) => line.endsWith('\n') && !line.slice(0, -1).includes('\n'))).toBe(true);
  });
});

describe('the redaction rule', () => {
  it('knows secret fields by the last word of their name, or TOTP and recovery codes anywhere', () => {
    for (const name of [
      'password',
      'smtp_password',
      'admin_token',
      'totp_secret',
      'api_key',
      'token_hash',
      'credential',
      'recovery_codes',
      'totpPendingSecret',
      'smtpPass',
    ])
      expect(isSecretField(name), name).toBe(true);
    for (const name of ['token_id', 'token_name', 'keys', 'name', 'role', 'password_changed_at', 'helpdesk_email'])
      expect(isSecretField(name), name).toBe(false);
  });

  it('redacts values, nested fields and URL passwords; a changed secret is known to have changed, never to what', () => {
    expect(redactFields({ smtp_password: 'hunter2', nested: { api_token: 'x', ok: 1 }, url: 'smtp://u:pw@host:25' })).toEqual({
      smtp_password: '[redacted]',
      nested: { api_token: '[redacted]', ok: 1 },
      url: 'smtp://u:[redacted]@host:25',
    });
    expect(changedFields({ smtp_password: null, smtp_host: 'a' }, { smtp_password: 'new', smtp_host: 'a' })).toEqual({
      smtp_password: { before: null, after: '[redacted]' },
    });
    expect(changedFields({ role: 'operator' }, { role: 'operator' })).toBeNull();
    expect(changedFields(null, { name: 'Sales' })).toEqual({ name: { before: null, after: 'Sales' } });
  });
});
