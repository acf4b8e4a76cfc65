// GET /api/audit/export (issue 22, item 4): the list's filters, every matching entry, CSV or JSON
// lines, streamed from a paged iterator. Real HTTP, a real backend and SQLite file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { parseCsv } from '../../helpers/csv.ts';

let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend({ ownerName: 'Ana Ruiz' });
});
afterAll(async () => {
  await t?.stop();
});

const exported = (query: string) =>
  fetch(`${t.backend.info.admin_url}/api/audit/export?${query}`, {
    headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
  });

describe('the audit export', () => {
  it('CSV: the filtered entries, quoted, formulas defused; JSON lines: the list’s entries', async () => {
    for (const name of ['=HYPERLINK("http://evil.example","x")', 'Sales, "West"', '-2+3', '@SUM(A1)', 'Plain']) {
      expect((await t.admin('POST', '/fleets', { name })).status).toBe(201);
    }
    await t.admin('PATCH', '/settings', { helpdesk_name: 'IT desk' });

    const csv = await exported('action=fleet.created&format=csv');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-\d{4}-\d{2}-\d{2}-\d{4}\.csv"$/);
    const [header, ...rows] = parseCsv(await csv.text());
    expect(header).toEqual([
      'id',
      'at',
      'actor',
      'account_id',
      'token_name',
      'role',
      'address',
      'action',
      'target_kind',
      'target_id',
      'target_name',
      'message',
      'changes',
    ]);
    const column = (name: string) => header!.indexOf(name);
    expect(rows.map((r) => r[column('target_name')])).toEqual([
      'Plain',
      "'@SUM(A1)",
      "'-2+3",
      'Sales, "West"',
      `'=HYPERLINK("http://evil.example","x")`,
    ]);
    expect(rows.every((r) => r[column('action')] === 'fleet.created' && r[column('actor')] === 'Ana Ruiz')).toBe(true);
    expect(JSON.parse(rows[0]![column('changes')]!)).toEqual({ name: { before: null, after: 'Plain' } });

    const jsonl = await exported('format=jsonl&action=settings.updated');
    expect(jsonl.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    const lines = (await jsonl.text()).trimEnd().split('\n');
    const list = (await t.admin('GET', '/audit?action=settings.updated')).body.items;
    expect(lines.map((line) => JSON.parse(line))).toEqual(list);
    expect(list[0].changes).toEqual({ helpdesk_name: { before: '', after: 'IT desk' } });

    // The other filters, and bad input: a 400, never a 500.
    expect((await (await exported('target_name=sales&format=jsonl')).text()).trimEnd().split('\n')).toHaveLength(1);
    const future = encodeURIComponent(new Date(Date.now() + 86_400_000).toISOString());
    expect(parseCsv(await (await exported(`since=${future}`)).text())).toHaveLength(1);
    expect((await exported('format=xml')).status).toBe(400);
    expect((await exported('since=yesterday')).status).toBe(400);
    expect((await exported('limit=5')).status).toBe(400);
  });

  it('streams every entry however many, page by page (memory stays within a bound)', async () => {
    // 120,000 entries written straight into the real table (the API would take minutes to make them).
    const n = 120_000;
    const at = new Date().toISOString();
    // One statement, both engines: a recursive count to n.
    await t.sql.run(
      `WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
       INSERT INTO audit_log (at, account_id, actor, token_id, token_name, role, address, action, target_kind, target_id, target_name, message, changes)
       SELECT ?, 1, 'Ana Ruiz', NULL, NULL, 'owner', '127.0.0.1', 'bulk.test', 'agent', i, 'device ' || i,
         substr('Bulk entry ' || i || ' ' || ?, 1, 300), ? FROM seq`,
      [n, at, 'x'.repeat(300), JSON.stringify({ locked: { before: false, after: true } })],
    );
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    let bytes = 0;
    let lines = 0;
    const response = await exported('action=bulk.test&format=csv');
    for await (const chunk of response.body!) {
      bytes += chunk.length;
      for (const byte of chunk) if (byte === 10) lines++;
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }
    expect(lines).toBe(n + 1);
    expect(bytes).toBeGreaterThan(40 * 1024 * 1024);
    // The whole export held at once would be its size again and more (as a string): the heap grew far less.
    expect(peak - before).toBeLessThan(bytes / 2);
  }, 120_000);
});

describe('who did each thing, in the histories', () => {
  it('a device’s and an invitation’s events name the admin or the API token (with its role); a device’s own do not', async () => {
    const invitation = (await t.admin('POST', '/invitations', { email: 'history@example.com', send_email: false })).body;
    const token = (await t.admin('POST', '/tokens', { name: 'ci-bot', role: 'admin' })).body.token as string;
    const revoked = await fetch(`${t.backend.info.admin_url}/api/invitations/${invitation.id}/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(revoked.status).toBe(200);
    const events = (await t.admin('GET', `/invitations/${invitation.id}`)).body.events as {
      type: string;
      actor: string | null;
    }[];
    expect(events.map((e) => [e.type, e.actor])).toEqual([
      ['invitation.revoked', 'token ci-bot (admin)'],
      ['invitation.created', 'token admin token (data dir) (owner)'],
    ]);
  });
});
