// The exports give the same bytes on either engine: the same devices seeded on SQLite and on
// PostgreSQL (a fixed clock and uuids), exported as CSV and as JSON lines over several keyset pages,
// come out identical. Guards PostgreSQL's streaming (its own page size, numbers and booleans parsed
// as SQLite gives them) against drifting from SQLite's file. Real HTTP, a real SQLite file and a
// real PostgreSQL database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';
import { seedDevices } from '../../helpers/seed-devices.ts';

// More than two pages on either engine.
const COUNT = 1_234;
const AT = Date.parse('2026-03-01T12:00:00.000Z');
let sqlite: TestBackend;
let postgres: TestBackend;
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase('exports_engines');
  // With MDM_TEST_ENGINE=postgres, `sqlite` runs on PostgreSQL too: the comparison still holds.
  [sqlite, postgres] = await Promise.all([startTestBackend(), startTestBackend({ databaseUrl: database.url })]);
  for (const t of [sqlite, postgres])
    await seedDevices(t.sql, { count: COUNT, fleets: ['North', 'South'], prefix: 'SAME', at: AT });
}, 120_000);
afterAll(async () => {
  await sqlite?.stop();
  await postgres?.stop();
  await database?.drop();
});

const download = async (t: TestBackend, format: string) => {
  const response = await fetch(`${t.backend.info.admin_url}/api/agents/export?format=${format}`, {
    headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
  });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
};

describe('the devices export on SQLite and on PostgreSQL', () => {
  it.each(['csv', 'jsonl'])('gives the same %s bytes', async (format) => {
    const [fromSqlite, fromPostgres] = [await download(sqlite, format), await download(postgres, format)];
    const lines = fromSqlite.toString('utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(COUNT + (format === 'csv' ? 1 : 0));
    expect(lines.at(-1)).toContain('SAME001233');
    expect(fromPostgres.equals(fromSqlite)).toBe(true);
  });
});
