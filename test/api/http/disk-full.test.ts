/**
 * A full disk, for real: the data dir is a small tmpfs, filled up with a file until the kernel
 * says ENOSPC. Invitation creation and enrollment then answer 507 with a message saying the disk
 * is full; the server stays up, and once space is freed, both work again. Needs the right to mount
 * a tmpfs (root); skipped, and says so, where the machine does not allow it.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { mountSmallDisk } from '../../helpers/tmpfs.ts';

const disk = mountSmallDisk('mdm-diskfull-', 'disk-full test skipped: this machine does not allow mounting a tmpfs');
const { mountPoint, mounted } = disk;
let t: TestBackend;

beforeAll(async () => {
  if (!mounted) return;
  t = await startTestBackend({ dataDir: join(mountPoint, 'data') });
});

afterAll(async () => {
  await t?.stop();
  disk.remove();
});

describe.skipIf(!mounted)('a full disk', () => {
  it(
    'invitations and enrollment answer 507 saying the disk is full, the server stays up, and both work again once space is freed',
    { timeout: 60_000 },
    async () => {
      const before = await t.admin('POST', '/invitations', { email: 'before@example.com', send_email: false });
      expect(before.status).toBe(201);

      disk.fill();
      // SQLite reuses the space its write-ahead log already holds: invitations go on being created
      // until the log must grow. Each attempt is all or nothing, and the first refusal is a 507.
      let refusal: { status: number; body: any } | undefined;
      for (let i = 0; i < 500 && !refusal; i++) {
        const attempt = await t.admin('POST', '/invitations/bulk', {
          invitations: Array.from({ length: 50 }, (_, j) => ({ email: `full-${i}-${j}@example.com` })),
          send_email: false,
        });
        if (attempt.status !== 201) refusal = attempt;
      }
      expect(refusal?.status).toBe(507);
      expect(refusal?.body).toEqual({ error: 'ERROR_INSUFFICIENT_STORAGE', message: expect.stringMatching(/disk is full/) });
      const single = await t.admin('POST', '/invitations', { email: 'full@example.com', send_email: false });
      expect(single.status).toBe(507);
      expect(single.body.message).toMatch(/disk is full/);

      // Enrollment: the session or the agent cannot be saved; the device is told why, in the spec's shape.
      const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${before.body.user_token}`);
      if (init.status === 200) {
        const { created } = await enrollByHand(t.apiUrl, { ...before.body, email: 'before@example.com' });
        expect(created.status).toBe(507);
        expect(created.body).toEqual(['ERROR_INSUFFICIENT_STORAGE', expect.stringMatching(/disk is full/)]);
      } else {
        expect(init.status).toBe(507);
        expect(init.body).toEqual(['ERROR_INSUFFICIENT_STORAGE', expect.stringMatching(/disk is full/)]);
      }

      // An email cannot be queued or written to the outbox either: refused or failed, never a crash.
      const resend = await t.admin('POST', `/invitations/${before.body.id}/resend`);
      expect([202, 200, 507]).toContain(resend.status);
      await new Promise((resolve) => setTimeout(resolve, 500));

      // Still up, reads still served.
      expect((await t.admin('GET', '/status')).status).toBe(200);
      expect((await t.admin('GET', `/invitations/${before.body.id}`)).body.status).toBe('pending');

      // Space freed: the same requests succeed, and the invitation was not burned by the failures.
      disk.free();
      const after = await t.admin('POST', '/invitations', { email: 'after@example.com', send_email: false });
      expect(after.status).toBe(201);
      const { created } = await enrollByHand(t.apiUrl, { ...before.body, email: 'before@example.com' });
      expect(created.status).toBe(201);
      expect((await t.admin('GET', '/status')).body.counts.enrolled).toBe(1);
    },
  );
});
