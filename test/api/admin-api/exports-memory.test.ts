// The devices export of 100,000 devices (issue 25, items 3 and 6): memory held flat while it
// streams (asserted as a bound), and streamed for real: a device enrolled after the first bytes
// arrived is in the file, so the last page was read after the download began. Real HTTP and SQLite.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { parseCsv } from '../../helpers/csv.ts';
import { seedDevices } from '../../helpers/seed-devices.ts';

const COUNT = 100_000;
let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend();
  await seedDevices(t.dataDir, { count: COUNT, fleets: ['North', 'South'], prefix: 'BIG' });
}, 300_000);
afterAll(async () => {
  await t?.stop();
});

describe('exporting 100,000 devices', () => {
  it('streams them page by page: the heap grows far less than the file, and rows written after the first bytes are in it', async () => {
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    let bytes = 0;
    let lines = 0;
    let late = false;
    let tail = '';
    const response = await fetch(`${t.backend.info.admin_url}/api/agents/export?format=csv`, {
      headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
    });
    expect(response.status).toBe(200);
    for await (const chunk of response.body!) {
      if (!late) {
        // The first bytes are here: a device enrolls now (its id is the highest, so on the last page).
        await seedDevices(t.dataDir, { count: 1, prefix: 'LATE' });
        late = true;
      }
      bytes += chunk.length;
      for (const byte of chunk) if (byte === 10) lines++;
      tail = (tail + Buffer.from(chunk).toString('utf8')).slice(-2000);
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }
    // The header, every seeded device, and the one enrolled while the download ran, last.
    expect(lines).toBe(COUNT + 2);
    const last = parseCsv(tail).at(-1)!;
    expect(last[1]).toBe('LATE000000');
    expect(bytes).toBeGreaterThan(20 * 1024 * 1024);
    // Held whole, the export would weigh twice its size as a string, and far more as 100,000 rows
    // of objects: the heap of the server and this client together grew less than the file's size.
    expect(peak - before).toBeLessThan(bytes);
  }, 300_000);
});
