// Commands through the admin API and the CLI: what is published (retained where DESIGN.md says),
// the record's flags, the events, and the agent's replies.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { agentCall, enrollByHand } from '../../helpers/backend.ts';
import {
  agentRow,
  closeClients,
  connectAgent,
  enrollAgent,
  inbox,
  mosquittoLogin,
  nextEvent,
  ofAgent,
  refusalCode,
  run,
  type EnrolledAgent,
  useBrokerBackend,
  notFleetAnnouncement,
} from '../../helpers/mqtt.ts';

const CLI = fileURLToPath(new URL('../../../src-main/cli/main.ts', import.meta.url));

let t: TestBackend;

useBrokerBackend((backend) => {
  t = backend;
});

const command = (agent: { id: number }, name: string) => t.admin('POST', `/agents/${agent.id}/commands`, { command: name });

async function listening(agent: EnrolledAgent) {
  const online = nextEvent(t, ofAgent(agent.id, 'agent.online'));
  const client = await connectAgent(t, agent);
  const box = inbox(client);
  await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
  await online;
  return { client, box };
}

describe('commands through the admin API', () => {
  it('ping: {"query":"Ping"} not retained; the reply "!" is recorded', async () => {
    const agent = await enrollAgent(t);
    const { client, box } = await listening(agent);
    const sent = await command(agent, 'ping');
    expect(sent.status).toBe(202);
    expect(sent.body).toMatchObject({
      command: 'ping',
      topic: `${agent.topic}/Command/Ping`,
      payload: { query: 'Ping' },
      retained: false,
      online: true,
    });
    const message = await box.next((m) => m.topic.endsWith('/Command/Ping'));
    expect(JSON.parse(message.text)).toEqual({ query: 'Ping' });
    const reply = nextEvent(t, ofAgent(agent.id, 'agent.ping_reply'));
    await client.publishAsync(`${agent.topic}/Status/Ping`, '!', { qos: 1 });
    expect((await reply).message).toMatch(/answered the ping/);
    const events = (await t.admin('GET', `/agents/${agent.id}`)).body.events.map((e: { type: string }) => e.type);
    expect(events).toEqual(expect.arrayContaining(['agent.command', 'agent.ping_reply']));
  });

  it('lock, unlock, wipe: retained messages, and the flags of the record follow', async () => {
    const agent = await enrollAgent(t);
    const { box } = await listening(agent);
    expect((await command(agent, 'lock')).body).toMatchObject({ retained: true, payload: { lock: 'now' } });
    await box.next((m) => m.text === '{"lock":"now"}');
    expect((await agentRow(t, agent.id)).lock).toBe(1);
    expect((await command(agent, 'unlock')).body).toMatchObject({
      topic: `${agent.topic}/Command/Lock`,
      payload: { lock: 'unlock' },
    });
    await box.next((m) => m.text === '{"lock":"unlock"}');
    expect((await agentRow(t, agent.id)).lock).toBe(0);
    expect((await command(agent, 'wipe')).body).toMatchObject({
      topic: `${agent.topic}/Command/Wipe`,
      payload: { wipe: 'now' },
      retained: true,
    });
    await box.next((m) => m.topic.endsWith('/Command/Wipe'));
    expect((await agentRow(t, agent.id)).wipe).toBe(1);
    // Retained: a connection made later still gets the last Lock and the Wipe.
    const late = await connectAgent(t, agent, { clientId: `${agent.serial}-late` });
    const lateBox = inbox(late);
    await late.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
    const lock = await lateBox.next((m) => m.topic.endsWith('/Command/Lock'));
    expect(lock).toMatchObject({ text: '{"lock":"unlock"}', retain: true });
    await lateBox.next((m) => m.topic.endsWith('/Command/Wipe') && m.retain);
  });

  it('keeps a lock for an agent that is offline and delivers it when it connects', async () => {
    const agent = await enrollAgent(t);
    expect((await command(agent, 'lock')).body).toMatchObject({ online: false, retained: true });
    const { box } = await listening(agent);
    expect(await box.next((m) => m.topic.endsWith('/Command/Lock'))).toMatchObject({ text: '{"lock":"now"}', retain: true });
  });

  it('unenroll: unenrolling until the agent confirms, then unenrolled and disconnected', async () => {
    const agent = await enrollAgent(t);
    const { client, box } = await listening(agent);
    expect((await command(agent, 'unenroll')).body).toMatchObject({ payload: { unenroll: 'now' }, retained: true });
    expect((await agentRow(t, agent.id)).enroll_status).toBe('unenrolling');
    await box.next((m) => m.text === '{"unenroll":"now"}');
    const done = nextEvent(t, ofAgent(agent.id, 'agent.unenrolled'));
    const offline = nextEvent(t, ofAgent(agent.id, 'agent.offline'));
    await client.publishAsync(`${agent.topic}/Status/Unenroll`, '{"unenroll":"unenrolled"}', { qos: 1 });
    await done;
    await offline;
    expect(await agentRow(t, agent.id)).toMatchObject({ enroll_status: 'unenrolled', is_online: 0 });
    const refused = await command(agent, 'lock');
    expect(refused).toMatchObject({ status: 409, body: { error: 'ERROR_AGENT_UNENROLLED' } });
  });

  it('refuses a ping to an offline agent, unknown commands and unknown agents', async () => {
    const agent = await enrollAgent(t);
    expect(await command(agent, 'ping')).toMatchObject({ status: 409, body: { error: 'ERROR_AGENT_OFFLINE' } });
    expect(await command(agent, 'reboot')).toMatchObject({ status: 400, body: { error: 'ERROR_BAD_REQUEST' } });
    expect((await t.admin('POST', `/agents/${agent.id}/commands`, {})).status).toBe(400);
    expect((await t.admin('POST', `/agents/${agent.id}/commands`, { command: 'ping', extra: 1 })).status).toBe(400);
    expect(await command({ id: 999_999 }, 'lock')).toMatchObject({ status: 404 });
  });

  it('moving an agent to another fleet sends a retained Command/Subscribe', async () => {
    const agent = await enrollAgent(t);
    const { box } = await listening(agent);
    const fleet = (await t.admin('POST', '/fleets', { name: `Moved ${agent.serial}` })).body;
    const moved = await t.admin('PATCH', `/agents/${agent.id}`, { fleet_id: fleet.id });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({
      fleet_id: fleet.id,
      fleet: fleet.name,
      command: { command: 'subscribe', retained: true },
    });
    const message = await box.next((m) => m.topic === `${agent.topic}/Command/Subscribe` && !m.retain);
    expect(JSON.parse(message.text)).toEqual({ subscribe: [{ topic: `/1/fleet/${fleet.id}` }] });
    expect((await agentRow(t, agent.id)).fleet_id).toBe(fleet.id);
    // By name, back to the default fleet; the same fleet again changes nothing.
    expect((await t.admin('PATCH', `/agents/${agent.id}`, { fleet: 'Default fleet' })).body).toMatchObject({
      fleet: 'Default fleet',
    });
    expect((await t.admin('PATCH', `/agents/${agent.id}`, { fleet: 'Default fleet' })).body).toMatchObject({ command: null });
    expect(await t.admin('PATCH', `/agents/${agent.id}`, { fleet: 'No such fleet' })).toMatchObject({
      status: 400,
      body: { error: 'ERROR_UNKNOWN_FLEET' },
    });
    expect((await t.admin('PATCH', `/agents/${agent.id}`, {})).status).toBe(400);
    expect((await t.admin('PATCH', `/agents/${agent.id}`, { fleet_id: 999_999 })).status).toBe(404);
  });

  it('a device that enrolls again does not get the retained commands of its previous install', async () => {
    const agent = await enrollAgent(t);
    expect((await command(agent, 'unenroll')).status).toBe(202);
    expect((await command(agent, 'lock')).status).toBe(202);
    // Same serial, new invitation: the same agent comes back, enrolled, unlocked.
    const invited = await t.admin('POST', '/invitations', { email: `again-${agent.serial}@example.com`, send_email: false });
    const { session, created } = await enrollByHand(t.apiUrl, invited.body, { serial: agent.serial });
    expect(Number(created.body.id)).toBe(agent.id);
    const record = (await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${agent.id}?session_token=${session}`)).body;
    expect(record).toMatchObject({ enroll_status: 'enrolled', lock: 0 });
    const again = { ...agent, password: record.mqttpasswd };
    const { box } = await listening(again);
    expect((await command(again, 'ping')).status).toBe(202);
    await box.next((m) => m.topic.endsWith('/Command/Ping'));
    expect(box.messages.filter(notFleetAnnouncement).map((m) => m.topic)).toEqual([`${agent.topic}/Command/Ping`]);
  });
});

describe('a backend restart', () => {
  it('keeps the commands an offline agent has not received yet (lock, wipe, unenroll)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mdm-retained-'));
    try {
      const first = await startTestBackend({ dataDir });
      const agent = await enrollAgent(first);
      for (const name of ['lock', 'wipe', 'unenroll'])
        expect((await first.admin('POST', `/agents/${agent.id}/commands`, { command: name })).status).toBe(202);
      await first.stop();
      const second = await startTestBackend({ dataDir });
      try {
        const client = await connectAgent(second, agent);
        const box = inbox(client);
        await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
        for (const text of ['{"lock":"now"}', '{"wipe":"now"}', '{"unenroll":"now"}'])
          expect((await box.next((m) => m.text === text)).retain).toBe(true);
      } finally {
        await closeClients();
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('deleting an agent', () => {
  it('disconnects it, and its credentials stop working', async () => {
    const agent = await enrollAgent(t);
    const { client } = await listening(agent);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    expect((await t.admin('DELETE', `/agents/${agent.id}`)).status).toBe(204);
    await closed;
    expect(await refusalCode(t, agent)).toBe(4);
  });
});

describe('command round trips with mosquitto clients', () => {
  it('ping reaches mosquitto_sub; the reply from mosquitto_pub is recorded', async () => {
    const agent = await enrollAgent(t);
    let pinged = false;
    // stdbuf: mosquitto_sub's debug lines must arrive as they are written, to act on its SUBACK.
    const sub = [
      'mosquitto_sub',
      ...mosquittoLogin(t, agent),
      '-V',
      'mqttv31',
      '-i',
      agent.serial,
      '-t',
      `${agent.topic}/#`,
      '-v',
      '-R',
      '-C',
      '1',
      '-W',
      '20',
      '-d',
    ];
    const received = run('stdbuf', ['-oL', ...sub], {
      onStdout: (soFar) => {
        if (!pinged && soFar.includes('received SUBACK')) {
          pinged = true;
          void command(agent, 'ping');
        }
      },
    });
    const result = await received;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`${agent.topic}/Command/Ping {"query":"Ping"}`);
    const reply = nextEvent(t, ofAgent(agent.id, 'agent.ping_reply'));
    const published = await run('mosquitto_pub', [
      ...mosquittoLogin(t, agent),
      '-q',
      '1',
      '-t',
      `${agent.topic}/Status/Ping`,
      '-m',
      '!',
    ]);
    expect(published.code).toBe(0);
    await reply;
  });

  it('lock, wipe and unenroll reach mosquitto_sub (retained); its unenroll reply is recorded', async () => {
    const agent = await enrollAgent(t);
    for (const name of ['lock', 'wipe', 'unenroll']) expect((await command(agent, name)).status).toBe(202);
    const result = await run('mosquitto_sub', [
      ...mosquittoLogin(t, agent),
      '-t',
      `${agent.topic}/#`,
      '-v',
      '-C',
      '4',
      '-W',
      '20',
    ]);
    expect(result.stdout.trim().split('\n').sort()).toEqual([
      `${agent.topic}/Command/Lock {"lock":"now"}`,
      `${agent.topic}/Command/Subscribe {"subscribe":[{"topic":"/1/fleet/1"}]}`,
      `${agent.topic}/Command/Unenroll {"unenroll":"now"}`,
      `${agent.topic}/Command/Wipe {"wipe":"now"}`,
    ]);
    const unenrolled = nextEvent(t, ofAgent(agent.id, 'agent.unenrolled'));
    await run('mosquitto_pub', [
      ...mosquittoLogin(t, agent),
      '-q',
      '1',
      '-t',
      `${agent.topic}/Status/Unenroll`,
      '-m',
      '{"unenroll":"unenrolled"}',
    ]);
    await unenrolled;
    expect((await agentRow(t, agent.id)).enroll_status).toBe('unenrolled');
  });
});

