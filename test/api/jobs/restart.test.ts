// A bulk job the server was running when it stopped is marked interrupted at the next start (its
// devices' results say how far it went), never left "running" for ever.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startTestBackend } from '../../helpers/backend.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'mdm-jobs-restart-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

it('a job left running by a stopped server is interrupted at the next start', async () => {
  const first = await startTestBackend({ dataDir });
  first.db
    .prepare(
      `INSERT INTO jobs (id, action, state, selection, description, total, fleet_ids, created_at)
       VALUES (41, 'lock', 'running', '{"filter":{}}', 'every device', 3, '[1]', ?)`,
    )
    .run(new Date().toISOString());
  await first.stop();
  const again = await startTestBackend({ dataDir });
  try {
    const job = await again.admin('GET', '/jobs/41');
    expect(job.status).toBe(200);
    expect(job.body).toMatchObject({
      state: 'interrupted',
      error: 'The server stopped while it ran',
      finished_at: expect.any(String),
    });
  } finally {
    await again.stop();
  }
});
