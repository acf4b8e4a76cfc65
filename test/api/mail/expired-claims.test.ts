// A delivery left 'sending' because the worker's final write failed (the database refused it) is
// sent again once its claim expires, on SQLite too, with nothing else queued: the worker looks for
// expired claims on its own timer, not only when mail is queued or at start. Real SQLite file, real
// outbox; the failure is a trigger that makes the database refuse the write, then goes away.
import { afterEach, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/smtp.ts';

const CLAIM_TTL_MS = 400;
let t: TestBackend | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe('the mail worker and expired claims', () => {
  it('a delivery whose final write failed is picked up when its claim expires, with nothing queued since', async () => {
    t = await startTestBackend({ mailTiming: { claimTtlMs: CLAIM_TTL_MS } });
    const sql = t.sql;
    // The database refuses to record how any send ended (as a full disk or a lost connection would).
    await sql.exec(`CREATE TRIGGER refuse_outcome BEFORE UPDATE OF state ON mail_deliveries
      WHEN NEW.state IN ('sent', 'outbox', 'failed')
      BEGIN SELECT RAISE(ABORT, 'the test refuses the final write'); END`);
    const { status, body } = await t.admin('POST', '/invitations', { email: 'late@example.com', firstname: 'Late' });
    expect(status).toBe(201);
    const id = body.id as number;
    // The send happened (the .eml is written) but its outcome was not: the row stays 'sending',
    // its claim no longer renewed.
    const stuck = () =>
      sql.get<{ state: string; attempts: number; claimed_until: string | null }>(
        `SELECT state, attempts, claimed_until FROM mail_deliveries WHERE invitation_id = ?`,
        [id],
      );
    await eventually(async () => (await stuck())?.attempts === 1, 20_000, 'the first attempt');
    await eventually(
      async () => {
        const row = await stuck();
        return row?.state === 'sending' && row.claimed_until !== null && Date.parse(row.claimed_until) < Date.now();
      },
      20_000,
      'the claim expired with the row still sending',
    );
    // The database takes writes again; nothing is queued from now on.
    await sql.exec(`DROP TRIGGER refuse_outcome`);
    const done = await eventually(
      async () => {
        const { body: invitation } = await t!.admin('GET', `/invitations/${id}`);
        return invitation.delivery?.state === 'outbox' ? invitation : null;
      },
      20 * CLAIM_TTL_MS + 10_000,
      'the delivery taken again and written to the outbox',
    );
    expect(done.delivery).toMatchObject({ state: 'outbox', attempts: 2 });
  }, 60_000);
});
