/**
 * A full disk on the broker's side, for real (a small tmpfs filled until ENOSPC). Every MQTT login,
 * refusal, message and disconnect writes to SQLite; on a full disk those writes fail, and before,
 * the first MQTT login after the disk filled up ended the whole server (the SQLITE_FULL escaped
 * aedes' authenticate callback). Now a login that cannot be recorded is refused with CONNACK 3
 * (server unavailable, the device retries), traffic that cannot be recorded is dropped, and the
 * server stays up. Needs the right to mount a tmpfs (root); skipped, and says so, elsewhere.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { mountSmallDisk } from '../../helpers/tmpfs.ts';
import { closeClients, connectAgent, enrollAgent, eventually, readRecord, refusalCode } from '../../helpers/mqtt.ts';

const disk = mountSmallDisk('mdm-diskfull-mqtt-', 'broker disk-full test skipped: this machine does not allow mounting a tmpfs');
const { mountPoint, mounted } = disk;
let t: TestBackend;

beforeAll(async () => {
  if (!mounted) return;
  t = await startTestBackend({ dataDir: join(mountPoint, 'data') });
});

afterAll(async () => {
  await closeClients();
  await t?.stop();
  disk.remove();
});

describe.skipIf(!mounted)('the broker on a full disk', () => {
  it(
    'refuses logins it cannot record with CONNACK 3, drops traffic it cannot record, stays up, and lets devices in once space is freed',
    { timeout: 60_000 },
    async () => {
      const idle = await enrollAgent(t);
      const busy = await enrollAgent(t);
      const connected = await connectAgent(t, busy);

      disk.fill();
      // SQLite first fills the space its write-ahead log already holds; a 507 says the log is full.
      let full = false;
      for (let i = 0; i < 500 && !full; i++) {
        const attempt = await t.admin('POST', '/invitations/bulk', {
          invitations: Array.from({ length: 50 }, (_, j) => ({ email: `mqtt-full-${i}-${j}@example.com` })),
          send_email: false,
        });
        full = attempt.status === 507;
      }
      expect(full).toBe(true);

      // A correct login cannot be recorded as online: refused as "server unavailable", not a crash.
      expect(await refusalCode(t, idle)).toBe(3);
      // A wrong password: refused either way (its refusal cannot be logged either).
      expect([3, 4]).toContain(await refusalCode(t, { serial: idle.serial, password: 'wrong' }));
      // A connected device's traffic and its disconnection cannot be recorded: dropped.
      await connected.publishAsync(`${busy.topic}/Status/Ping`, '!');
      await connected.publishAsync(`${busy.topic}/Status/Online`, '{"online":true}');
      await connected.publishAsync('/elsewhere/not/allowed', 'x');
      await connected.endAsync();
      await new Promise((resolve) => setTimeout(resolve, 300));

      expect((await t.admin('GET', '/status')).status).toBe(200);

      disk.free();
      // Its password was never rotated by the failures: the same login now gets in, and is online.
      const client = await connectAgent(t, idle);
      await eventually(async () => (await t.admin('GET', `/agents/${idle.id}`)).body.is_online === true);
      client.end(true);
      // And the device that was connected throughout can come back too.
      const again = await readRecord(t, busy.session, busy.id);
      (await connectAgent(t, { serial: busy.serial, password: again.password })).end(true);
    },
  );
});