describe('the CLI: mdm-console command', () => {
  const cli = (...args: string[]) =>
    run(process.execPath, [CLI, 'command', ...args, '--data-dir', t.dataDir], { timeoutMs: 30_000 });

  it('pings a device and prints its reply; --json gives the command and the reply', async () => {
    const agent = await enrollAgent(t);
    const { client, box } = await listening(agent);
    client.on('message', (topic) => {
      if (topic.endsWith('/Command/Ping')) void client.publishAsync(`${agent.topic}/Status/Ping`, '!', { qos: 1 });
    });
    const human = await cli(String(agent.id), 'ping');
    expect(human.stderr).toBe('');
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/ping sent to .*\nreply: .* answered the ping/);
    const json = await cli(String(agent.id), 'ping', '--json');
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(parsed.command).toMatchObject({ command: 'ping', topic: `${agent.topic}/Command/Ping`, retained: false });
    expect(parsed.reply).toMatchObject({ type: 'agent.ping_reply', agent_id: agent.id });
    expect(box.messages.filter((m) => m.topic.endsWith('/Command/Ping'))).toHaveLength(2);
  });

  it('locks, moves to a fleet with --fleet, and reports errors with exit codes', async () => {
    const agent = await enrollAgent(t);
    const fleet = (await t.admin('POST', '/fleets', { name: `CLI ${agent.serial}` })).body;
    const result = await cli(String(agent.id), 'lock', '--fleet', fleet.name, '--json');
    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout);
    expect(parsed.fleet).toMatchObject({ fleet: fleet.name, command: { command: 'subscribe' } });
    expect(parsed.command).toMatchObject({ command: 'lock', retained: true, online: false });
    expect(await agentRow(t, agent.id)).toMatchObject({ lock: 1, fleet_id: fleet.id });

    const offlinePing = await cli(String(agent.id), 'ping');
    expect(offlinePing.code).toBe(2);
    expect(offlinePing.stderr).toMatch(/offline/);
    expect((await cli(String(agent.id), 'reboot')).stderr).toMatch(/unknown command "reboot"/);
    expect((await cli('abc', 'ping')).code).toBe(2);
    expect((await cli(String(agent.id))).stderr).toMatch(/nothing to do/);
  });

  it('exits 1 when the device does not answer a ping in time', async () => {
    const agent = await enrollAgent(t);
    await listening(agent); // connected, but never answers
    const result = await cli(String(agent.id), 'ping', '--timeout', '0.5');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/no reply within 0.5 s/);
  });
});
