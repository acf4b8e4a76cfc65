// The reference Flyve agents' dialect over real HTTP, MQTT and SQLite: an invitation made in
// `flyve` mode, the simulator speaking as release rc.7 (reports over HTTP) and rc.6 (over MQTT),
// the new routes' refusals, and the spec's names answering unchanged beside the Flyve ones.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportingOf } from '../../../src-main/device/agent.ts';
import { runAgentCommand } from '../../../src-main/device/cli.ts';
import { dialectOf, type ReportTransport } from '../../../src-main/device/dialect.ts';
import { downloadAndVerify } from '../../../src-main/device/download.ts';
import { enrollDevice, mqttCredentialsOf } from '../../../src-main/device/enroll.ts';
import { startMqttAgent, type MqttAgentEvent } from '../../../src-main/device/mqtt-agent.ts';
import { agentCall, enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { agentRow, eventually, nextEvent, ofAgent } from '../../helpers/mqtt.ts';

let t: TestBackend;
let counter = 0;
let fileId: number;
const fileBytes = Buffer.from('Flyve agents download this file through PluginFlyvemdmFile.\n'.repeat(50));

beforeAll(async () => {
  t = await startTestBackend();
  const uploaded = await fetch(`${t.backend.info.admin_url}/api/files?name=manual.txt`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body: fileBytes,
  });
  fileId = ((await uploaded.json()) as { id: number }).id;
});
afterAll(async () => {
  await t.stop();
});

async function invite() {
  counter += 1;
  const email = `flyve${counter}@example.com`;
  const { status, body } = await t.admin('POST', '/invitations', { email, send_email: false });
  expect(status).toBe(201);
  return { ...body, email } as {
    email: string;
    deeplink: string;
    deeplink_data: string;
    app_link: string;
    user_token: string;
    invitation_token: string;
  };
}

