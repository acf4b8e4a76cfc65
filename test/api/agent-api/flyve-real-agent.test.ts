import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { enrollAgent } from '../../helpers/mqtt.ts';

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

describe('HTTP reports as the released agent 2.0.0-rc.7 sends them', () => {
  // ConnectionHTTP.sendHttpResponse: Accept application/octet-stream on a PUT/POST, ids as strings
  // (its cache keeps everything as text), and after a file task a bare word as the body.
  it('takes string ids and the octet-stream Accept header, and answers a bare-word body with a 400', async () => {
    const agent = await enrollAgent(t);
    const own = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${agent.record.api_token}`)).body
      .session_token as string;
    const send = async (method: string, path: string, body: string) => {
      const response = await fetch(`${t.apiUrl}/${path}`, {
        method,
        headers: { Accept: 'application/octet-stream', 'Content-Type': 'application/json', 'Session-Token': own },
        body,
      });
      return { status: response.status, body: (await response.json()) as unknown[] };
    };
    const agentPath = `PluginFlyvemdmAgent/${agent.id}`;
    expect((await send('PUT', agentPath, '{"input":{"_pong":"!"}}')).status).toBe(200);
    expect((await send('PUT', agentPath, '{"input":{"is_online":true}}')).status).toBe(200);
    const ids = { _agents_id: String(agent.id), computers_id: String(agent.record.computers_id) };
    const fixed = { input: { latitude: '48.8566', longitude: '2.3522', _datetime: 1700000000, ...ids } };
    expect((await send('POST', 'PluginFlyvemdmGeolocation', JSON.stringify(fixed))).status).toBe(201);
    const off = { input: { _datetime: 1700000100, _agents_id: String(agent.id), _gps: 'off' } };
    expect((await send('POST', 'PluginFlyvemdmGeolocation', JSON.stringify(off))).status).toBe(201);
    const positions = (await t.admin('GET', `/agents/${agent.id}`)).body.positions;
    expect(positions[0]).toMatchObject({ latitude: null, longitude: null });
    expect(positions[1]).toMatchObject({ latitude: 48.8566, longitude: 2.3522 });

    for (const word of ['done', 'failed', 'received']) {
      const refused = await send('PUT', agentPath, word);
      expect([refused.status, refused.body[0]], word).toEqual([400, 'ERROR_BAD_REQUEST']);
    }
  });
});
