// MQTT login throttling per (login, address) (issue 11, item 9): a device that keeps failing slows
// only its own login from its own address; a correct password waits at most the first step.
// Wrong attempts with Debian's mosquitto_pub, good ones with mqtt.js, on a broker whose first step
// is 2 s and whose delays double from the second failure on.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { closeClients, connectAgent, enrollAgent, mosquittoLogin, nextEvent, run } from '../../helpers/mqtt.ts';

let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend({
    mqttThrottle: { freeFailures: 1, freeFailuresPerAddress: 1000, baseDelayMs: 2_000, maxDelayMs: 120_000 },
  });
});
afterEach(async () => {
  await closeClients();
});
afterAll(async () => {
  await t.stop();
});

/** A wrong password from 127.0.0.1 with mosquitto_pub: refused (exit code not 0) once its answer comes. */
async function failLogin(serial: string): Promise<void> {
  const result = await run(
    'mosquitto_pub',
    [...mosquittoLogin(t, { serial, password: 'wrong-password' }), '-t', 'x', '-m', 'x'],
    { timeoutMs: 30_000 },
  );
  expect(result.code).not.toBe(0);
  expect(result.stderr).toMatch(/not authori[sz]ed|bad user name or password/i);
}

describe('after repeated wrong passwords for one login from one address', () => {
  it('another login from the same address (a NAT) is not slowed, and the right password waits at most the first step', async () => {
    const bad = await enrollAgent(t);
    const good = await enrollAgent(t);
    const slowed = nextEvent(t, (e) => e.type === 'mqtt.login_refused' && e.message.includes('slowed down'));
    // 3 failures: answered after 0, 2 and 4 s; the next attempt for this login and address would wait 8 s.
    for (let i = 0; i < 3; i++) await failLogin(bad.serial);
    expect((await slowed).message).toContain(`further attempts for this login from 127.0.0.1 are slowed down`);

    // The same address, another login: no delay at all (connectTimeout 6 s < the 8 s a shared throttle would impose).
    const goodClient = await connectAgent(t, good, { connectTimeout: 6_000 });
    expect(goodClient.connected).toBe(true);
    // The throttled login itself, with its right password: the first step (2 s), not 8 s.
    const badClient = await connectAgent(t, bad, { connectTimeout: 6_000 });
    expect(badClient.connected).toBe(true);
  });
});