describe('the agent_app setting', () => {
  it('makes codes in the reference encoding with flyve://register, and refuses a ";" the agents would split on', async () => {
    expect((await t.admin('GET', '/settings')).body.agent_app).toBe('spec');
    const spec = await invite();
    expect(Buffer.from(spec.deeplink_data, 'base64').toString()).not.toContain('\\;');

    expect((await t.admin('PATCH', '/settings', { helpdesk_name: 'IT; 2nd floor' })).status).toBe(200);
    const refused = await t.admin('PATCH', '/settings', { agent_app: 'flyve' });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/helpdesk_name cannot contain ";"/);
    expect(
      (
        await t.admin('PATCH', '/settings', {
          agent_app: 'flyve',
          helpdesk_name: 'IT, 2nd floor',
          helpdesk_website: 'https://help.example.com/a\\b',
        })
      ).status,
    ).toBe(200);
    expect((await t.admin('PATCH', '/settings', { helpdesk_phone: '+33 1;2' })).status).toBe(400);
    expect((await t.admin('PATCH', '/settings', { agent_app: 'other' })).status).toBe(400);

    const flyve = await invite();
    const text = Buffer.from(flyve.deeplink_data, 'base64').toString();
    // base64(addcslashes(implode(';', fields), '\;')): the agents split on "\;".
    expect(text).toBe(
      `${t.apiUrl}\\;${flyve.user_token}\\;${flyve.invitation_token}\\;IT, 2nd floor\\;\\;https://help.example.com/a\\\\b\\;`,
    );
    expect(flyve.app_link).toBe(`flyve://register?data=${encodeURIComponent(flyve.deeplink_data)}`);
    expect(flyve.deeplink).toContain('/deeplink/?data=');
    // The deeplink page reads it, and gives phones the flyve:// button.
    const page = await fetch(flyve.deeplink, { headers: { 'user-agent': 'Mozilla/5.0 (Linux; Android 10)' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('flyve://register?data=');
    // The spec-encoded invitation made before still reads (both encodings are decoded whatever the setting).
    expect((await fetch(spec.deeplink)).status).toBe(200);
  });
});

describe('the agent API in both dialects', () => {
  it('serves GLPI keys, trailing slashes, Flyve names and SemVer versions, and stores the create extras', async () => {
    const invitation = await invite();
    const init = await agentCall(t.apiUrl, 'GET', `initSession/?user_token=${invitation.user_token}`);
    expect(init.status).toBe(200);
    const session = init.body.session_token as string;
    const header = { 'Session-Token': session };
    const full = await agentCall(t.apiUrl, 'GET', 'getFullSession/', { headers: header });
    expect(full.status).toBe(200);
    for (const body of [full.body, full.body.session]) {
      expect(body.plugin_flyvemdm_guest_profiles_id).toBe(body.plugin_mdm_guest_profiles_id);
      expect(body.glpiactiveprofile).toEqual(body.coreactiveprofile);
      expect(body.glpiID).toBe(body.coreID);
      expect(body.glpiactive_entity).toBe(body.coreactive_entity);
    }
    const guest = full.body.session.plugin_flyvemdm_guest_profiles_id;
    expect((await agentCall(t.apiUrl, 'POST', `changeActiveProfile/?profiles_id=${guest}`, { headers: header })).status).toBe(
      200,
    );

    const input = {
      _email: invitation.email,
      _invitation_token: invitation.invitation_token,
      _serial: 'FLYVESN0001',
      _uuid: crypto.randomUUID(),
      csr: '',
      firstname: 'Ada',
      lastname: 'Flyve',
      version: '2.0.0-rc.7+build.12',
      type: 'android',
      phone: '+33 6 12 34 56 78',
      has_system_permission: '0',
      inventory: Buffer.from(
        '<REQUEST><CONTENT><BIOS><SMODEL>Pixel 6</SMODEL><SMANUFACTURER>Google</SMANUFACTURER></BIOS><OPERATINGSYSTEM><NAME>Android</NAME><VERSION>13</VERSION></OPERATINGSYSTEM></CONTENT></REQUEST>',
      ).toString('base64'),
      notification_type: 'mqtt',
      notification_token: '',
    };
    for (const version of ['', '2.0.0-rc..7', 'v2', '2.0.0-', '2.0.0+']) {
      const bad = await agentCall(t.apiUrl, 'POST', 'PluginFlyvemdmAgent', {
        headers: header,
        body: { input: { ...input, version } },
      });
      expect([bad.status, bad.body], version).toEqual([400, ['ERROR_CORE_ADD', 'The agent version is missing or invalid']]);
    }
    const badInventory = await agentCall(t.apiUrl, 'POST', 'PluginFlyvemdmAgent/', {
      headers: header,
      body: { input: { ...input, inventory: Buffer.from('<REQUEST><CONTENT>').toString('base64') } },
    });
    expect(badInventory.status).toBe(400);
    expect(badInventory.body[1]).toMatch(/^The inventory could not be read/);

    const created = await agentCall(t.apiUrl, 'POST', 'PluginFlyvemdmAgent/', { headers: header, body: { input } });
    expect(created.status).toBe(201);
    const record = await agentCall(t.apiUrl, 'GET', `PluginFlyvemdmAgent/${created.body.id}/`, { headers: header });
    expect(record.status).toBe(200);
    expect(record.body.plugin_flyvemdm_fleets_id).toBe(record.body.plugin_mdm_fleets_id);
    expect(record.body.version).toBe('2.0.0-rc.7+build.12');
    const { phone, has_system_permission, notification_type, model, os_name, os_version } = await agentRow(
      t,
      Number(created.body.id),
    );
    expect({ phone, has_system_permission, notification_type, model, os_name, os_version }).toEqual({
      phone: '+33 6 12 34 56 78',
      has_system_permission: 0,
      notification_type: 'mqtt',
      model: 'Pixel 6',
      os_name: 'Android',
      os_version: '13',
    });
    const detail = await t.admin('GET', `/agents/${created.body.id}`);
    expect(detail.body.inventory).toMatchObject({ model: 'Pixel 6', manufacturer: 'Google', source: 'enrollment' });
    // The spec's names are untouched beside them.
    expect((await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body.id}?session_token=${session}`)).status).toBe(200);
    expect((await agentCall(t.apiUrl, 'GET', `PluginFlyvemdmNothing/1`, { headers: header })).status).toBe(404);
  });

  it('takes HTTP reports only from the agent itself, and refuses bad ones with a clear 400', async () => {
    const invitation = await invite();
    const enrollment = await enrollDevice({
      deeplink: invitation.deeplink,
      email: invitation.email,
      dialect: dialectOf('flyve', 'http'),
    });
    const id = Number(enrollment.agentId);
    const own = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${enrollment.apiToken}`)).body.session_token as string;
    const as = (session: string) => ({ 'Session-Token': session });
    const put = (session: string | null, agentId: number, input: unknown) =>
      agentCall(t.apiUrl, 'PUT', `PluginFlyvemdmAgent/${agentId}`, { headers: session ? as(session) : {}, body: { input } });

    // Another person's session (the enrolling user's too) and another agent's are refused.
    const other = await invite();
    const { session: person } = await enrollByHand(t.apiUrl, other);
    expect((await put(person, id, { _pong: '!' })).status).toBe(403);
    const enrollingSession = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${invitation.user_token}`)).body
      .session_token;
    expect((await put(enrollingSession, id, { is_online: true })).body[0]).toBe('ERROR_RIGHT_MISSING');
    expect((await put(null, id, { _pong: '!' })).status).toBe(401);
    expect((await put(own, 999_999, { _pong: '!' })).status).toBe(404);

    for (const [input, message] of [
      [{ lock: 1 }, /Unknown field\(s\) lock/],
      [{}, /Nothing to record/],
      [{ _pong: '?' }, /_pong must be "!"/],
      [{ _inventory: '***' }, /base64/],
      [{ _inventory: Buffer.from('not xml').toString('base64') }, /not XML/],
    ] as const) {
      const refused = await put(own, id, input);
      expect([refused.status, refused.body[0]], JSON.stringify(input)).toEqual([400, 'ERROR_BAD_REQUEST']);
      expect(refused.body[1]).toMatch(message);
    }
    expect((await put(own, id, { is_online: 'maybe' })).status).toBe(400);

    // Accepted reports, recorded as their MQTT counterparts are: is_online is a sign of life, and
    // presence follows the broker connections (none here: it stays offline, its last contact moves).
    const longAgo = '2000-01-01T00:00:00.000Z';
    await t.backend.services.brokerAgents.touch(id, longAgo);
    expect((await put(own, id, { is_online: true })).status).toBe(200);
    expect((await agentRow(t, id)).is_online).toBe(0);
    expect((await agentRow(t, id)).last_contact).not.toBeNull();
    expect((await agentRow(t, id)).last_contact).not.toBe(longAgo);
    expect(
      (await agentCall(t.apiUrl, 'PUT', `PluginMdmAgent/${id}/?session_token=${own}`, { body: { input: { is_online: false } } }))
        .status,
    ).toBe(200);
    const unsolicited = nextEvent(t, ofAgent(id, 'agent.status'));
    expect((await put(own, id, { _pong: '!' })).status).toBe(200);
    expect((await unsolicited).message).toBe(`${enrollment.serial} sent Status/Ping over HTTP`);

    const post = (session: string, input: unknown) =>
      agentCall(t.apiUrl, 'POST', 'PluginFlyvemdmGeolocation', { headers: as(session), body: { input } });
    expect((await post(own, { _agents_id: id, latitude: '91', longitude: '2', _datetime: 1700000000 })).status).toBe(400);
    expect((await post(own, { _agents_id: id, latitude: 'north', longitude: '2' })).status).toBe(400);
    expect((await post(own, { _agents_id: id, latitude: '48.85', longitude: '2.35', _datetime: 'yesterday' })).status).toBe(400);
    expect((await post(person, { _agents_id: id, latitude: '48.85', longitude: '2.35' })).status).toBe(403);
    expect((await post(own, { latitude: '48.85', longitude: '2.35' })).status).toBe(400);
    const fixed = await post(own, { _agents_id: id, latitude: '48.85', longitude: '2.35', _datetime: 1700000000 });
    expect(fixed.status).toBe(201);
    const off = await agentCall(t.apiUrl, 'POST', 'PluginMdmGeolocation', {
      headers: as(own),
      body: { input: { _agents_id: id, _gps: 'off', _datetime: 1700000100 } },
    });
    expect(off.status).toBe(201);
    const positions = (await t.admin('GET', `/agents/${id}`)).body.positions;
    expect(positions[0]).toMatchObject({
      latitude: null,
      longitude: null,
      source: 'http',
      located_at: '2023-11-14T22:15:00.000Z',
    });
    expect(positions[1]).toMatchObject({ latitude: 48.85, longitude: 2.35, located_at: '2023-11-14T22:13:20.000Z' });
    expect((await agentRow(t, id)).last_report).not.toBeNull();
  });
});

describe.each<ReportTransport>(['http', 'mqtt'])('a Flyve agent reporting over %s', (reports) => {
  it('enrolls with a flyve-mode invitation, connects, answers ping, lock, Inventory and Geolocate, reports presence and downloads', async () => {
    await t.admin('PATCH', '/settings', { agent_app: 'flyve' });
    const invitation = await invite();
    const log: string[] = [];
    const enrollment = await enrollDevice(
      { deeplink: invitation.app_link, email: invitation.email, dialect: dialectOf('flyve', reports) },
      (line) => log.push(line),
    );
    expect(log.join('\n')).toContain('POST PluginFlyvemdmAgent … ok');
    expect(log.join('\n')).toContain('changeActiveProfile');
    expect(enrollment.version).toBe(reports === 'http' ? '2.0.0-rc.7' : '2.0.0-rc.6');
    const id = Number(enrollment.agentId);
    // The inventory sent at enrollment fills the model and OS columns.
    const listed = (await t.admin('GET', '/agents')).body.items.find((item: { id: number }) => item.id === id);
    expect(listed.model).toBeTruthy();
    expect(listed.os_name).toBe('Android');

    const events: MqttAgentEvent[] = [];
    const online = nextEvent(t, ofAgent(id, 'agent.online'));
    const agent = await startMqttAgent({
      ...mqttCredentialsOf(enrollment),
      ...reportingOf(enrollment),
      protocolVersion: 3,
      onEvent: (e) => events.push(e),
    });
    try {
      await online;
      // FlyvemdmManifest/Status/Version: subscribed (no SUBACK 128) and its retained version message received.
      await eventually(() => events.find((e) => e.type === 'message' && e.topic === 'FlyvemdmManifest/Status/Version'));
      // rc.7 says is_online over HTTP on connect (already online through its connection: no new event, as for MQTT).
      if (reports === 'http')
        await eventually(() => agent.state.reports.some((r) => r.what === 'online' && r.ok && r.transport === 'http'));

      const pong = nextEvent(t, ofAgent(id, 'agent.ping_reply'));
      expect((await t.admin('POST', `/agents/${id}/commands`, { command: 'ping' })).status).toBe(202);
      const reply = await pong;
      expect(reply.message).toContain(reports === 'http' ? 'over HTTP' : 'answered the ping');
      expect(typeof (reply.data as { rtt_ms: number }).rtt_ms).toBe('number');

      await t.admin('POST', `/agents/${id}/commands`, { command: 'lock' });
      await eventually(() => agent.state.locked);
      if (reports === 'http') await eventually(() => agent.state.reports.filter((r) => r.what === 'pong' && r.ok).length === 2);

      const inventory = nextEvent(t, ofAgent(id, 'agent.inventory'));
      expect((await t.admin('POST', `/agents/${id}/commands`, { command: 'inventory' })).body.payload).toEqual({
        query: 'Inventory',
      });
      expect((await inventory).data).toMatchObject({ source: reports });
      const detail = (await t.admin('GET', `/agents/${id}`)).body;
      expect(detail.inventory).toMatchObject({ os_name: 'Android', source: reports });
      expect(detail.inventory.imei).toMatch(/^\d{15}$/);
      expect(detail.inventory.applications.length).toBeGreaterThan(0);
      expect(detail.inventory.battery.level).toMatch(/%$/);

      const position = nextEvent(t, ofAgent(id, 'agent.geolocation'));
      expect((await t.admin('POST', `/agents/${id}/commands`, { command: 'geolocate' })).body.payload).toEqual({
        query: 'Geolocate',
      });
      expect((await position).data).toMatchObject({ source: reports, gps_off: false });
      expect((await t.admin('GET', `/agents/${id}`)).body.positions[0].latitude).toEqual(expect.any(Number));

      const download = await downloadAndVerify({
        backendUrl: enrollment.backendUrl,
        apiToken: enrollment.apiToken,
        target: `file:${fileId}`,
        dialect: enrollment.dialect,
      });
      expect(download.ok).toBe(true);
      expect(download.size).toBe(fileBytes.length);

      const offline = nextEvent(t, ofAgent(id, 'agent.offline'));
      await agent.stop();
      await offline;
      expect((await agentRow(t, id)).is_online).toBe(0);
      expect(agent.state.reports.every((r) => r.ok && r.transport === reports)).toBe(true);
    } finally {
      await agent.stop();
      await t.admin('PATCH', '/settings', { agent_app: 'spec' });
    }
  });
});

describe('mdm-console agent --dialect flyve', () => {
  it('enrolls, connects, reports and downloads as a Flyve agent; refuses flags that do not go together', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const output = { stdout: (line: string) => out.push(line), stderr: (line: string) => err.push(line) };
    expect(await runAgentCommand(['--deeplink', 'x', '--email', 'a@b.c', '--reports', 'http'], output)).toBe(2);
    expect(err.join('\n')).toContain('--reports needs --dialect flyve');
    expect(await runAgentCommand(['--deeplink', 'x', '--email', 'a@b.c', '--dialect', 'glpi'], output)).toBe(2);
    expect(await runAgentCommand(['--deeplink', 'x', '--email', 'a@b.c', '--dialect', 'spec', '--reports', 'http'], output)).toBe(
      2,
    );

    const invitation = await invite();
    out.length = 0;
    const code = await runAgentCommand(
      [
        '--deeplink',
        invitation.deeplink,
        '--email',
        invitation.email,
        '--dialect',
        'flyve',
        '--reports',
        'mqtt',
        '--download',
        `file:${fileId}`,
        '--json',
      ],
      output,
    );
    const result = JSON.parse(out.join('\n'));
    expect(code, out.join('\n')).toBe(0);
    expect(result.enrollment.version).toBe('2.0.0-rc.6');
    expect(result.enrollment.agent.plugin_flyvemdm_fleets_id).toEqual(expect.any(Number));
    expect(result.downloads[0].ok).toBe(true);
    expect(result.mqtt_session.connected).toBe(true);
  });
});
