import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/backend.ts';

// Facts checked against the real Flyve Android agent (release 2.0.0-rc.7 driven from a harness):
// its MQTT TLS trusts only the flyve.org certificate bundled in the app, so a record saying tls=1
// locks it out of our broker. The admin must hear it where warnings are shown.

let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t.stop();
});

const tlsWarnings = async () =>
  ((await t.admin('GET', '/status')).body.warnings as string[]).filter((warning) => warning.includes('MQTT TLS'));

describe('status warnings for the real Flyve agent', () => {
  it('warns when codes are for the Flyve agent and MQTT TLS is on, and only then', async () => {
    expect(await tlsWarnings()).toEqual([]);
    expect((await t.admin('PATCH', '/settings', { agent_app: 'flyve', mqtt_tls: false })).status).toBe(200);
    expect(await tlsWarnings()).toEqual([]);
    expect((await t.admin('PATCH', '/settings', { mqtt_tls: true })).status).toBe(200);
    const [warning] = await tlsWarnings();
    expect(warning).toMatch(/Flyve MDM agent.*flyve\.org certificate.*Turn MQTT TLS off/);
    expect((await t.admin('PATCH', '/settings', { agent_app: 'spec' })).status).toBe(200);
    expect(await tlsWarnings()).toEqual([]);
    await t.admin('PATCH', '/settings', { mqtt_tls: false });
  });
});
